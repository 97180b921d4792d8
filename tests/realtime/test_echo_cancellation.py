"""A client whose microphone hears its speaker: with echo cancellation the assistant never hears itself.

Real VAD, turn detector, STT and TTS (the LLM is scripted, for a long answer);
the rig plays every answer into its microphone through a simulated room.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import ECHO_CANCELLATION_EXTENSION
from speech_to_speech.realtime.conversation.echo import SessionEcho
from speech_to_speech.realtime.service.capabilities import session_capabilities
from speech_to_speech.testing.echo_rig import EchoRun, speak_beside_speaker
from speech_to_speech.testing.engine import loading
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.room import Room
from speech_to_speech.testing.server import RunningServer, running_server

pytestmark = pytest.mark.real_models

RATE = 24000
ANSWER = ("Paris is the capital of France. It has been the seat of the government for centuries, "
          "and people know it for its museums, its cafes and the river that runs through the middle of it.")


@pytest.fixture(scope="module")
def question() -> np.ndarray:
    from speech_to_speech.tts.hibari import load_hibari

    speech = load_hibari(*loading("tts", ServerSettings())).get(None)("What is the capital of France?", seed=0)
    return np.concatenate([np.zeros(RATE // 2, np.float32), speech]).astype(np.float32)


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    # The canceller alone: the speaker check would also keep the answer's voice from starting turns.
    settings = ServerSettings(llm="scripted", scripted_replies=[ANSWER] * 8, num_pipelines=2, log_level="warning",
                              speaker_check="off")
    with running_server(settings) as running:
        yield running


async def _ask(server: RunningServer, question: np.ndarray, *, cancel: bool | None, room: Room,
               settle_s: float = 1.5) -> EchoRun:
    """``cancel`` None: the session says nothing (the server's --echo_cancellation decides); ``settle_s``: how
    long to listen on after the last response ended."""
    async with RealtimeTestClient.connect(server.ws_url, timeout=30) as client:
        created = await client.wait_for("session.created")
        assert created["session"]["capabilities"]["supports_echo_cancellation"] is True
        if cancel is not None:
            await client.update_session({"extensions": [ECHO_CANCELLATION_EXTENSION] if cancel else []})
        return await speak_beside_speaker(client, question, RATE, room, settle_s=settle_s)


def _answered_once(run: EchoRun) -> None:
    assert run.of_type("input_audio_buffer.speech_started", after_answer=True) == []
    assert run.response_statuses == ["completed"]
    assert len(run.user_transcripts) == 1
    assert "capital of france" in run.user_transcripts[0].lower()


async def test_without_cancellation_the_rig_makes_the_assistant_hear_itself(
        server: RunningServer, question: np.ndarray) -> None:
    # (listening on until the echo's own turn is transcribed: on a 2-core AVX2-only EPYC that came more than
    # 1.5 s after the answer it cut off was cancelled)
    run = await _ask(server, question, cancel=False, room=Room(delay_ms=150, rate=RATE), settle_s=5.0)
    # What users suffer: the answer's own voice starts a user turn (a client that clears its playback
    # then cuts the answer off), is transcribed as the user's, and gets answered.
    assert run.of_type("input_audio_buffer.speech_started", after_answer=True)
    heard_later = " ".join(run.user_transcripts[1:]).lower()
    answer_words = {word.strip(",.") for word in ANSWER.lower().split() if len(word) > 3}
    assert any(word in heard_later for word in answer_words), run.user_transcripts


@pytest.mark.parametrize("delay_ms", [60, 250])
async def test_with_cancellation_the_answer_plays_out_and_nothing_of_it_is_heard(
        server: RunningServer, question: np.ndarray, delay_ms: int) -> None:
    _answered_once(await _ask(server, question, cancel=True, room=Room(delay_ms=delay_ms, rate=RATE)))


async def test_the_server_flag_cancels_for_every_session_that_does_not_ask(question: np.ndarray) -> None:
    settings = ServerSettings(llm="scripted", scripted_replies=[ANSWER], echo_cancellation="server",
                              log_level="warning")
    with running_server(settings) as cancelling:
        _answered_once(await _ask(cancelling, question, cancel=None, room=Room(delay_ms=150, rate=RATE)))
        metrics = httpx.get(cancelling.http_url + "/metrics").text
    # /metrics counts the microphone audio the canceller took the echo out of, and what that cost
    counted = dict(re.findall(r"^s2s_echo_(cancelled_audio|cancellation_cpu)_seconds_total (\S+)$", metrics, re.M))
    assert float(counted["cancelled_audio"]) >= len(question) / RATE
    assert 0.0 < float(counted["cancellation_cpu"]) < float(counted["cancelled_audio"])


def test_a_webrtc_session_is_not_offered_it_the_browser_cancels() -> None:
    capabilities = session_capabilities(resumable=False, media_track=True, multi_session=True, turn_detector=True)
    assert capabilities["supports_echo_cancellation"] is False


def test_a_playback_ack_places_the_reference_where_the_client_is_playing() -> None:
    echo = SessionEcho(lambda: True)
    echo.sent(np.zeros(RATE, np.int16), "item_a")  # one second of the answer sent at once
    echo.heard(np.zeros(3200, np.float32))  # 200 ms of microphone: by the send clock 200 ms of it played
    assert echo.reference_position == 3200
    echo.acked("item_a", 0)  # the client's buffer: nothing played yet
    assert echo.reference_position == 0
    echo.acked("item_a", 500)  # and then further on than the send clock: the echo must not come first
    assert echo.reference_position == 8000
    echo.heard(np.zeros(3200, np.float32))
    echo.acked("item_a", 650)  # the reference 50 ms ahead: left to the canceller's own delay estimate
    assert echo.reference_position == 11200
    echo.acked("item_unknown", 900)
    assert echo.reference_position == 11200


def _db(samples: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(samples.astype(np.float64) ** 2) + 1e-15))


def _clauses_after_a_stall(delay_ms: int, held_ms: int, gap_ms: int = 300,
                           first: str = "Paris is the capital of France, and it has been for centuries.",
                           ) -> tuple[float, float, float]:
    """Two clauses, the second 300 ms after the first played out; the server's event loop held for ``held_ms``
    up to the second's send, so the microphone's audio of that time is taken after it. The dB of echo removed
    over the first clause's last second, and over the second's first half second and first two seconds."""
    from speech_to_speech.audio.resample import resample
    from speech_to_speech.tts.hibari import load_hibari

    say = load_hibari(*loading("tts", ServerSettings())).get(None)
    clauses = [say(text, seed=0) for text in (first, "Its museums, its cafes and its river draw visitors all year.")]
    rate = 16000
    room = Room(delay_ms=delay_ms, rate=rate)
    lag = rate * 20 // 1000  # from a chunk's send to the speaker playing it
    sends, plays, at = [], [], rate // 2
    for clause in clauses:
        heard = resample(clause, RATE, rate)
        sends.append((at - lag, clause))
        plays.append((at, len(heard)))
        at += len(heard) + rate * gap_ms // 1000
    speaker = np.zeros(at + rate, np.float32)
    for (start, length), clause in zip(plays, clauses, strict=True):
        speaker[start:start + length] = resample(clause, RATE, rate)
    microphone = room.echo_of(speaker) + room.noise(len(speaker))
    now = [0.0]
    echo = SessionEcho(lambda: True, clock=lambda: now[0])
    held_from = sends[1][0] - held_ms * rate // 1000
    waiting: list[int] = []  # appends that came in while the loop was held
    cancelled = []
    for position in range(0, len(microphone), 320):  # 20 ms appends, each taken once it has come in
        now[0] = (position + 320) / rate
        for sent_at, clause in sends:
            if position <= sent_at < position + 320:
                for chunk in range(0, len(clause), RATE // 10):  # the TTS's 100 ms chunks, sent at once
                    echo.sent((clause[chunk:chunk + RATE // 10] * 32767).astype(np.int16), "item_a")
                for late in waiting:  # (the reply's audio went out first)
                    cancelled.append(echo.heard(microphone[late:late + 320]))
                waiting.clear()
        if held_from <= position < sends[1][0] - 320:
            waiting.append(position)
        else:
            cancelled.append(echo.heard(microphone[position:position + 320]))
    out = np.concatenate(cancelled)
    delay = delay_ms * rate // 1000

    def removed_db(start: int, end: int) -> float:
        return _db(microphone[start + delay:end + delay]) - _db(out[start + delay:end + delay])

    first_start, first_length = plays[0]
    return (removed_db(first_start + first_length - rate, first_start + first_length),
            removed_db(plays[1][0], plays[1][0] + rate // 2), removed_db(plays[1][0], plays[1][0] + 2 * rate))


@pytest.mark.parametrize("delay_ms", [60, 250])
def test_after_the_speaker_ran_dry_the_next_clause_is_cancelled_as_well_as_the_first(delay_ms: int) -> None:
    # A loaded server: the second clause comes 300 ms after the first one finished playing. The client's
    # speaker (and so the send clock) plays it from when it comes; the echo of its start must go as the
    # first clause's did, not leak while the canceller looks for an echo path that moved.
    settled, restart, _ = _clauses_after_a_stall(delay_ms, held_ms=0)
    assert settled > 25.0
    assert restart > settled - 10.0, (settled, restart)


@pytest.mark.parametrize("delay_ms", [60, 250])
def test_a_clause_sent_while_the_microphone_waits_is_placed_where_it_plays(delay_ms: int) -> None:
    # The event loop was held 500 ms (a slow machine) while the speaker had run dry: the next clause, ready
    # meanwhile, went out before the microphone's audio of that time was taken. Placed where the microphone had
    # got to, its reference lay 500 ms ahead of its echo, and live the answer's words came through as the user's.
    settled, _, restart = _clauses_after_a_stall(delay_ms, held_ms=500, gap_ms=1300)
    assert settled > 25.0
    assert restart > 15.0, (settled, restart)  # 2 dB of the next two seconds' echo removed when placed early
