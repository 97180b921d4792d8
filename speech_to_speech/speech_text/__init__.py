"""Speech text: what the TTS reads, made from what the LLM wrote (see ``normalize``)."""

from speech_to_speech.speech_text.normalize import SpeechText, speakable, speech_text

__all__ = ["SpeechText", "speakable", "speech_text"]
