"""The cutting relay lives in the package now (``speech_to_speech.testing.cutting_relay``)."""

from speech_to_speech.testing.cutting_relay import CuttingRelay

__all__ = ["CuttingRelay"]
