"""``--speaker_check on`` over the wire, with the real VAD and embedder: after the user's first turn, a voice that
is not theirs and quieter than them starts no turn (no ``speech_started``), nor does its louder sentence that
follows, while the user's own voice at that level still does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.bench.room_audio import at_level
from speech_to_speech.testing.client_audio import silence
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

pytestmark = pytest.mark.real_models
RATE = 24000  # the client's rate (the fixtures are 16 kHz: read_wav resamples them)
TURNS = Path(__file__).resolve().parents[1] / "fixtures" / "turns"
GAP_S = 1.5  # between the voices: longer than the silence window, so each is its own turn
USER_DB = -20.0
# The other voices: within the level margin, not as loud as the user. At 5 dB under, the other voice's first second
# reaches the user's level over a min_speech_ms stretch, which alone would start a turn: once another voice has been
# heard, such a stretch must sound like the user too.
QUIETER_DB = -28.0
LOUDER_DB = -25.0


def _voices() -> list[np.ndarray]:
    """The user's first turn; another person (the user's voice five semitones lower: another voice print, as
    tests/vad/test_speaker_embedder.py checks) 8 dB quieter, then 5 dB quieter; the user again, 5 dB quieter."""
    first = at_level(read_wav(TURNS / "whole_robot_story.wav", RATE)[0], USER_DB)
    other = read_wav(TURNS / "unfinished_rome_uh.wav", RATE)[0]
    other = resample(other, int(RATE * 2 ** (-5 / 12)), RATE)
    again = at_level(read_wav(TURNS / "finished_twelve_fifteen.wav", RATE)[0], LOUDER_DB)
    return [first, at_level(other, QUIETER_DB), at_level(other, LOUDER_DB), again]


def _turn_starts(events: list[dict], spans: list[tuple[int, int]]) -> list[int]:
    """How many turns started within each span (ms of the input audio; a start may lead by the prefix pad)."""
    starts = [e["audio_start_ms"] for e in events if e["type"] == "input_audio_buffer.speech_started"]
    return [sum(begin - 500 <= start < end for start in starts) for begin, end in spans]


@pytest.mark.parametrize("check", ["on", "off"])
async def test_after_the_user_s_first_turn_a_quieter_other_voice_starts_no_turn_and_theirs_does(
        make_server: ServerFactory, check: str) -> None:
    # The level margin lets all three voices in: with the check on, the voice decides.
    server = make_server(vad="silero", speaker_check=check, min_silence_ms=500, speech_pad_ms=300,
                         user_level_margin_db=12.0)
    stream, spans, at = [silence(0.3, RATE)], [], 300
    for voice in _voices():
        stream += [voice, silence(GAP_S, RATE)]
        spans.append((at, at + len(voice) * 1000 // RATE))
        at = spans[-1][1] + int(GAP_S * 1000)
    async with RealtimeTestClient.connect(server.ws_url, timeout=60) as client:
        await client.wait_for("session.created")
        # No answers: speech over an answer would be judged by the overlap policy, not by this check alone.
        await client.update_session({"audio": {"input": {"turn_detection": {"type": "server_vad",
                                                                             "create_response": False}}}})
        await client.append_audio(np.concatenate(stream), RATE)
        # The last voice's turn ends in the trailing silence: every turn before it has been decided.
        events = await client.collect_until(
            lambda e: e["type"] == "input_audio_buffer.speech_stopped" and e["audio_end_ms"] > spans[3][0])
    first, other, louder, again = _turn_starts(events, spans)
    assert (first, again) == (1, 1)  # the user's first turn (before their voice is known), and theirs again
    # off: by its level alone, the other voice is a turn each time
    assert (other, louder) == ((0, 0) if check == "on" else (1, 1))
