"""ServerSettings: the sections together, and the one table between them and the flat names.

Flags, YAML keys, benchmark files and ``make_server(min_silence_ms=...)``
speak flat names (``stt_model``, ``thresh``); the code reads sections
(``settings.stt.model``, ``settings.vad.thresh``). A field's flat name is its
alias, else its name, so the table :data:`FLAT_FIELDS` is derived from the
sections, never written out: :func:`settings_from_flat` and
:func:`flat_settings` cross it either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from speech_to_speech.settings.server import Device, LimitsSettings, PipelineCount, ServingSettings
from speech_to_speech.settings.stages import LLMSettings, STTSettings, TestingSettings, TTSSettings
from speech_to_speech.settings.tools import ToolSettings
from speech_to_speech.settings.turns import TurnSettings, VADSettings

Section = TypeVar("Section", bound=BaseModel)
# The sections in the order `serve --help` lists them.
SECTIONS: dict[str, type[BaseModel]] = {
    "server": ServingSettings,
    "limits": LimitsSettings,
    "vad": VADSettings,
    "turns": TurnSettings,
    "stt": STTSettings,
    "llm": LLMSettings,
    "tts": TTSSettings,
    "tools": ToolSettings,
    "testing": TestingSettings,
}


def _flat_fields() -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    for section, model in SECTIONS.items():
        for name, info in model.model_fields.items():
            flat = info.alias or name
            if flat in table:
                raise TypeError(f"the flat name {flat!r} is in sections {table[flat][0]!r} and {section!r}")
            table[flat] = (section, name)
    return table


# flat name (a flag, a YAML key) -> (section, field in it): "stt_model" -> ("stt", "model").
FLAT_FIELDS: dict[str, tuple[str, str]] = _flat_fields()
# Settings that are secrets: hidden from repr, left out of benchmark files and logs (flat names).
SECRET_FIELDS = frozenset({"api_key", "stt_api_key", "llm_api_key", "tts_api_key"})
# The scripted handlers' knobs: for tests and benchmarks, so `serve --help` leaves them to `bench --help`.
TEST_ONLY_FIELDS = tuple(flat for flat, (section, _) in FLAT_FIELDS.items() if section == "testing")


def _nested(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with its flat keys put in their sections; a section may also be given whole (a mapping).

    ``stt: moonshine`` is the flat name of the STT backend; ``stt: {model: ...}`` the STT section.
    Keys of neither kind stay where they are, for the model to reject.
    """
    nested: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key in SECTIONS and isinstance(value, Mapping | BaseModel):
            given = value.model_dump(exclude_unset=True) if isinstance(value, BaseModel) else dict(value)
            sections.setdefault(key, {}).update(given)
        elif key in FLAT_FIELDS:
            section, name = FLAT_FIELDS[key]
            sections.setdefault(section, {})[name] = value
        else:
            nested[key] = value
    nested.update(sections)
    return nested


def _defaults(model: type[Section]) -> Callable[[], Section]:
    """A section with its defaults (``model()`` reads to a type checker as missing its aliased arguments)."""
    return lambda: model.model_validate({})


class ServerSettings(BaseModel):
    """Every setting of `serve`/`local`, in sections; built from flat names as well (flags, YAML)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    server: ServingSettings = Field(default_factory=_defaults(ServingSettings))
    limits: LimitsSettings = Field(default_factory=_defaults(LimitsSettings))
    vad: VADSettings = Field(default_factory=_defaults(VADSettings))
    turns: TurnSettings = Field(default_factory=_defaults(TurnSettings))
    stt: STTSettings = Field(default_factory=_defaults(STTSettings))
    llm: LLMSettings = Field(default_factory=_defaults(LLMSettings))
    tts: TTSSettings = Field(default_factory=_defaults(TTSSettings))
    tools: ToolSettings = Field(default_factory=_defaults(ToolSettings))
    testing: TestingSettings = Field(default_factory=_defaults(TestingSettings))

    @model_validator(mode="before")
    @classmethod
    def _sections_from_flat(cls, data: Any) -> Any:
        return _nested(data) if isinstance(data, Mapping) else data

    def updated(self, **flat: Any) -> ServerSettings:
        """A copy with settings of flat names replaced, unvalidated (as ``model_copy(update=...)`` is)."""
        changes: dict[str, dict[str, Any]] = {}
        for key, value in flat.items():
            if key not in FLAT_FIELDS:
                raise ValueError(f"unknown setting {key!r}")
            section, name = FLAT_FIELDS[key]
            changes.setdefault(section, {})[name] = value
        return self.model_copy(
            update={section: getattr(self, section).model_copy(update=values) for section, values in changes.items()}
        )


def settings_from_flat(values: Mapping[str, Any]) -> ServerSettings:
    """Settings from flat names (a section given whole is taken too). Raises pydantic's ValidationError."""
    return ServerSettings.model_validate(values)


def flat_settings(settings: ServerSettings, *, exclude_defaults: bool = False,
                  exclude: Iterable[str] = ()) -> dict[str, Any]:
    """``settings`` as flat names, in the order of the sections (``exclude``: flat names left out)."""
    left_out = set(exclude)
    flat: dict[str, Any] = {}
    for section in SECTIONS:
        dumped = getattr(settings, section).model_dump(by_alias=True, exclude_defaults=exclude_defaults)
        flat.update((key, value) for key, value in dumped.items() if key not in left_out)
    return flat


def flat_location(location: tuple[int | str, ...]) -> str:
    """A validation error's place by its flat name: ``("stt", "stt_beam_size")`` -> ``stt_beam_size``."""
    if len(location) == 2 and location[0] in SECTIONS:
        section, name = location
        model = SECTIONS[str(section)]
        if name in FLAT_FIELDS:
            return str(name)
        info = model.model_fields.get(str(name))
        if info is not None:
            return info.alias or str(name)
    return ".".join(map(str, location))


@dataclass(frozen=True)
class LoadContext:
    """What a backend's loader is told beside its own section: the machine it loads for.

    ``device`` and ``num_pipelines`` are server settings (a loader sizes its worker pool by the units);
    ``testing`` holds the scripted backends' scripts, for tests and benchmarks.
    """

    device: Device = "cpu"
    num_pipelines: PipelineCount = "auto"
    testing: TestingSettings = field(default_factory=_defaults(TestingSettings))

    @classmethod
    def of(cls, settings: ServerSettings) -> LoadContext:
        return cls(settings.server.device, settings.server.num_pipelines, settings.testing)
