"""`talk` and `local` end to end with scripted backends: WAV in, spoken answers out, clear errors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from speech_to_speech import cli
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.client import local
from speech_to_speech.client.cli import client_config
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.sound_devices import DEVICES, FakeSoundDevice, install_fake_sounddevice, without_portaudio

from .client_harness import MS_PER_CHAR, voiced_spans, write_turns
from .conftest import ServerFactory

SCRIPTED_FLAGS = ["--vad", "scripted", "--stt", "scripted", "--llm", "scripted", "--tts", "scripted",
                  "--min_silence_ms", "300", "--speech_pad_ms", "100", "--scripted_tts_ms_per_char", "10"]
REPO = Path(__file__).resolve().parents[2]


def talk(url: str, question: Path, answer: Path, *flags: str) -> int:
    return cli.main(["talk", "--url", url, "--input-wav", str(question), "--output-wav", str(answer), *flags])


def test_talk_with_a_wav_writes_the_spoken_answer(make_server: ServerFactory, tmp_path: Path, capsys: Any) -> None:
    server = make_server(scripted_replies=["Paris is the capital of France."])
    question = write_turns(tmp_path / "q.wav", rate=44100, channels=2)  # any rate, any channels
    assert talk(server.ws_url, question, tmp_path / "a.wav") == 0
    out = capsys.readouterr().out
    assert "You: What is the capital of France?" in out
    assert "Assistant: Paris is the capital of France." in out
    samples, rate = read_wav(tmp_path / "a.wav")
    assert rate == 24000
    assert voiced_spans(samples, rate) == [pytest.approx(len("Paris is the capital of France.") * MS_PER_CHAR / 1000,
                                                         abs=0.03)]


def test_two_turns_with_a_pause_give_two_answers(make_server: ServerFactory, tmp_path: Path, capsys: Any) -> None:
    server = make_server(scripted_transcripts=["First question?", "Second question?"],
                         scripted_replies=["One.", "Two, again."])
    question = write_turns(tmp_path / "q.wav", turns=2, pause_s=1.5)
    assert talk(server.ws_url, question, tmp_path / "a.wav") == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    assert lines == ["You: First question?", "Assistant: One.", "You: Second question?", "Assistant: Two, again."]
    samples, rate = read_wav(tmp_path / "a.wav")
    assert voiced_spans(samples, rate) == [pytest.approx(0.04, abs=0.03), pytest.approx(0.11, abs=0.03)]


def test_local_runs_server_and_client_in_one_process(tmp_path: Path, capsys: Any) -> None:
    question = write_turns(tmp_path / "q.wav", rate=22050)
    code = cli.main(["local", *SCRIPTED_FLAGS, "--scripted_replies", "Hello from local.",
                     "--input-wav", str(question), "--output-wav", str(tmp_path / "a.wav")])
    assert code == 0
    assert "Assistant: Hello from local." in capsys.readouterr().out
    samples, rate = read_wav(tmp_path / "a.wav")
    assert voiced_spans(samples, rate) == [pytest.approx(len("Hello from local.") * MS_PER_CHAR / 1000, abs=0.03)]


def test_local_as_a_command_line_process(tmp_path: Path) -> None:
    question = write_turns(tmp_path / "q.wav")
    result = subprocess.run(
        [sys.executable, "-m", "speech_to_speech", "local", *SCRIPTED_FLAGS, "--log_level", "warning",
         "--input-wav", str(question), "--output-wav", str(tmp_path / "a.wav")],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Assistant: Paris is the capital of France." in result.stdout
    assert "1 answer(s) to" in result.stderr


def test_silence_only_is_an_error(tmp_path: Path, capsys: Any) -> None:
    question = tmp_path / "silence.wav"
    from speech_to_speech.audio.wav import write_wav

    write_wav(question, np.zeros(8000, np.float32), 16000)
    code = cli.main(["local", *SCRIPTED_FLAGS, "--input-wav", str(question), "--output-wav", str(tmp_path / "a.wav"),
                     "--trailing-silence-ms", "300"])
    assert code == 1
    assert "no speech was heard" in capsys.readouterr().err


def test_a_failed_answer_makes_the_command_fail(make_server: ServerFactory, tmp_path: Path) -> None:
    server = make_server(scripted_replies=["[[failed:model down]]"])
    assert talk(server.ws_url, write_turns(tmp_path / "q.wav"), tmp_path / "a.wav") == 1


# ---------------------------------------------------------------- settings


def parse(*argv: str) -> Any:
    parser, _ = cli.build_parser()
    return parser.parse_args(argv)


def test_every_talk_flag_reaches_the_config() -> None:
    args = parse("talk", "--url", "ws://h:1/v1/realtime", "--model", "m", "--api-key", "k", "--send-rate", "16000",
                 "--recv-rate", "48000", "--chunk-size", "320", "--voice", "heart", "--tool-module", "tools_mod",
                 "--block-mic-during-playback", "--vad-threshold", "0.7", "--no-interrupt-response",
                 "--instructions", "Be brief.", "--input-device", "2", "--output-device", "USB")
    config = client_config(args, args.client_fields)
    assert config.model_dump(include={
        "url", "model", "api_key", "send_rate", "recv_rate", "chunk_size", "voice", "tool_module",
        "block_mic_during_playback", "vad_threshold", "interrupt_response", "instructions", "input_device",
        "output_device"}) == {
        "url": "ws://h:1/v1/realtime", "model": "m", "api_key": "k", "send_rate": 16000, "recv_rate": 48000,
        "chunk_size": 320, "voice": "heart", "tool_module": "tools_mod", "block_mic_during_playback": True,
        "vad_threshold": 0.7, "interrupt_response": False, "instructions": "Be brief.", "input_device": 2,
        "output_device": "USB"}


def test_runtime_client_in_yaml_and_flags_win(tmp_path: Path) -> None:
    config_file = tmp_path / "s2s.yaml"
    config_file.write_text(yaml.safe_dump({
        "server": {"thresh": 0.6},
        "runtime": {"client": {"vad_threshold": 0.8, "interrupt_response": False, "send_rate": 16000}},
    }))
    args = parse("talk", "--config", str(config_file), "--send-rate", "24000")
    config = client_config(args, args.client_fields)
    assert (config.vad_threshold, config.interrupt_response, config.send_rate) == (0.8, False, 24000)
    local_args = parse("local", "--config", str(config_file), "--voice", "heart")
    local_config = client_config(local_args, local_args.client_fields)
    assert (local_config.vad_threshold, local_config.voice) == (0.8, "heart")
    assert cli.settings_from_args(local_args, cli.build_parser()[1]).vad.thresh == 0.6


def test_a_bad_client_setting_is_a_usage_error(tmp_path: Path, capsys: Any) -> None:
    assert cli.main(["talk", "--vad-threshold", "2"]) == 2
    assert "vad_threshold" in capsys.readouterr().err


# ---------------------------------------------------------------- failures, one line each


def one_line_error(capsys: Any) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


# Device errors are forced, never taken from this machine: with a fake sounddevice that finds the devices
# a test names (none: a machine with PortAudio but no sound card), or with PortAudio failing to load.
PORTAUDIO_MISSING = ("audio devices are unavailable: PortAudio library not found; install PortAudio "
                     "(Debian/Ubuntu: sudo apt-get install libportaudio2; macOS: brew install portaudio), "
                     "or use --input-wav FILE and --output-wav FILE")


@pytest.fixture
def no_sound_card(monkeypatch: pytest.MonkeyPatch) -> FakeSoundDevice:
    return install_fake_sounddevice(monkeypatch)


@pytest.fixture
def no_portaudio(monkeypatch: pytest.MonkeyPatch) -> None:
    without_portaudio(monkeypatch)


@pytest.fixture
def models_never_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """`local` fails if it gets as far as building its server (and loading the default models)."""

    def loopback_server(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("local started its server before checking the devices")

    monkeypatch.setattr(local, "loopback_server", loopback_server)


def test_list_devices_without_a_sound_card(no_sound_card: FakeSoundDevice, capsys: Any) -> None:
    assert cli.main(["talk", "--list-devices"]) == 0
    assert capsys.readouterr().out.strip() == ("No audio devices found. Use --input-wav FILE and --output-wav FILE "
                                               "to talk without a sound card.")


def test_list_devices_without_portaudio_says_what_to_install(no_portaudio: None, capsys: Any) -> None:
    assert cli.main(["local", "--list-devices"]) == 1
    assert one_line_error(capsys) == f"speech-to-speech local: {PORTAUDIO_MISSING}"


def test_list_devices_without_the_sounddevice_package(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setitem(sys.modules, "sounddevice", None)  # as if the package were missing
    assert cli.main(["talk", "--list-devices"]) == 1
    err = one_line_error(capsys)
    assert "cannot import sounddevice" in err and "pip install sounddevice" in err


def test_a_missing_microphone_is_a_clear_error(make_server: ServerFactory, no_sound_card: FakeSoundDevice,
                                               capsys: Any) -> None:
    server = make_server()
    assert cli.main(["talk", "--url", server.ws_url]) == 1
    assert one_line_error(capsys) == ("speech-to-speech talk: no audio input device found "
                                      "(see --list-devices, or use --input-wav FILE)")


def test_the_microphone_without_portaudio_is_a_clear_error(make_server: ServerFactory, no_portaudio: None,
                                                           capsys: Any) -> None:
    server = make_server()
    assert cli.main(["talk", "--url", server.ws_url]) == 1
    assert one_line_error(capsys) == f"speech-to-speech talk: {PORTAUDIO_MISSING}"


def test_a_device_that_does_not_exist_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: Any) -> None:
    install_fake_sounddevice(monkeypatch, DEVICES, default=(0, 1))
    question = write_turns(tmp_path / "q.wav")
    assert cli.main(["talk", "--input-wav", str(question), "--output-device", "7"]) == 1
    assert "--output-device 7 is not an audio output device" in one_line_error(capsys)


def test_local_reports_a_missing_device_before_loading_models(monkeypatch: pytest.MonkeyPatch,
                                                              models_never_load: None, capsys: Any) -> None:
    install_fake_sounddevice(monkeypatch, DEVICES, default=(0, 1))
    assert cli.main(["local", "--input-device", "999"]) == 1
    assert "--input-device 999 is not an audio input device" in one_line_error(capsys)


def test_local_reports_missing_portaudio_before_loading_models(no_portaudio: None, models_never_load: None,
                                                               capsys: Any) -> None:
    assert cli.main(["local"]) == 1
    assert one_line_error(capsys) == f"speech-to-speech local: {PORTAUDIO_MISSING}"


def test_files_instead_of_devices_need_no_portaudio(make_server: ServerFactory, no_portaudio: None,
                                                    tmp_path: Path, capsys: Any) -> None:
    server = make_server(scripted_replies=["No sound card needed."])
    assert talk(server.ws_url, write_turns(tmp_path / "q.wav"), tmp_path / "a.wav") == 0
    assert "Assistant: No sound card needed." in capsys.readouterr().out
    code = cli.main(["local", *SCRIPTED_FLAGS, "--scripted_replies", "Nor here.",
                     "--input-wav", str(write_turns(tmp_path / "q2.wav")), "--output-wav", str(tmp_path / "a2.wav")])
    assert code == 0
    assert "Assistant: Nor here." in capsys.readouterr().out


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path, capsys: Any) -> None:
    from speech_to_speech.testing.server import free_port

    question = write_turns(tmp_path / "q.wav")
    assert talk(f"ws://127.0.0.1:{free_port()}/v1/realtime", question, tmp_path / "a.wav") == 1
    assert "cannot reach the server" in one_line_error(capsys)


@pytest.mark.parametrize(("path", "message"), [("/v1/nope", "answered HTTP"), ("/health", "answered HTTP")])
def test_a_wrong_url_is_a_clear_error(make_server: ServerFactory, tmp_path: Path, capsys: Any, path: str,
                                      message: str) -> None:
    server = make_server()
    question = write_turns(tmp_path / "q.wav")
    assert talk(f"ws://127.0.0.1:{server.port}{path}", question, tmp_path / "a.wav") == 1
    assert message in one_line_error(capsys)
    assert talk(f"{server.http_url}/v1/realtime", question, tmp_path / "a.wav") == 1
    assert "is an HTTP URL; use ws://" in one_line_error(capsys)


def test_the_session_limit_is_a_clear_error(make_server: ServerFactory, tmp_path: Path, capsys: Any) -> None:
    server = make_server(num_pipelines=1)
    question = write_turns(tmp_path / "q.wav")

    async def while_busy() -> int:
        async with RealtimeTestClient.connect(server.ws_url) as busy:
            await busy.wait_for("session.created")
            return await asyncio.to_thread(talk, server.ws_url, question, tmp_path / "a.wav")

    assert asyncio.run(asyncio.wait_for(while_busy(), 60)) == 1
    assert "session limit" in one_line_error(capsys)


def test_a_server_that_hangs_up_is_a_clear_error(tmp_path: Path, capsys: Any) -> None:
    import json

    from websockets.asyncio.server import ServerConnection, serve

    async def hang_up(connection: ServerConnection) -> None:
        await connection.send(json.dumps({"type": "session.created", "event_id": "e1", "session": {}}))
        await connection.recv()  # our session.update
        await connection.close(1011, "pipeline crashed")

    async def scenario() -> int:
        async with serve(hang_up, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            url = f"ws://127.0.0.1:{port}/v1/realtime"
            return await asyncio.to_thread(talk, url, write_turns(tmp_path / "q.wav"), tmp_path / "a.wav")

    assert asyncio.run(asyncio.wait_for(scenario(), 30)) == 1
    assert "the server closed the connection (code 1011: pipeline crashed)" in one_line_error(capsys)
