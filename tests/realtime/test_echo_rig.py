"""The echo rig: its speaker says what it played as the packaged client does (audio, not time since an item
began), and its user talks over the answer that plays."""

from __future__ import annotations

import asyncio
import base64
from types import SimpleNamespace

import numpy as np

from speech_to_speech.testing.client_audio import decode_audio, encode_audio
from speech_to_speech.testing.echo_rig import CHUNK_MS, Interruption, Speaker, speak_beside_speaker
from speech_to_speech.testing.room import Room

RATE = 16000
ITEM = ("resp_1", "item_1")


def _ms(ms: int) -> int:
    return RATE * ms // 1000


def _audio(ms: int) -> np.ndarray:
    return np.full(_ms(ms), 0.1, np.float32)


def _played(speaker: Speaker, at_ms: int) -> int:
    [(_, _, played)] = speaker.played_ms(_ms(at_ms))
    return played


def test_a_speaker_that_ran_dry_does_not_count_the_silence_as_the_item_played() -> None:
    speaker = Speaker(RATE)
    speaker.queue(_audio(100), 0, ITEM)
    speaker.queue(_audio(100), _ms(300), ITEM)  # the next piece came 200 ms after the first had played out
    assert _played(speaker, 250) == 100
    assert _played(speaker, 350) == 150
    assert _played(speaker, 900) == 200
    assert speaker.timeline[_ms(150)] == 0.0 and speaker.timeline[_ms(350)] > 0.0


def test_pieces_that_arrive_in_time_play_on_as_one_run() -> None:
    speaker = Speaker(RATE)
    speaker.queue(_audio(100), 0, ITEM)
    speaker.queue(_audio(100), _ms(50), ITEM)  # queued behind the first
    assert speaker.items[ITEM] == [(0, _ms(200))]
    assert _played(speaker, 150) == 150


def test_a_stopped_speaker_has_played_only_what_came_before_the_stop() -> None:
    speaker = Speaker(RATE)
    speaker.queue(_audio(100), 0, ITEM)
    speaker.queue(_audio(100), _ms(300), ITEM)
    speaker.stop(_ms(320))
    assert _played(speaker, 900) == 120
    assert speaker.played_ms(0) == [("resp_1", "item_1", 0)]
    assert not speaker.timeline[_ms(320):].any()


class _ScriptedServer:
    """A client stand-in for the rig: after the ``n``-th microphone append, the events scripted for ``n`` arrive."""

    def __init__(self, script: dict[int, list[dict]]) -> None:
        self.script = script
        self.received: list[SimpleNamespace] = []
        self.microphone: list[np.ndarray] = []

    async def send(self, kind: str, **fields: object) -> None:
        if kind != "input_audio_buffer.append":
            return
        self.microphone.append(decode_audio(str(fields["audio"])).astype(np.float32) / 32768.0)
        for event in self.script.get(len(self.microphone), []):
            self.received.append(SimpleNamespace(event=event, at=0.0))


def _answer_audio(ms: int) -> dict:
    samples = np.zeros(_ms(ms), np.float32)
    return {"type": "response.output_audio.delta", "response_id": "r", "item_id": "i",
            "delta": base64.b64encode(encode_audio(samples)).decode("ascii")}


def test_an_answer_taken_back_before_the_user_spoke_moves_their_interruption_to_the_next_answer() -> None:
    chunk = CHUNK_MS
    said = np.concatenate([np.full(_ms(100), 0.25, np.float32), np.zeros(_ms(50), np.float32)])  # voice, silence
    server = _ScriptedServer({
        200 // chunk: [_answer_audio(1000)],  # the first answer begins at 200 ms ...
        400 // chunk: [{"type": "input_audio_buffer.speech_started", "audio_start_ms": 300}],  # ... taken back
        800 // chunk: [_answer_audio(2000)],  # the answer that plays
        900 // chunk: [{"type": "response.done", "response": {"status": "completed"}}],
    })
    room = Room(gain=0.0, noise_dbfs=-120.0, rate=RATE)
    run = asyncio.run(speak_beside_speaker(server, np.zeros(_ms(100), np.float32), RATE, room,  # type: ignore[arg-type]
                                           listen_s=2.0, settle_s=0.1,
                                           interruption=Interruption(500.0, said, 0, _ms(100))))
    heard = np.concatenate(server.microphone)
    voiced = np.flatnonzero(np.abs(heard) > 0.1)
    assert voiced.size == _ms(100)
    assert voiced[0] == _ms(800 + 500)  # 500 ms into the answer that played, not into the one taken back
    assert run.answer_started_at == 0 and run.playing_when_voiced
    assert run.interruption_end_ms == 800 + 500 + 100  # where its voice ends, not its trailing silence


def test_an_answer_that_stalls_has_the_user_talk_over_its_audio_not_into_the_stall() -> None:
    # on a slow machine the answer's first clause played out 1.4-1.9 s before the next came: said 1.5 s after
    # its first audio, every interruption fell into that silence (nothing to talk over, and no echo to hear)
    said = np.full(_ms(100), 0.25, np.float32)
    server = _ScriptedServer({
        200 // CHUNK_MS: [_answer_audio(300)],  # plays 200-500 ms ...
        1000 // CHUNK_MS: [_answer_audio(1000)],  # ... and on from 1000 ms
        1100 // CHUNK_MS: [{"type": "response.done", "response": {"status": "completed"}}],
    })
    room = Room(gain=0.0, noise_dbfs=-120.0, rate=RATE)
    run = asyncio.run(speak_beside_speaker(server, np.zeros(_ms(100), np.float32), RATE, room,  # type: ignore[arg-type]
                                           listen_s=2.0, settle_s=0.1, interruption=Interruption(500.0, said)))
    voiced = np.flatnonzero(np.abs(np.concatenate(server.microphone)) > 0.1)
    assert voiced[0] == _ms(1000 + 200)  # 300 ms of the answer before the stall, 200 after it
    assert run.playing_when_voiced
