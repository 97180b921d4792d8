"""Server settings: every flag of `serve`/`local`, loadable from YAML.

One flat pydantic model; the CLI derives a ``--name`` flag from each field, so
a setting is declared once. YAML presets under ``configs/`` hold the same keys
(at the top level or under ``server:``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

LLMBackendName = str
Device = Literal["cpu", "cuda", "mps", "auto"]
# How the llama-cpp backend loads a GGUF (--llm_gguf_type): as the file is, or rewritten to a weight type.
GGUFWeightType = Literal["file", "q8_0", "q4_0", "f16"]
# --num_pipelines: a number of units, or "auto" (pool_size.py sizes the pool for the machine).
PipelineCount = Annotated[int, Field(ge=1)] | Literal["auto"]


# Settings that are secrets: hidden from repr, left out of benchmark files and logs.
SECRET_FIELDS = frozenset({"api_key", "stt_api_key", "llm_api_key", "tts_api_key"})


class ServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # ------------------------------------------------------------ server
    host: str = Field("127.0.0.1", description="Interface to listen on.")
    port: int = Field(8765, description="TCP port to listen on.")
    num_pipelines: PipelineCount = Field(
        "auto", description="Pipeline units = concurrent sessions; auto (the default): as many as this "
        "machine's CPUs and memory serve (GET /v1/pool says how many and why); or a number.",
    )
    log_level: str = Field("info", description="Logging level.")
    device: Device = Field("cpu", description="Device of the models that can use one (torch, CTranslate2).")
    release_timeout_s: float = Field(5.0, description="How long a released unit may take to drain.")
    shutdown_drain_s: float = Field(
        10.0, ge=0.0, le=300.0, description="On SIGTERM (an orchestrator's restart): how long sessions, closed "
        "with 1012 so their clients resume elsewhere, get to flush and connections to close before the process "
        "exits (keep the grace period of the orchestrator above it).",
    )
    demo: bool = Field(True, description="Serve the browser demo page at /demo.")

    # ------------------------------------------------------------ access control (see docs/security.md)
    api_key: str | None = Field(
        None, repr=False,
        description="Require 'Authorization: Bearer KEY' on every route but /health and /ready "
        "(env SPEECH_TO_SPEECH_API_KEY).",
    )
    allow_unauthenticated: bool = Field(False, description="Allow a non-loopback --host without --api_key.")
    allowed_origins: list[str] | None = Field(
        None, description="Browser Origins allowed besides the server's own (default: loopback, on a loopback bind)."
    )
    max_sessions_per_client: int = Field(8, ge=0, description="Concurrent sessions per client address (0: no limit).")
    max_sessions_per_minute: int = Field(
        600, ge=0, description="Sessions a client address may open per minute (0: no limit)."
    )
    admission_wait_s: float = Field(
        3.0, ge=0.0, le=60.0,
        description="How long a new session waits for a busy pipeline unit to come free before it is refused "
        "(HTTP 503, or an error event and close 1013 to a browser).",
    )

    # ------------------------------------------------------------ per-session limits (see docs/security.md)
    max_event_bytes: int = Field(16 * 1024 * 1024, ge=1024, description="Largest client event (one frame) in bytes.")
    max_event_depth: int = Field(32, ge=4, description="Deepest nesting of JSON a client event may have.")
    max_uncommitted_audio_s: float = Field(
        300.0, gt=0.0, description="Input audio a session may buffer without a commit (turn detection off)."
    )
    max_queued_input_s: float = Field(
        300.0, gt=0.0, description="Input audio waiting for the VAD before appends are refused."
    )
    max_pending_output_bytes_per_session: int = Field(
        2 * 1024 * 1024, ge=1024, description="Output waiting for a slow client, in bytes of JSON, before it is closed."
    )
    max_pending_output_events_per_session: int = Field(
        512, ge=8, description="Output events waiting for a slow client before it is closed."
    )
    max_conversation_items: int = Field(1000, ge=10, description="Conversation items a session keeps (oldest go).")
    max_instructions_chars: int = Field(100_000, ge=100, description="Longest instructions a session may set.")
    max_tools: int = Field(128, ge=0, description="Most tools a session or response may declare.")
    idle_timeout_s: float = Field(
        300.0, ge=0.0, description="Close a session that sends nothing (no event, no audio) this long (0: never)."
    )
    response_stall_timeout_s: float = Field(
        60.0, ge=0.0, description="Fail a response whose pipeline produces nothing this long (a hung stage; 0: never)."
    )
    # ------------------------------------------------------------ resume and replay (see docs/sessions.md)
    disconnect_grace_s: float = Field(
        30.0, ge=0.0, description="How long a session whose socket dropped keeps running, resumable (0: not at all)."
    )
    replay_journal_max_bytes: int = Field(
        4 * 1024 * 1024, ge=0, description="Server events a session keeps for a resume, in bytes of JSON."
    )
    replay_journal_ttl_s: float = Field(
        120.0, ge=0.0, description="How long a session keeps a server event for a resume, in seconds."
    )
    session_store: str = Field(
        "memory", pattern=r"^(memory|(redis|rediss|unix)://.+)$",
        description="Where resumable sessions are kept: memory (this process only) or redis://host:port/db "
        "(shared by replicas: a session resumes on any of them and outlives its server).",
    )

    # ------------------------------------------------------------ VAD
    vad: str = Field("silero", description="VAD backend.")
    thresh: float = Field(0.5, ge=0.0, le=1.0, description="Speech probability threshold.")
    min_silence_ms: int = Field(500, ge=0, description="Silence that ends a turn.")
    min_speech_ms: int = Field(250, ge=0, description="Shorter speech is ignored.")
    speech_pad_ms: int = Field(300, ge=0, description="Audio kept before speech starts.")
    max_speech_ms: int = Field(30000, ge=1000, description="A longer turn is cut here.")
    speculation_silence_ms: int = Field(
        32, ge=0, description="Pause after which STT and the reply start speculatively (0: off)."
    )
    interim_transcript_ms: int = Field(
        300, ge=0, description="While the user speaks, transcribe the speech so far after every this much "
        "more voice, when the STT is free (transcription deltas, and the LLM reads the words ahead; 0: off)."
    )
    interim_max_pass_ms: int = Field(
        200, ge=0, description="No interim passes while the STT's last pass took longer than this: on a CPU "
        "that slow, a pass running when the pause comes would delay the pause's own."
    )
    prefill_during_speech: bool = Field(
        True, description="The LLM reads the words heard so far into its cache while the user speaks "
        "(llama-cpp), so only the last words are left to read when the pause comes."
    )
    turn_detector: Literal["smart-turn", "silence"] = Field(
        "smart-turn",
        description="What ends a turn: the Smart Turn model (sessions' semantic_vad; falls back to "
        "silence when its weights are missing) or silence alone.",
    )
    smart_turn_model: str | None = Field(
        None, description="Smart Turn ONNX file; default: the one in the installed pipecat-ai wheel."
    )
    turn_pause_ms: int = Field(
        200, ge=32, description="The pause the turn detector judges the turn with (asked as the pause begins, "
        "the pause padded to this); no turn is decided on a shorter one."
    )
    finished_pause_ms: int = Field(
        200, ge=32, description="The shortest silence that ends a turn judged finished, once its reply is "
        "ready (eagerness high: --turn_pause_ms); so does one whose words read as a whole sentence though it "
        "sounded unfinished, where --take_back_within_ms covers the silence window. People pause up to ~400 ms "
        "between two sentences of one request: where the reply cannot be taken back (--take_back_within_ms 0, or "
        "a session with interrupt_response false) a finished turn waits at least 448 ms, and the other one the "
        "silence window (--min_silence_ms)."
    )
    take_back_within_ms: int = Field(
        600, ge=0, description="Speech that resumes within this silence after a turn the detector ended at its "
        "first pause (finished, or words read whole against the score) takes its reply back: cancelled if still "
        "being made, its items deleted, and the next turn answers both utterances as one request (0: never, and "
        "finished turns wait out a pause of 448 ms)."
    )
    max_turn_silence_ms: int = Field(
        2000, ge=100, description="Longest silence an unfinished turn waits (semantic_vad, eagerness medium)."
    )
    echo_cancellation: Literal["off", "server"] = Field(
        "off", description="server: take the audio each WebSocket session sent out of its microphone audio, for "
        "clients that play it beside a raw microphone (a session can also ask with the "
        "speech_to_speech.echo_cancellation extension). WebRTC sessions never: the browser cancels."
    )

    # ------------------------------------------------------------ STT
    stt: str = Field("faster-whisper", description="STT backend.")
    stt_model: str | None = Field(
        None, description="Hub id or local path; default: the packaged Whisper tiny.en."
    )
    stt_language: str | None = Field(None, description="Force a language code (e.g. en).")
    stt_compute_type: str = Field("int8", description="CTranslate2 compute type.")
    stt_beam_size: int = Field(1, ge=1, description="Whisper beam size.")
    stt_threads: int = Field(
        1, ge=1, description="CPU threads per faster-whisper transcription (two were slower than one on a "
        "2-core machine; more sessions use more units, not more threads).",
    )
    stt_window_s: float = Field(
        10.0, ge=0.0, le=30.0,
        description="Encoder window (s) for English-only faster-whisper models; longer turns and doubtful "
        "results take the stock 30 s window (0 or 30: always the stock window).",
    )
    stt_base_url: str | None = Field(None, description="OpenAI-compatible STT base URL.")
    stt_api_key: str | None = Field(None, repr=False, description="STT API key (default OPENAI_API_KEY).")
    stt_supported_languages: list[str] | None = Field(None, description="Declared STT languages.")
    stt_auto_language_supported: bool | None = Field(None, description="Declared STT auto.")

    # ------------------------------------------------------------ LLM
    llm: LLMBackendName = Field("llama-cpp", description="LLM backend.")
    llm_model: str | None = Field(
        None, description="Hub id, local path or GGUF file; default: packaged SmolLM2-135M."
    )
    llm_base_url: str | None = Field(None, description="OpenAI-compatible LLM base URL.")
    llm_api_key: str | None = Field(None, repr=False, description="LLM API key (default OPENAI_API_KEY).")
    init_chat_prompt: str = Field(
        "You are a helpful and friendly voice assistant. Answer in one or two short sentences.",
        description="System prompt.",
    )
    chat_size: int = Field(10, ge=1, description="Conversation turns kept in the LLM context.")
    max_new_tokens: int = Field(128, ge=1, description="Token limit per response.")
    temperature: float = Field(0.0, ge=0.0, description="Sampling temperature (0 = greedy).")
    top_p: float = Field(
        1.0, gt=0.0, le=1.0, description="Sample only from the likeliest tokens holding this much probability "
        "(1 = all; used when temperature > 0)."
    )
    repetition_penalty: float = Field(
        1.0, ge=1.0, le=2.0, description="Penalty on tokens the reply already holds (1 = none; greedy decoding too)."
    )
    llm_threads: int | None = Field(
        None, ge=1, description="CPU threads per local LLM generation; default: half the usable CPUs (llama-cpp "
        "reads the prompt and decodes a reply's first words on one thread per physical core, and uses no more "
        "threads than other processes and a waiting user's work leave CPUs free)."
    )
    llm_contexts: int | None = Field(
        None, ge=1, description="llama-cpp: contexts over the one model, each ~150 MB, so that concurrent "
        "sessions decode side by side instead of waiting for each other's whole reply; default: one per "
        "pipeline unit, at most 4."
    )
    llm_compute_type: str = Field("int8", description="CTranslate2 compute type of the ctranslate2 LLM.")
    llm_gguf_type: GGUFWeightType = Field(
        "q8_0", description="llama-cpp: load the GGUF rewritten once (into the model cache) with this weight "
        "type, whatever the model; 'file': as the file is. Q8_0 holds a 4-bit file's weights almost exactly "
        "and runs faster on CPUs than 4-bit types; for a large model it doubles the memory of a 4-bit file."
    )
    responses_api_reasoning_effort: str | None = Field(None, description="Startup effort.")
    responses_api_disable_thinking: bool = Field(False, description="Send enable_thinking=false.")

    # Each word the first audio waits for costs ~45 ms of decoding on a 2-core CPU: with four, p50 536 ms
    # from the end of speech to the first audio (bench latency, AVX-512 Xeon), with three 481 ms.
    first_chunk_words: int = Field(
        3, ge=0, description="Words that may start speech before the first punctuation (0: wait for it)."
    )

    # ------------------------------------------------------------ TTS
    tts: str = Field("hibari", description="TTS backend.")
    tts_model: str | None = Field(None, description="TTS model path or id.")
    tts_voice: str | None = Field(None, description="Default voice.")
    kokoro_voices: str | None = Field(
        None, description="Voices archive (.npz/.bin) for an ONNX Kokoro --tts_model; default: beside it."
    )
    tts_speed: float = Field(1.0, gt=0.0, description="Speaking rate.")
    tts_base_url: str | None = Field(None, description="OpenAI-compatible TTS base URL.")
    tts_api_key: str | None = Field(None, repr=False, description="TTS API key (default OPENAI_API_KEY).")
    tts_supported_languages: list[str] | None = Field(None, description="Declared TTS languages.")
    tts_auto_language_supported: bool | None = Field(None, description="Declared TTS auto.")
    enable_visemes: bool = Field(
        False, description="Run the viseme stage after TTS: timed mouth shapes for sessions that opt in."
    )

    # ------------------------------------------------------------ scripted (tests, benches)
    scripted_transcripts: list[str] | None = Field(None, description="Scripted STT answers.")
    scripted_replies: list[str] | None = Field(None, description="Scripted LLM replies.")
    scripted_token_delay_ms: float = Field(0.0, ge=0.0, description="Scripted LLM token delay.")
    scripted_stt_delay_ms: float = Field(0.0, ge=0.0, description="Scripted STT delay.")
    scripted_tts_ms_per_char: float = Field(
        60.0, ge=0.0, description="Scripted TTS tone length."
    )


# The scripted handlers' knobs: for tests and benchmarks, so `serve --help` leaves them to `bench --help`.
TEST_ONLY_FIELDS = tuple(name for name in ServerSettings.model_fields if name.startswith("scripted_"))


def load_yaml(path: str | Path) -> dict[str, Any]:
    data = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return data


def settings_from_yaml(data: dict[str, Any]) -> dict[str, Any]:
    """The server section of a config file: ``server:`` if present, else the top level."""
    section = data.get("server", data)
    if not isinstance(section, dict):
        raise ValueError("'server' must be a mapping")
    return {k: v for k, v in section.items() if k not in ("runtime", "client")}
