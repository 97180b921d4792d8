"""Settings in sections, spoken with flat names: flags, YAML keys and flat dicts give the same settings as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from speech_to_speech import cli
from speech_to_speech.config import (
    FLAT_FIELDS,
    SECTIONS,
    TEST_ONLY_FIELDS,
    ServerSettings,
    flat_settings,
    settings_from_flat,
)
from speech_to_speech.settings import LLMSettings, STTSettings, TestingSettings, TTSSettings, VADSettings
from speech_to_speech.testing.engine import running_unit

# Every flag `serve --help` listed when the settings were one flat model: the names users' scripts hold.
FLAGS_OF_SERVE = [
    "--host", "--port", "--num_pipelines", "--log_level", "--device", "--release_timeout_s",
    "--shutdown_drain_s", "--demo", "--api_key", "--allow_unauthenticated", "--allowed_origins",
    "--max_sessions_per_client", "--max_sessions_per_minute", "--admission_wait_s", "--max_event_bytes",
    "--max_event_depth", "--max_uncommitted_audio_s", "--max_queued_input_s",
    "--max_pending_output_bytes_per_session", "--max_pending_output_events_per_session",
    "--max_conversation_items", "--max_instructions_chars", "--max_tools", "--idle_timeout_s",
    "--response_stall_timeout_s", "--disconnect_grace_s", "--replay_journal_max_bytes",
    "--replay_journal_ttl_s", "--session_store", "--vad", "--thresh", "--min_silence_ms", "--min_speech_ms",
    "--speech_pad_ms", "--max_speech_ms", "--user_level_margin_db", "--speaker_check", "--speculation_silence_ms",
    "--interim_transcript_ms",
    "--interim_max_pass_ms", "--prefill_during_speech", "--turn_detector", "--smart_turn_model",
    "--turn_pause_ms", "--finished_pause_ms", "--take_back_within_ms", "--max_turn_silence_ms",
    "--echo_cancellation", "--stt", "--stt_model", "--stt_language", "--stt_language_check", "--stt_compute_type",
    "--stt_beam_size",
    "--stt_threads", "--stt_window_s", "--stt_base_url", "--stt_api_key", "--stt_supported_languages",
    "--stt_auto_language_supported", "--llm", "--llm_model", "--llm_base_url", "--llm_api_key",
    "--init_chat_prompt", "--chat_size", "--llm_context_tokens", "--max_new_tokens", "--temperature", "--top_p",
    "--repetition_penalty", "--llm_threads", "--llm_contexts", "--llm_compute_type", "--llm_gguf_type",
    "--llm_tool_call_threshold",
    "--llm_tool_call_model",
    "--responses_api_reasoning_effort", "--responses_api_disable_thinking", "--first_chunk_words", "--tts",
    "--tts_model", "--tts_voice", "--kokoro_voices", "--tts_speed", "--tts_hub_voices", "--tts_base_url",
    "--tts_api_key",
    "--tts_supported_languages", "--tts_auto_language_supported", "--enable_visemes",
    "--mcp_server", "--mcp_list_timeout_s", "--mcp_call_timeout_s",
]
SCRIPTED_FLAGS = ["--scripted_transcripts", "--scripted_replies", "--scripted_token_delay_ms",
                  "--scripted_stt_delay_ms", "--scripted_tts_ms_per_char"]

# A sample from every section, prefixed names and unprefixed ones, as a YAML file or flags give them.
GIVEN: dict[str, Any] = {
    "port": 9001, "num_pipelines": 3, "session_store": "redis://cache:6379/0",  # server
    "max_tools": 16, "replay_journal_ttl_s": 30.0,  # limits
    "vad": "scripted", "thresh": 0.7, "min_silence_ms": 400, "echo_cancellation": "server",  # vad
    "turn_detector": "silence", "turn_pause_ms": 96, "take_back_within_ms": 0,  # turns
    "stt": "scripted", "stt_model": "tiny", "stt_supported_languages": ["en", "fr"], "interim_max_pass_ms": 50,
    "llm": "scripted", "llm_model": "qwen", "init_chat_prompt": "Be brief.", "chat_size": 4,
    "llm_gguf_type": "file", "first_chunk_words": 2,  # llm
    "tts": "scripted", "tts_voice": "tone", "tts_speed": 1.5, "kokoro_voices": "v.bin", "enable_visemes": True,
    "scripted_replies": ["Hi."], "scripted_token_delay_ms": 5.0,  # testing
}
# Where each of them lives now.
READ_BACK = {
    "port": lambda s: s.server.port, "num_pipelines": lambda s: s.server.num_pipelines,
    "session_store": lambda s: s.server.session_store, "max_tools": lambda s: s.limits.max_tools,
    "replay_journal_ttl_s": lambda s: s.limits.replay_journal_ttl_s, "vad": lambda s: s.vad.backend,
    "thresh": lambda s: s.vad.thresh, "min_silence_ms": lambda s: s.vad.min_silence_ms,
    "echo_cancellation": lambda s: s.vad.echo_cancellation, "turn_detector": lambda s: s.turns.detector,
    "turn_pause_ms": lambda s: s.turns.pause_ms, "take_back_within_ms": lambda s: s.turns.take_back_within_ms,
    "stt": lambda s: s.stt.backend, "stt_model": lambda s: s.stt.model,
    "stt_supported_languages": lambda s: s.stt.supported_languages,
    "interim_max_pass_ms": lambda s: s.stt.interim_max_pass_ms, "llm": lambda s: s.llm.backend,
    "llm_model": lambda s: s.llm.model, "init_chat_prompt": lambda s: s.llm.init_chat_prompt,
    "chat_size": lambda s: s.llm.chat_size, "llm_gguf_type": lambda s: s.llm.gguf_type,
    "first_chunk_words": lambda s: s.llm.first_chunk_words, "tts": lambda s: s.tts.backend,
    "tts_voice": lambda s: s.tts.voice, "tts_speed": lambda s: s.tts.speed,
    "kokoro_voices": lambda s: s.tts.kokoro_voices, "enable_visemes": lambda s: s.tts.enable_visemes,
    "scripted_replies": lambda s: s.testing.replies, "scripted_token_delay_ms": lambda s: s.testing.token_delay_ms,
}


def _as_flags(values: dict[str, Any]) -> list[str]:
    argv: list[str] = []
    for name, value in values.items():
        if value is True:
            argv.append(f"--{name}")
        elif isinstance(value, list):
            argv += [f"--{name}", *map(str, value)]
        else:
            argv += [f"--{name}", str(value)]
    return argv


def _parsed(config: Path, *argv: str) -> ServerSettings:
    """What `serve --config FILE` and flags give (a file, so that no preset comes in between)."""
    parser, fields = cli.build_parser()
    return cli.settings_from_args(parser.parse_args(["serve", "--config", str(config), *argv]), fields)


def test_the_flat_names_are_the_flags_of_serve_and_nothing_else() -> None:
    assert set(FLAT_FIELDS) == {flag[2:] for flag in FLAGS_OF_SERVE + SCRIPTED_FLAGS}
    assert tuple(flag[2:] for flag in SCRIPTED_FLAGS) == TEST_ONLY_FIELDS
    assert {section for section, _ in FLAT_FIELDS.values()} == set(SECTIONS)


def test_a_flat_yaml_file_and_flat_flags_give_the_same_settings(tmp_path: Path) -> None:
    config = tmp_path / "flat.yaml"
    lines = [f"{name}: {value!r}" if not isinstance(value, str) else f"{name}: '{value}'"
             for name, value in GIVEN.items()]
    config.write_text("\n".join(lines).replace("True", "true") + "\n")
    empty = tmp_path / "empty.yaml"
    empty.write_text("{}\n")
    from_yaml, from_flags = _parsed(config), _parsed(empty, *_as_flags(GIVEN))
    assert from_yaml == from_flags == settings_from_flat(GIVEN) == ServerSettings(**GIVEN)
    for name, read in READ_BACK.items():
        assert read(from_flags) == GIVEN[name], name
    assert flat_settings(from_flags) == {**flat_settings(ServerSettings()), **GIVEN}


def test_a_yaml_file_under_server_and_one_in_sections_say_the_same(tmp_path: Path) -> None:
    flat, nested = tmp_path / "flat.yaml", tmp_path / "nested.yaml"
    flat.write_text("server:\n  port: 9001\n  stt: moonshine\n  stt_model: tiny\n  thresh: 0.3\n")
    nested.write_text("server:\n  server: {port: 9001}\n  stt: {backend: moonshine, model: tiny}\n"
                      "  vad: {thresh: 0.3}\n")
    assert _parsed(flat) == _parsed(nested) != ServerSettings()


def test_serve_help_lists_todays_flags_by_section_and_hides_the_scripted_ones(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    text = capsys.readouterr().out
    listed = {word.rstrip(",") for line in text.splitlines() for word in line.split() if word.startswith("--")}
    assert set(FLAGS_OF_SERVE) <= listed
    assert not [flag for flag in SCRIPTED_FLAGS if flag in text]
    headings = [line.split()[0] for line in text.splitlines() if line.endswith(" settings:")]
    assert headings == [s for s in SECTIONS if s != "testing"]


def test_the_hidden_scripted_flags_still_parse() -> None:
    parser, fields = cli.build_parser()
    settings = cli.settings_from_args(parser.parse_args(["serve", "--llm", "scripted", "--scripted_replies", "X"]),
                                      fields)
    assert settings.testing.replies == ["X"]


def test_the_defaults_go_round_flat_and_back() -> None:
    defaults = flat_settings(ServerSettings())
    assert list(defaults) == list(FLAT_FIELDS)
    assert settings_from_flat(defaults) == ServerSettings()
    assert flat_settings(settings_from_flat(defaults)) == defaults
    assert flat_settings(ServerSettings(), exclude_defaults=True) == {}


_SAMPLES: dict[str, st.SearchStrategy[Any]] = {
    "port": st.integers(1, 65535), "num_pipelines": st.integers(1, 64) | st.just("auto"),
    "thresh": st.floats(0.0, 1.0), "min_silence_ms": st.integers(0, 5000),
    "turn_detector": st.sampled_from(["smart-turn", "silence"]), "turn_pause_ms": st.integers(32, 2000),
    "stt_model": st.none() | st.text(min_size=1, max_size=8), "stt_beam_size": st.integers(1, 8),
    "llm_model": st.none() | st.text(min_size=1, max_size=8), "chat_size": st.integers(1, 50),
    "init_chat_prompt": st.text(max_size=20), "temperature": st.floats(0.0, 2.0),
    "tts_voice": st.none() | st.text(min_size=1, max_size=8), "enable_visemes": st.booleans(),
    "max_event_bytes": st.integers(1024, 2**30), "scripted_replies": st.none() | st.lists(st.text(max_size=5)),
}


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({}, optional=_SAMPLES))
def test_any_flat_values_go_round_and_back(values: dict[str, Any]) -> None:
    settings_ = settings_from_flat(values)
    assert flat_settings(settings_) == {**flat_settings(ServerSettings()), **values}
    assert settings_from_flat(flat_settings(settings_)) == settings_
    assert flat_settings(settings_.updated(**values)) == flat_settings(settings_)


@pytest.mark.parametrize("values", [{"prot": 80}, {"stt": {"modle": "x"}}, {"llm_modle": "x"}, {"turns": {"x": 1}}])
def test_an_unknown_key_is_refused(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        settings_from_flat(values)
    with pytest.raises(ValueError, match="unknown setting"):
        ServerSettings().updated(prot=80)


def test_a_bad_value_is_named_by_its_flat_name(tmp_path: Path, capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli.main(["serve", "--stt_beam_size", "0"])
    assert "stt_beam_size: Input should be greater than or equal to 1" in capsys.readouterr().err


def test_each_backend_is_given_its_own_section() -> None:
    with running_unit(stt_model="tiny", turn_pause_ms=96) as unit:
        stages = unit.stages
        assert type(stages.vad.settings) is VADSettings
        assert stages.vad.turn_settings.pause_ms == 96
        assert type(stages.stt.settings) is STTSettings
        assert stages.stt.settings.model == "tiny"
        assert type(stages.llm.settings) is LLMSettings
        assert type(stages.tts.settings) is TTSSettings
        assert type(stages.tts.testing) is TestingSettings  # type: ignore[attr-defined]
