"""Where a turn ends, decided between the turn detector, the VAD and the service."""

from __future__ import annotations

from dataclasses import dataclass

from speech_to_speech.protocol.metadata import TurnOutcome


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
