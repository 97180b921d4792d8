"""When a turn's speech so far goes to the STT: interim passes, and probes the service asks for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.turns.speech_so_far import SpeechSoFar

CHUNK_MS = 32


def test_an_interim_pass_goes_after_every_so_much_more_voice() -> None:
    passes = SpeechSoFar()
    due = [ms for ms in range(CHUNK_MS, 1000, CHUNK_MS) if passes.interim_due(ms, every_ms=300)]
    assert due == [320, 640, 960]


def test_no_interim_pass_when_they_are_off() -> None:
    passes = SpeechSoFar()
    assert not any(passes.interim_due(ms, every_ms=0) for ms in range(CHUNK_MS, 5000, CHUNK_MS))


def test_a_probe_goes_once_there_is_the_voice_asked_for_and_counts_as_an_interim_pass() -> None:
    passes = SpeechSoFar()
    assert not passes.probe_due(64)  # nothing asked
    passes.ask_probe(min_new_ms=0)
    assert passes.probe_due(64) and not passes.probe_due(96)  # at once, and once
    passes.ask_probe(min_new_ms=200)
    assert not passes.probe_due(224) and passes.probe_due(288)  # 200 ms more than at the last probe (64)
    assert not passes.interim_due(500, every_ms=300) and passes.interim_due(608, every_ms=300)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.just(None), st.integers(0, 400)), max_size=40), st.sampled_from([96, 300]))
def test_passes_never_come_closer_than_asked(asks: list[int | None], every_ms: int) -> None:
    """Over a turn's voice, with probes asked at any time: interim passes are ``every_ms`` apart at least, from the
    last pass of either kind, and each probe waits for the voice it asked for."""
    passes, last_pass, last_probe, wanted = SpeechSoFar(), 0, 0, None
    for step, ask in enumerate(asks):
        voiced_ms = (step + 1) * CHUNK_MS
        if ask is not None:
            passes.ask_probe(ask)
            wanted = last_probe + ask
        if passes.probe_due(voiced_ms):
            assert wanted is not None and voiced_ms >= wanted
            last_pass = last_probe = voiced_ms
            wanted = None
        else:
            assert wanted is None or voiced_ms < wanted
        if passes.interim_due(voiced_ms, every_ms):
            assert voiced_ms - last_pass >= every_ms
            last_pass = voiced_ms
        else:
            assert voiced_ms - last_pass < every_ms
