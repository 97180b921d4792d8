"""The command line: settings flags derived from ServerSettings, YAML, subcommands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from speech_to_speech import cli
from speech_to_speech.config import FLAT_FIELDS, TEST_ONLY_FIELDS, ServerSettings
from speech_to_speech.presets import DEFAULT_PRESET, preset
from speech_to_speech.testing.sound_devices import DEVICES, install_fake_sounddevice, without_portaudio


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[ServerSettings]:
    """Capture what `serve` hands to the realtime server instead of serving."""
    from speech_to_speech.realtime.app import server

    calls: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", calls.append)
    return calls


def serve(served: list[ServerSettings], *argv: str) -> ServerSettings:
    assert cli.main(["serve", *argv]) == 0
    return served[-1]


def test_serve_passes_the_default_preset_to_the_realtime_server(served: list[ServerSettings]) -> None:
    assert serve(served) == ServerSettings(**preset(DEFAULT_PRESET))
    assert serve(served, "--preset", "fast") == ServerSettings(**preset("fast"))


def test_a_config_file_replaces_the_default_preset(served: list[ServerSettings], tmp_path: Path) -> None:
    config = tmp_path / "mine.yaml"
    config.write_text("server:\n  port: 9001\n")
    assert serve(served, "--config", str(config)) == ServerSettings(port=9001)


def test_every_settings_field_has_a_flag() -> None:
    _, fields = cli.build_parser()
    assert set(fields) == set(FLAT_FIELDS)


def test_flags_are_typed_from_the_annotations(served: list[ServerSettings]) -> None:
    settings = serve(
        served,
        "--port", "9001",
        "--thresh", "0.7",
        "--device", "cuda",
        "--stt_language", "fr",
        "--stt_supported_languages", "en", "fr", "de",
        "--responses_api_disable_thinking",
        "--no-stt_auto_language_supported",
        "--init_chat_prompt", "Be brief.",
    )  # fmt: skip
    assert settings.server.port == 9001 and settings.vad.thresh == 0.7 and settings.server.device == "cuda"
    assert settings.stt.language == "fr"
    assert settings.stt.supported_languages == ["en", "fr", "de"]
    assert settings.llm.responses_api_disable_thinking is True
    assert settings.stt.auto_language_supported is False
    assert settings.llm.init_chat_prompt == "Be brief."


def test_flags_override_the_yaml_config(served: list[ServerSettings], tmp_path: Path) -> None:
    config = tmp_path / "preset.yaml"
    config.write_text("server:\n  port: 1234\n  thresh: 0.3\n  llm: scripted\nruntime:\n  voice: x\n")
    settings = serve(served, "--config", str(config), "--port", "4321")
    assert (settings.server.port, settings.vad.thresh, settings.llm.backend) == (4321, 0.3, "scripted")


def test_a_flat_yaml_config_works_too(served: list[ServerSettings], tmp_path: Path) -> None:
    config = tmp_path / "flat.yaml"
    config.write_text("num_pipelines: 3\ntts: scripted\n")
    settings = serve(served, "--config", str(config))
    assert (settings.server.num_pipelines, settings.tts.backend) == (3, "scripted")


def test_the_pool_is_a_number_or_sized_for_the_machine(served: list[ServerSettings]) -> None:
    assert serve(served).server.num_pipelines == "auto"
    assert serve(served, "--num_pipelines", "auto").server.num_pipelines == "auto"
    assert serve(served, "--num_pipelines", "3").server.num_pipelines == 3


def test_local_serves_its_one_user_with_one_unit_unless_told(tmp_path: Any) -> None:
    parser, fields = cli.build_parser()

    def units(*argv: str) -> Any:
        return cli.settings_from_args(parser.parse_args(["local", *argv]), fields).server.num_pipelines

    assert units() == 1
    assert units("--num_pipelines", "auto") == "auto"
    config = tmp_path / "two.yaml"
    config.write_text("server:\n  num_pipelines: 2\n")
    assert units("--config", str(config)) == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--no-such-flag"],
        ["serve", "--num_pipelines", "many"],
        ["serve", "--port", "eighty"],
        ["serve", "--device", "abacus"],
        ["serve", "--num_pipelines", "0"],
        ["serve", "--stt", "nonexistent"],
        ["local", "--thresh", "2"],
        ["frobnicate"],
    ],
)
def test_bad_flags_are_usage_errors(served: list[ServerSettings], argv: list[str], capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert "error" in capsys.readouterr().err
    assert served == []


def test_a_yaml_config_with_an_unknown_key_is_rejected(
    served: list[ServerSettings], tmp_path: Path, capsys: Any
) -> None:
    config = tmp_path / "typo.yaml"
    config.write_text("server:\n  prot: 80\n")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["serve", "--config", str(config)])
    assert exit_info.value.code == 2
    assert "prot" in capsys.readouterr().err


def test_a_missing_config_file_is_a_usage_error(served: list[ServerSettings], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["serve", "--config", str(tmp_path / "absent.yaml")])
    assert exit_info.value.code == 2


def test_bench_takes_the_server_flags(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli.main(["bench", "latency", "--help"])
    out = capsys.readouterr().out
    assert "--url" in out and "--num_pipelines" in out and "--questions-dir" in out


def test_serve_help_leaves_the_scripted_flags_to_bench_yet_takes_them(served: list[ServerSettings],
                                                                      capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    serve_help = capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["bench", "latency", "--help"])
    bench_help = capsys.readouterr().out
    assert "--num_pipelines" in serve_help and "listed by bench" in serve_help
    assert TEST_ONLY_FIELDS and not [name for name in TEST_ONLY_FIELDS if name in serve_help]
    assert "--scripted_replies" in bench_help and "--scripted_token_delay_ms" in bench_help
    settings = serve(served, "--llm", "scripted", "--scripted_replies", "Hi.", "--scripted_token_delay_ms", "5")
    assert (settings.testing.replies, settings.testing.token_delay_ms) == (["Hi."], 5.0)


def test_no_subcommand_prints_help_and_fails(capsys: Any) -> None:
    assert cli.main([]) == 2
    assert "serve" in capsys.readouterr().err


@pytest.mark.parametrize(("machine", "message"), [
    ("no such device", "--input-device 999 is not an audio input device"),
    ("no PortAudio", "sudo apt-get install libportaudio2"),
])
def test_local_without_a_file_needs_audio_devices(machine: str, message: str, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: Any) -> None:
    # Forced either way, whatever this machine has: a missing microphone, or PortAudio itself missing.
    if machine == "no PortAudio":
        without_portaudio(monkeypatch)
    else:
        install_fake_sounddevice(monkeypatch, DEVICES, default=(0, 1))
    from speech_to_speech.client import local

    def loopback_server(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("local started its server (and loaded the models) before checking the devices")

    monkeypatch.setattr(local, "loopback_server", loopback_server)
    assert cli.main(["local", "--vad", "scripted", "--input-device", "999"]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
