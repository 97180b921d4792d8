"""The sections of the speech stages: ``stt``, ``llm``, ``tts``, and ``testing`` (the scripted ones' knobs).

Each backend is given its own section. In a section a field drops its stage's
prefix (``settings.stt.model``; the backend's name is ``backend``); its alias
is the flat name that flags and YAML keys keep (``--stt_model``, ``--stt``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from speech_to_speech.settings.server import SECTION_CONFIG

LLMBackendName = str
# How the llama-cpp backend loads a GGUF (--llm_gguf_type): as the file is, or rewritten to a weight type.
GGUFWeightType = Literal["file", "q8_0", "q4_0", "f16"]


class STTSettings(BaseModel):
    """``stt``: the backend that transcribes a turn, and its model."""

    model_config = SECTION_CONFIG

    backend: str = Field("faster-whisper", alias="stt", description="STT backend.")
    model: str | None = Field(
        None, alias="stt_model", description="Hub id or local path; default: the packaged Whisper tiny.en."
    )
    language: str | None = Field(None, alias="stt_language", description="Force a language code (e.g. en).")
    language_check: str | None = Field(
        "whisper-base", alias="stt_language_check",
        description="A multilingual faster-whisper model (packaged name, hub id or folder) beside an English-only "
        "one: it tells which language a doubtful turn is in and transcribes turns in other languages "
        "(default: the packaged Whisper base, when installed; empty: English only).",
    )
    compute_type: str = Field("int8", alias="stt_compute_type", description="CTranslate2 compute type.")
    beam_size: int = Field(1, ge=1, alias="stt_beam_size", description="Whisper beam size.")
    threads: int = Field(
        1, ge=1, alias="stt_threads",
        description="CPU threads per faster-whisper transcription (two were slower than one on a "
        "2-core machine; more sessions use more units, not more threads).",
    )
    window_s: float = Field(
        10.0, ge=0.0, le=30.0, alias="stt_window_s",
        description="Encoder window (s) for English-only faster-whisper models; longer turns and doubtful "
        "results take the stock 30 s window (0 or 30: always the stock window).",
    )
    base_url: str | None = Field(None, alias="stt_base_url", description="OpenAI-compatible STT base URL.")
    api_key: str | None = Field(
        None, repr=False, alias="stt_api_key", description="STT API key (default OPENAI_API_KEY)."
    )
    supported_languages: list[str] | None = Field(
        None, alias="stt_supported_languages", description="Declared STT languages."
    )
    auto_language_supported: bool | None = Field(
        None, alias="stt_auto_language_supported", description="Declared STT auto."
    )
    # Read by the STT handler: whether it has time for an interim pass (the VAD asks for them, --interim_transcript_ms).
    interim_max_pass_ms: int = Field(
        200, ge=0, description="No interim passes while the STT's last pass took longer than this: on a CPU "
        "that slow, a pass running when the pause comes would delay the pause's own."
    )


class LLMSettings(BaseModel):
    """``llm``: the backend that writes the reply, its model, prompt, sampling, and when speech may start."""

    model_config = SECTION_CONFIG

    backend: LLMBackendName = Field("llama-cpp", alias="llm", description="LLM backend.")
    model: str | None = Field(
        None, alias="llm_model", description="Hub id, local path or GGUF file; default: packaged SmolLM2-135M."
    )
    base_url: str | None = Field(None, alias="llm_base_url", description="OpenAI-compatible LLM base URL.")
    api_key: str | None = Field(
        None, repr=False, alias="llm_api_key", description="LLM API key (default OPENAI_API_KEY)."
    )
    init_chat_prompt: str = Field(
        "You are a helpful and friendly voice assistant. Answer in one or two short sentences.",
        description="System prompt.",
    )
    chat_size: int | None = Field(
        None, ge=1, description="At most this many exchanges of the conversation in the LLM's context; by "
        "default the whole conversation up to the context's tokens (the session's truncation says how it is cut).")
    context_tokens: int | None = Field(
        None, ge=256, alias="llm_context_tokens",
        description="The LLM's context in tokens (prompt and answer); by default the backend's own "
        "(4096 for local models, 32768 for remote providers).")
    max_new_tokens: int = Field(128, ge=1, description="Token limit per response.")
    temperature: float = Field(0.0, ge=0.0, description="Sampling temperature (0 = greedy).")
    top_p: float = Field(
        1.0, gt=0.0, le=1.0, description="Sample only from the likeliest tokens holding this much probability "
        "(1 = all; used when temperature > 0)."
    )
    repetition_penalty: float = Field(
        1.0, ge=1.0, le=2.0, description="Penalty on tokens the reply already holds (1 = none; greedy decoding too)."
    )
    threads: int | None = Field(
        None, ge=1, alias="llm_threads",
        description="CPU threads per local LLM generation; default: half the usable CPUs (llama-cpp "
        "reads the prompt and decodes a reply's first words on one thread per physical core, and uses no more "
        "threads than other processes and a waiting user's work leave CPUs free)."
    )
    contexts: int | None = Field(
        None, ge=1, alias="llm_contexts",
        description="llama-cpp: contexts over the one model, each ~150 MB, so that concurrent "
        "sessions decode side by side instead of waiting for each other's whole reply; default: one per "
        "pipeline unit, at most 4."
    )
    compute_type: str = Field(
        "int8", alias="llm_compute_type", description="CTranslate2 compute type of the ctranslate2 LLM."
    )
    gguf_type: GGUFWeightType = Field(
        "q8_0", alias="llm_gguf_type",
        description="llama-cpp: load the GGUF rewritten once (into the model cache) with this weight "
        "type, whatever the model; 'file': as the file is. Q8_0 holds a 4-bit file's weights almost exactly "
        "and runs faster on CPUs than 4-bit types; for a large model it doubles the memory of a 4-bit file."
    )
    tool_call_threshold: float | None = Field(
        None, ge=0.0, le=1.0, alias="llm_tool_call_threshold",
        description="llama-cpp, with tools: a reply starts with a call exactly when the model gives starting one "
        "at least this probability, whether or not it is the likeliest first token (unset: when it is)."
    )
    tool_call_model: str | None = Field(
        None, alias="llm_tool_call_model",
        description="llama-cpp, with tools: a second GGUF model (a packaged model's name, a file or a folder) "
        "with the same tokenizer that writes the calls the main model starts; the main model still decides "
        "whether to call and says the answer (unset or empty: the main model writes its calls). A packaged "
        "model whose weights are not installed is left out with a warning."
    )
    responses_api_reasoning_effort: str | None = Field(None, description="Startup effort.")
    responses_api_disable_thinking: bool = Field(False, description="Send enable_thinking=false.")

    # Each word the first audio waits for costs ~45 ms of decoding on a 2-core CPU: with four, p50 536 ms
    # from the end of speech to the first audio (bench latency, AVX-512 Xeon), with three 481 ms.
    # Read by the LLM's output processor (and llama-cpp, which decodes those words first).
    first_chunk_words: int = Field(
        3, ge=0, description="Words that may start speech before the first punctuation (0: wait for it)."
    )


class TTSSettings(BaseModel):
    """``tts``: the backend that speaks the reply, its voice, and the viseme stage after it."""

    model_config = SECTION_CONFIG

    backend: str = Field("hibari", alias="tts", description="TTS backend.")
    model: str | None = Field(None, alias="tts_model", description="TTS model path or id.")
    voice: str | None = Field(None, alias="tts_voice", description="Default voice.")
    kokoro_voices: str | None = Field(
        None, description="Voices archive (.npz/.bin) for an ONNX Kokoro --tts_model; default: beside it."
    )
    speed: float = Field(1.0, gt=0.0, alias="tts_speed", description="Speaking rate.")
    hub_voices: bool = Field(
        False, alias="tts_hub_voices",
        description="Fetch voices the packages lack from the hub on first use (Kokoro's French, Spanish, "
        "Italian, Portuguese and Hindi voices; Piper's): needs a network (HF_ENDPOINT names another hub).",
    )
    base_url: str | None = Field(None, alias="tts_base_url", description="OpenAI-compatible TTS base URL.")
    api_key: str | None = Field(
        None, repr=False, alias="tts_api_key", description="TTS API key (default OPENAI_API_KEY)."
    )
    supported_languages: list[str] | None = Field(
        None, alias="tts_supported_languages", description="Declared TTS languages."
    )
    auto_language_supported: bool | None = Field(
        None, alias="tts_auto_language_supported", description="Declared TTS auto."
    )
    enable_visemes: bool = Field(
        False, description="Run the viseme stage after TTS: timed mouth shapes for sessions that opt in."
    )


class TestingSettings(BaseModel):
    """``testing``: the scripted backends' knobs (tests and benchmarks); listed by ``bench --help`` only."""

    model_config = SECTION_CONFIG
    __test__ = False  # not a test class, whatever its name

    transcripts: list[str] | None = Field(None, alias="scripted_transcripts", description="Scripted STT answers.")
    replies: list[str] | None = Field(None, alias="scripted_replies", description="Scripted LLM replies.")
    token_delay_ms: float = Field(0.0, ge=0.0, alias="scripted_token_delay_ms", description="Scripted LLM token delay.")
    stt_delay_ms: float = Field(0.0, ge=0.0, alias="scripted_stt_delay_ms", description="Scripted STT delay.")
    tts_ms_per_char: float = Field(
        60.0, ge=0.0, alias="scripted_tts_ms_per_char", description="Scripted TTS tone length."
    )
