"""Server settings in sections: server, limits, vad, turns, stt, llm, tts, testing.

Flags and YAML keys keep their flat names (``--stt_model``, ``thresh:``);
:data:`FLAT_FIELDS` maps each to its section and field, derived from the
sections' aliases. ``speech_to_speech.config`` re-exports all of it.
"""

from speech_to_speech.settings.model import (
    FLAT_FIELDS,
    SECRET_FIELDS,
    SECTIONS,
    TEST_ONLY_FIELDS,
    LoadContext,
    ServerSettings,
    flat_location,
    flat_settings,
    settings_from_flat,
)
from speech_to_speech.settings.server import Device, LimitsSettings, PipelineCount, ServingSettings
from speech_to_speech.settings.stages import (
    GGUFWeightType,
    LLMBackendName,
    LLMSettings,
    STTSettings,
    TestingSettings,
    TTSSettings,
)
from speech_to_speech.settings.turns import TurnSettings, VADSettings

__all__ = [
    "FLAT_FIELDS",
    "SECRET_FIELDS",
    "SECTIONS",
    "TEST_ONLY_FIELDS",
    "Device",
    "GGUFWeightType",
    "LLMBackendName",
    "LLMSettings",
    "LimitsSettings",
    "LoadContext",
    "PipelineCount",
    "STTSettings",
    "ServerSettings",
    "ServingSettings",
    "TTSSettings",
    "TestingSettings",
    "TurnSettings",
    "VADSettings",
    "flat_location",
    "flat_settings",
    "settings_from_flat",
]
