"""The benchmarks ``speech-to-speech bench`` runs against a server, and the server settings each starts with.

A benchmark's defaults sit under the YAML file and the flags: overhead and
capacity time the server on scripted backends, the others the real default
models unless the flags say otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from speech_to_speech.presets import DEFAULT_PRESET, PRESETS

SCRIPTED = {"vad": "scripted", "stt": "scripted", "llm": "scripted", "tts": "scripted"}
# Model time zero: what is left is the server. No speculation: a speculative reply is held until
# the turn ends on purpose, which would show up as "overhead" on the LLM and TTS hops.
ZERO_DELAYS = {**SCRIPTED, "scripted_stt_delay_ms": 0.0, "scripted_token_delay_ms": 0.0,
               "scripted_tts_ms_per_char": 10.0, "speculation_silence_ms": 0}
# About the default models on this kind of machine: Whisper tiny.en on a short turn, SmolLM2 at
# ~80 tokens/s (int8 on CTranslate2, sharing the CPU), speech at a speaking rate; the handlers
# sleep, so N sessions cost the server, not N models.
REALISTIC_DELAYS = {**SCRIPTED, "scripted_stt_delay_ms": 200.0, "scripted_token_delay_ms": 12.0,
                    "scripted_tts_ms_per_char": 60.0,
                    "scripted_replies": ["Paris is the capital of France. It is known for its art."]}
SPOKEN = ("latency", "bargein", "echo")  # the benchmarks that speak the questions
QUIET = {"log_level": "warning"}  # a session's open and close are not news during a bench
# The soak opens hundreds of sessions a minute from one address, on fast scripted handlers; a session
# whose client vanished waits a second (not 30) for a resume, so the last ones are gone soon after the run.
SOAK_SERVER = {**QUIET, **SCRIPTED, "min_silence_ms": 300, "speech_pad_ms": 100, "scripted_tts_ms_per_char": 5.0,
               "max_sessions_per_minute": 0, "max_sessions_per_client": 0, "disconnect_grace_s": 1.0}

RESUME_SERVER = {**QUIET, **SCRIPTED, "scripted_token_delay_ms": 0.0, "scripted_tts_ms_per_char": 5.0,
                 "max_sessions_per_minute": 0, "max_sessions_per_client": 0}


@dataclass(frozen=True)
class Bench:
    help: str
    defaults: dict[str, Any]  # server settings under the YAML file and the flags


BENCHES = {
    "latency": Bench("End of speech -> first audio delta, with the stage breakdown (real models by default).",
                     QUIET),
    "turns": Bench("Natural spoken requests with pauses: answered, double answers, end of speech -> first "
                   "audio delta (real models by default).", QUIET),
    "load": Bench("The spoken-turn corpus alone, beside a process keeping one core busy, and two sessions "
                  "speaking at once: end of speech -> first audio and its ratio to alone (real models by "
                  "default).", QUIET),
    "conversation": Bench("Scripted conversations of 30+ turns, each spoken in one session, the user hearing "
                          "every answer out: end of speech -> first audio early and late, prompt tokens read per "
                          "turn, recall and accuracy (real models by default).", QUIET),
    "quality": Bench("Spoken requests with checkable answers: accuracy per category, tool-call precision and "
                     "recall, end of speech -> first audio (real models by default).", QUIET),
    "bargein": Bench("Talking over the answer -> response cancelled, and stale audio after it.", QUIET),
    "echo": Bench("A microphone that hears its own speaker, echo cancellation off and on: answers played out, "
                  "self-interruptions, echo turns, barge-in with the echo; ERLE and CPU (real models by default).",
                  QUIET),
    "room": Bench("An assistant in a room: listener words and interruptions over answers, background talk "
                  "nobody addresses it with, requests over the room (real models by default).", QUIET),
    "languages": Bench("Spoken requests in French, Spanish, German and Japanese, each in a fresh session: the "
                       "language heard, error rates, the answer's language and intelligibility, end of speech -> "
                       "first audio (the multilingual preset by default).", {**QUIET, **PRESETS["multilingual"]}),
    "tools": Bench("Spoken requests that need a tool (MCP and function tools the model has not seen): right call "
                   "and arguments, silence from the end of speech to the first audio with and without the "
                   "preamble, time to the spoken result (the default preset by default).",
                   {**QUIET, **PRESETS[DEFAULT_PRESET]}),
    "overhead": Bench("Per-hop server overhead with zero-time scripted handlers.", {**QUIET, **ZERO_DELAYS}),
    "capacity": Bench("Added latency and output underruns of N concurrent sessions (scripted, realistic delays).",
                      {**QUIET, **REALISTIC_DELAYS}),
}
