"""A unit tells its LLM which languages its voice speaks, so a local model writes what the voice can say."""

from __future__ import annotations

from speech_to_speech.llm.base import LLMHandler
from speech_to_speech.pipeline.handler import SpeechLanguageCapabilities
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.testing.engine import scripted_builders, scripted_settings, stage
from speech_to_speech.testing.scripted import ScriptedTTS
from speech_to_speech.units.unit import PipelineUnit


class EnglishVoice(ScriptedTTS):
    @property
    def language_capabilities(self) -> SpeechLanguageCapabilities:
        return SpeechLanguageCapabilities(languages=("en",), supports_language_selection=False)


def _llm(unit: PipelineUnit) -> LLMHandler:
    return unit.stages.llm


def request(*modalities: str) -> GenerateResponseRequest:
    return GenerateResponseRequest("r", 0, (), output_modalities=modalities)


def test_the_llm_knows_an_english_voice() -> None:
    settings = scripted_settings()
    llm = _llm(PipelineUnit(0, scripted_builders(settings, tts=stage(EnglishVoice, settings))))
    assert llm.voice_languages == ("en",)
    assert llm.speaks_in_latin_script(request("audio"))
    assert not llm.speaks_in_latin_script(request("text"))  # nothing is spoken


def test_a_voice_of_unknown_languages_restricts_nothing() -> None:
    llm = _llm(PipelineUnit(0, scripted_builders()))
    assert llm.voice_languages is None and not llm.speaks_in_latin_script(request("audio"))


def test_a_deployment_declaration_counts_over_the_backend() -> None:
    settings = scripted_settings(tts_supported_languages=["ja"])
    builders = scripted_builders(settings, tts=stage(EnglishVoice, settings))
    # What the factory gives each unit it builds: the languages declared for the TTS.
    llm = _llm(PipelineUnit(0, builders, voice_languages=settings.tts.supported_languages))
    assert not llm.speaks_in_latin_script(request("audio"))
