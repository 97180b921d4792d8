"""The OpenAI-compatible STT and TTS backends against a tiny HTTP server on 127.0.0.1."""

from __future__ import annotations

import email.parser
import email.policy
import io
import json
import sys
import threading
import wave
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.openai_client import DUMMY_KEY, api_key
from speech_to_speech.pipeline.messages.input_audio import Utterance
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TranscriptText, TTSInput
from speech_to_speech.stt.openai_api import OpenAISTT, load_openai_stt
from speech_to_speech.testing.engine import loading
from speech_to_speech.tts.openai_api import OpenAITTS, load_openai_tts, pcm16_frames

# 0.5 s of a 24 kHz ramp: every sample distinct, so any lost or doubled byte shows.
SPEECH_PCM = (np.arange(12000, dtype=np.int64) % 20000 - 10000).astype("<i2").tobytes()


class FakeAudioAPI(BaseHTTPRequestHandler):
    """/v1/audio/transcriptions and /v1/audio/speech, recording what clients sent."""

    requests: list[dict[str, Any]]

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers["Content-Length"]))

    def do_POST(self) -> None:
        record: dict[str, Any] = {"path": self.path, "auth": self.headers.get("Authorization")}
        self.requests.append(record)
        if self.path == "/v1/audio/transcriptions":
            raw = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + self._body()
            form = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(raw)
            for part in form.iter_parts():
                name = part.get_param("name", header="content-disposition")
                record[name] = part.get_payload(decode=True)
            body = json.dumps({"text": "turn on the lights"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/v1/audio/speech":
            record.update(json.loads(self._body()))
            self.send_response(200)
            self.send_header("Content-Type", "audio/pcm")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            # Odd-sized chunks: samples straddle chunk borders.
            for start in range(0, len(SPEECH_PCM), 3001):
                piece = SPEECH_PCM[start : start + 3001]
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_error(404)


class LoopbackServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the cancel test hangs up mid-stream on purpose
        super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    requests: list[dict[str, Any]] = []
    handler = type("Handler", (FakeAudioAPI,), {"requests": requests, "protocol_version": "HTTP/1.1"})
    httpd = LoopbackServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", requests
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_stt_posts_a_16k_wav_and_returns_the_text(server: Any, make_handler: Any) -> None:
    base_url, requests = server
    settings = ServerSettings(
        stt="openai", stt_base_url=base_url, stt_model="my-whisper", stt_language="en-US"
    )
    stt = make_handler(OpenAISTT, load_openai_stt(*loading("stt", settings)), settings)
    samples = (0.1 * np.sin(np.arange(8000) / 10)).astype(np.float32)
    (transcript,) = stt.process(Utterance(samples, 0, 500, item_id="item_1"))

    assert transcript.text == "turn on the lights" and transcript.item_id == "item_1"
    sent = requests[-1]
    assert sent["auth"] == f"Bearer {DUMMY_KEY}"
    assert sent["model"] == b"my-whisper" and sent["language"] == b"en"
    with wave.open(io.BytesIO(sent["file"])) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (16000, 1, 2)
        assert wav.getnframes() == len(samples)


def test_tts_streams_pcm16_with_the_requested_voice(server: Any, make_handler: Any) -> None:
    base_url, requests = server
    settings = ServerSettings(tts="openai", tts_base_url=base_url, tts_api_key="sk-test")
    tts = make_handler(OpenAITTS, load_openai_tts(*loading("tts", settings)), settings)
    items = list(tts.process(TTSInput("resp_1", 0, "Hello there.", voice="verse")))

    assert isinstance(items[0], TranscriptText)
    audio = [i for i in items if isinstance(i, AudioOutput)]
    assert all(a.sample_rate == 24000 for a in audio)
    assert np.concatenate([a.samples for a in audio]).tobytes() == SPEECH_PCM
    sent = requests[-1]
    assert sent["auth"] == "Bearer sk-test"
    assert (sent["model"], sent["voice"], sent["response_format"], sent["input"]) == (
        "tts-1",
        "verse",
        "pcm",
        "Hello there.",
    )


def test_tts_voice_defaults_to_the_setting_then_alloy(server: Any, make_handler: Any) -> None:
    base_url, requests = server
    for voice, expected in ((None, "alloy"), ("sage", "sage")):
        settings = ServerSettings(tts="openai", tts_base_url=base_url, tts_voice=voice)
        tts = make_handler(OpenAITTS, load_openai_tts(*loading("tts", settings)), settings)
        list(tts.process(TTSInput("resp_1", 0, "Hi.")))
        assert requests[-1]["voice"] == expected


def test_pcm_frames_rejoin_samples_split_across_chunks() -> None:
    data = np.array([1, -2, 300, -32768, 32767], dtype="<i2").tobytes()
    chunks = [data[:3], data[3:4], data[4:9], data[9:]]
    assert np.concatenate(list(pcm16_frames(iter(chunks)))).tolist() == [1, -2, 300, -32768, 32767]


def test_api_key_order(monkeypatch: pytest.MonkeyPatch) -> None:
    assert api_key("explicit", None) == "explicit"
    assert api_key(None, "http://127.0.0.1:1/v1") == DUMMY_KEY
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert api_key(None, "http://127.0.0.1:1/v1") == "from-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(RuntimeError, match="API key"):
        api_key(None, None)


def test_tts_cancel_closes_the_stream(server: Any, make_handler: Any) -> None:
    base_url, _ = server
    settings = ServerSettings(tts="openai", tts_base_url=base_url)
    tts = make_handler(OpenAITTS, load_openai_tts(*loading("tts", settings)), settings)
    stream = tts.process(TTSInput("resp_1", 0, "Hello there."))
    assert isinstance(next(stream), TranscriptText)
    assert any(isinstance(item, AudioOutput) for item in stream)  # runs up to the first audio piece
    tts.cancel_scope.cancel()
    assert list(stream) == []
