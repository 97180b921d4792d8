"""Through a whole unit: the transcript is the model's text, the voice says its spoken form."""

from __future__ import annotations

from speech_to_speech.pipeline.messages.speech_output import TranscriptText
from speech_to_speech.testing.engine import respond, running_unit

MS_PER_CHAR = 10.0
RATE = 24000


def test_the_voice_says_the_spoken_form_and_the_transcript_keeps_the_model_text() -> None:
    reply = "It is **$12**. 🎉"
    with running_unit(scripted_replies=[reply], scripted_tts_ms_per_char=MS_PER_CHAR) as unit:
        record = respond(unit, "resp_spoken")
    assert "".join(t.text for t in record.of_type(TranscriptText)) == reply
    # The scripted TTS speaks MS_PER_CHAR per character of what it is given: "It is twelve dollars."
    expected = len("It is twelve dollars.") * MS_PER_CHAR / 1000 * RATE
    assert abs(len(record.audio) - expected) < RATE * 0.01


def test_a_reply_that_is_only_code_is_shown_but_not_spoken() -> None:
    reply = "```python\nprint(42)\n```"
    with running_unit(scripted_replies=[reply], scripted_tts_ms_per_char=MS_PER_CHAR) as unit:
        record = respond(unit, "resp_code")
    assert "".join(t.text for t in record.of_type(TranscriptText)) == reply
    assert len(record.audio) == 0
    assert record.done.status == "completed"
