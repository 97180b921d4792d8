"""When the STT hears a turn's speech so far, while the user still speaks.

Two passes go out before a pause: an interim one after every
``--interim_transcript_ms`` more of voice (the live transcript, and the LLM
reads the words ahead of the pause), and a probe when the service asks for the
words of speech over the assistant's answer (``ProbeSpeech``: it goes once the
speech has ``min_new_ms`` more voice than at the last probe). Both are counted
in voiced milliseconds of the turn, the audio clock; a probe also counts as an
interim pass, as it gives the same words.
"""

from __future__ import annotations


class SpeechSoFar:
    """The interim and probe passes of one turn."""

    def __init__(self) -> None:
        self._interim_at_ms = 0  # the voiced ms at the last interim pass (or probe)
        self._probe_due_ms: int | None = None  # the voiced ms at which the probe asked for goes (None: none asked)
        self._probed_at_ms = 0  # the voiced ms at the last probe

    def ask_probe(self, min_new_ms: int) -> None:
        """The service wants the words once there are ``min_new_ms`` more of voice than at the last probe."""
        self._probe_due_ms = self._probed_at_ms + min_new_ms

    def probe_due(self, voiced_ms: int) -> bool:
        """Whether the probe goes now, at ``voiced_ms`` of voice."""
        due = self._probe_due_ms
        if due is None or voiced_ms < due:
            return False
        self._probe_due_ms = None
        self._probed_at_ms = self._interim_at_ms = voiced_ms
        return True

    def interim_due(self, voiced_ms: int, every_ms: int) -> bool:
        """Whether an interim pass goes now, at ``voiced_ms`` of voice, one every ``every_ms`` (0: never)."""
        if not every_ms or voiced_ms - self._interim_at_ms < every_ms:
            return False
        self._interim_at_ms = voiced_ms
        return True
