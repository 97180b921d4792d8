"""Typed, immutable items that travel on the queues of a pipeline unit.

Every item that can go stale (anything produced for a response) is
:class:`ResponseOwned`: it carries the ``generation`` of the CancelScope it
was produced under, and the ``response_id`` it belongs to; the few that go
out even when stale are :class:`AlwaysDelivered`. Audio is numpy data: treat arrays as read-only
once they are on a queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from speech_to_speech.audio.samples import FloatAudio, Int16Audio
from speech_to_speech.protocol.metadata import TurnOutcome

# ---------------------------------------------------------------- what the items share


@dataclass(frozen=True)
class ResponseOwned:
    """An item made for one response: which one, and under which generation of the CancelScope.

    Both are needed: one response id can be asked of the LLM twice (a speculative
    request, then the real one), and only the generation tells the two apart.
    An item of a generation that was cancelled is stale, and dropped.
    """

    response_id: str
    generation: int


class AlwaysDelivered:
    """Marks an item that goes out even when its generation is stale: a response's sentinel (the send
    loop needs it to close the response), usage (billed even for a cancelled response), error reports."""


# ---------------------------------------------------------------- control


@dataclass(frozen=True)
class SessionEnd:
    """Soft reset: each handler clears its per-session state and forwards it.

    Reaching the end of the pipeline proves the unit drained.
    """

    token: int = 0


@dataclass(frozen=True)
class PipelineEnd:
    """Stop the handler threads of a unit; forwarded so every stage stops."""


@dataclass(frozen=True)
class StageError(AlwaysDelivered):
    """A handler failed on an item; reported downstream instead of dying."""

    stage: str
    message: str
    generation: int | None = None
    response_id: str | None = None
    item_id: str | None = None  # the user turn it was working on (STT)
    # The work will be done again (a speculative pass): nothing the client waits for is lost.
    retried: bool = False


# ---------------------------------------------------------------- input side


@dataclass(frozen=True)
class AudioChunk:
    """512 samples of 16 kHz mono float32 audio for the VAD."""

    samples: FloatAudio
    # Position of the first sample in the session's input stream, in samples.
    offset: int = 0


@dataclass(frozen=True)
class CommitInput:
    """Force the end of the current user turn (manual input_audio_buffer.commit)."""

    item_id: str | None = None


@dataclass(frozen=True)
class ClearInput:
    """Drop buffered, uncommitted user audio (input_audio_buffer.clear)."""


@dataclass(frozen=True)
class SpeechStarted:
    audio_start_ms: int
    # False when the VAD is configured not to interrupt (turn_detection.interrupt_response).
    interrupt_response: bool = True
    item_id: str | None = None
    # Audio ms from the first voiced chunk to the end of the last one so far (no padding).
    speech_ms: int = 0
    # The turn before this speech, when the VAD ended it itself, and the silence between that turn's last
    # voiced chunk and this speech's first (audio ms): speech soon after a turn may take its reply back.
    after_item_id: str | None = None
    after_silence_ms: int | None = None


@dataclass(frozen=True)
class SpeechStopped:
    audio_end_ms: int
    item_id: str | None = None
    # Audio ms from the first voiced chunk to the end of the last one (no padding); None if unknown.
    speech_ms: int | None = None


@dataclass(frozen=True)
class SpeechOngoing:
    """The utterance ``item_id`` has been voiced for ``speech_ms`` of audio and goes on.

    Sent once per utterance, when its voiced span reaches the session's
    ``overlap_barge_in_ms`` (listen_only sessions only): the overlap policy
    decides on the VAD's audio clock, not on when events reach the event loop.
    """

    item_id: str | None
    speech_ms: int


@dataclass(frozen=True)
class SpeculationVoided:
    """The speculative utterances of a turn up to number ``speculation`` no longer hold.

    The user spoke again after the pause, or the turn was cleared or
    committed under another item id. It comes straight from the VAD, so it
    may overtake the transcripts of those utterances, which go through the STT.
    """

    item_id: str | None = None
    speculation: int = 0


@dataclass(frozen=True)
class Utterance:
    """One user turn's audio, cut by the VAD or a manual commit."""

    samples: FloatAudio
    audio_start_ms: int
    audio_end_ms: int
    item_id: str | None = None
    # True when the turn was committed by the client (no automatic response).
    manual: bool = False
    vad_end_time: float = 0.0  # time.monotonic() at end of speech
    # A hypothesis of a turn that may still go on: the speech so far, sent at a pause. It carries
    # the pause's number within its turn (1, 2, …; see turns.controller); 0 for a turn's real end.
    speculation: int = 0
    # The number of this turn's last speculative utterance when no speech followed it: its
    # transcript still holds for the whole turn (0: transcribe the turn).
    reuses: int = 0
    # The speech so far of a turn the user is still speaking (no pause): transcribed for the live
    # transcript and to let the LLM read ahead, only when nothing newer of the turn waits.
    interim: bool = False
    # An interim utterance whose words decide what speech over the assistant's answer is (a listener's
    # "yeah", or a bid for the turn): transcribed at once as urgent work, never skipped (ProbeSpeech).
    probe: bool = False

    @property
    def speculative(self) -> bool:
        return self.speculation > 0

    @property
    def reuse_speculation(self) -> bool:
        return self.reuses > 0


# Other readings of the same speech by the STT, most likely first: (text, mean log-probability of its tokens).
Readings = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Transcript:
    """STT output. ``final`` is False for cumulative partial hypotheses."""

    text: str
    final: bool
    item_id: str | None = None
    language: str | None = None
    audio_seconds: float = 0.0
    manual: bool = False
    stt_done_time: float = 0.0
    vad_end_time: float = 0.0
    speculation: int = 0  # of the utterance transcribed (see Utterance.speculation)
    # A speculative pass's doubt that the speech ended where the text ends as a sentence, for the turn
    # detector (see stt.base.Heard); None: unknown, or not asked (a turn's final transcript).
    continuation: float | None = None
    avg_logprob: float | None = None  # how sure the STT was of the words (see stt.base.Heard); None: unknown
    readings: Readings = ()  # where the STT was asked for them (speech over the answer: see stt.base.Heard)

    @property
    def speculative(self) -> bool:
        return self.speculation > 0


@dataclass(frozen=True)
class PromptPrefill:
    """The request the turn would make if it ended on the words heard so far: the LLM reads its prompt
    into its cache, ahead of the real request, and answers nothing."""

    request: GenerateResponseRequest


@dataclass(frozen=True)
class SpeculativeTranscript:
    """What the user said up to a pause; the turn may still go on (see SpeculationVoided)."""

    item_id: str | None
    transcript: str
    speculation: int = 1
    continuation: float | None = None  # see Transcript.continuation
    language: str | None = None  # the language the STT heard it in


@dataclass(frozen=True)
class TranscriptionDelta:
    item_id: str | None
    delta: str


@dataclass(frozen=True)
class TranscriptionSnapshot:
    item_id: str | None
    text: str
    avg_logprob: float | None = None  # see Transcript.avg_logprob
    readings: Readings = ()  # see Transcript.readings


@dataclass(frozen=True)
class TranscriptionCompleted:
    item_id: str | None
    transcript: str
    language: str | None = None
    audio_seconds: float = 0.0
    manual: bool = False
    stt_done_time: float = 0.0
    vad_end_time: float = 0.0
    avg_logprob: float | None = None  # see Transcript.avg_logprob
    readings: Readings = ()  # see Transcript.readings


# ---------------------------------------------------------------- generation


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    # Assistant tool calls: ({"call_id", "name", "arguments"}, ...); tool results: call_id.
    tool_calls: tuple[dict[str, str], ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Truncation:
    """How a conversation longer than the model's context is cut (the session's ``truncation``).

    ``retention_ratio``: when the conversation outgrows its budget, the oldest
    turns go at once until this share of the budget is left, so that the
    prompt's prefix, and the model's cache of it, then holds for many turns.
    None: never cut (``"disabled"``); a conversation that does not fit fails
    the response. ``post_instructions``: a budget of the client's own for
    what follows the instructions, below the model's.
    """

    retention_ratio: float | None = 0.8
    post_instructions: int | None = None


@dataclass(frozen=True)
class GenerateResponseRequest(ResponseOwned):
    messages: tuple[ChatMessage, ...]
    instructions: str | None = None
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: str | dict[str, Any] = "auto"
    reasoning_effort: str | None = None
    max_output_tokens: int | None = None
    voice: str | None = None
    language: str | None = None
    # Ids of function_call_output items the model input contains.
    input_call_ids: tuple[str, ...] = ()
    output_modalities: tuple[str, ...] = ("audio",)
    metadata: dict[str, Any] | None = None
    truncation: Truncation = Truncation()
    # What to say first when the reply reaches a tool call with nothing said (no dead air while it runs);
    # None: say nothing of our own.
    preamble: str | None = None


@dataclass(frozen=True)
class AssistantTextPart(ResponseOwned):
    text: str
    language: str | None = None  # what it is written in, where the request said (the voice speaks it)


@dataclass(frozen=True)
class Preamble(ResponseOwned):
    """A short phrase to say while the user waits ("Let me check that."), said only if nothing of the
    response was said or is on its way (the output processor decides, in order with the model's text)."""

    text: str


@dataclass(frozen=True)
class AssistantToolCallPart(ResponseOwned):
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class TokenUsage(ResponseOwned, AlwaysDelivered):
    input_tokens: int = 0
    output_tokens: int = 0
    # Of input_tokens, those the model had in its cache already and did not read again.
    cached_tokens: int = 0


@dataclass(frozen=True)
class TTSFirstAudio(ResponseOwned):
    """Timing mark: the TTS produced the first audio of a response."""

    time: float


@dataclass(frozen=True)
class LLMFirstToken(ResponseOwned):
    """Timing mark: the LLM produced its first token for a response."""

    time: float


ResponseStatus = Literal["completed", "cancelled", "incomplete", "failed"]


@dataclass(frozen=True)
class ResponseDone(ResponseOwned, AlwaysDelivered):
    """The __RESPONSE_DONE__ sentinel: closes a response on every queue it passes."""

    status: ResponseStatus = "completed"
    reason: str | None = None
    error: str | None = None
    input_call_ids: tuple[str, ...] = ()


# ---------------------------------------------------------------- output side


@dataclass(frozen=True)
class TTSInput(ResponseOwned):
    """A clause of assistant text for the TTS; ``text`` is also the transcript delta.

    ``spoken`` is what the voice says for it (markup dropped, numbers in words:
    see ``speech_text``); None says ``text`` as it is.
    """

    text: str
    voice: str | None = None
    language: str | None = None
    speak: bool = True
    spoken: str | None = None


@dataclass(frozen=True)
class AudioOutput(ResponseOwned):
    """Synthesised speech: mono int16 PCM at ``sample_rate``."""

    samples: Int16Audio
    sample_rate: int


@dataclass(frozen=True)
class TranscriptText(ResponseOwned):
    """Transcript text that goes to the wire in order with the audio (after TTS).

    The TTS sends one per clause, before that clause's audio, and the next one
    only after all of it: the audio between two of them voices the first one's
    text. The playback ledger's text marks rest on this order
    (realtime/conversation/text_marks.py); a stage that reorders the two breaks truncation.
    """

    text: str


@dataclass(frozen=True)
class SpokenPhonemes(ResponseOwned):
    """The phonemes of the next ``samples`` of a response's audio (told by a TTS that knows them).

    It comes right before that audio, and only when the viseme stage is on.
    ``durations`` (24 kHz samples, one per symbol of ``phonemes``, the first
    starting at sample ``start``) when the TTS also knows how long each lasted.
    """

    phonemes: str
    samples: int
    durations: tuple[int, ...] | None = None
    start: int = 0


@dataclass(frozen=True)
class Viseme:
    """A mouth shape (a name of visemes/catalog.py) from ``start_ms`` for ``duration_ms`` of one chunk."""

    viseme: str
    start_ms: int
    duration_ms: int


@dataclass(frozen=True)
class AudioVisemes(ResponseOwned):
    """The visemes of the ``AudioOutput`` that comes right after it on the same queue.

    ``source`` says where they came from: "phonemes" (the TTS's) or "audio" (heard in the samples).
    """

    visemes: tuple[Viseme, ...]
    source: Literal["phonemes", "audio"]


@dataclass(frozen=True)
class TurnVerdict:
    """The turn detector's answer about one pause of a turn (detector → VAD, on the VAD's queue)."""

    item_id: str | None
    pause: int  # which pause of the turn was scored (1, 2, …)
    probability: float | None  # that the turn is finished; None: no answer (cancelled or failed)
    inference_ms: float = 0.0


@dataclass(frozen=True)
class TurnDecision:
    """How the VAD judged a pause (VAD → service): for ``/metrics`` and the timings extension.

    ``outcome`` is ``finished`` (the turn ends once its reply can play), ``unfinished`` (it waits for
    more speech), ``timed_out`` (it ended after the longest silence allowed),
    ``disputed`` (it sounded unfinished but its words were a whole sentence: it
    ended as a finished turn does where its reply can be taken back, else by the
    silence rule) or ``no_answer`` (the detector gave none; the silence rule decided).
    """

    item_id: str | None
    detector: str
    outcome: TurnOutcome
    probability: float | None = None
    inference_ms: float = 0.0
    asked_at: float = 0.0  # time.monotonic() when the pause was sent for scoring
    decided_at: float = 0.0
    words: str | None = None  # the pause's speculative transcript, when it was weighed
    continuation: float | None = None  # the STT's doubt that those words end there (see Transcript)


@dataclass(frozen=True)
class ReplyReady:
    """The speculative reply to a pause's words can play now, or none will be made (service → VAD).

    A turn the detector judges finished ends only once its reply is ready:
    ending it sooner gains no time (nothing could play) and loses the chance
    to keep a turn whole when the user goes on speaking. ``speculation`` is
    the number of the pause's speculative utterance (see Utterance.speculation).
    """

    item_id: str | None
    speculation: int


@dataclass(frozen=True)
class ProbeSpeech:
    """Send the STT the speech of ``item_id`` so far, as a probe (service → VAD).

    Speech over the assistant's answer is judged by its words before it may
    become a turn; the service asks for them as soon as the VAD reports the
    speech, and again while they leave it undecided. The VAD answers once the
    utterance has ``min_new_ms`` more voice than at its last probe.
    """

    item_id: str | None
    min_new_ms: int = 0
