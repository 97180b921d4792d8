"""No dead air: a short preamble when the user would otherwise wait in silence for the reply.

Two waits get one. A reply that reaches a tool call with nothing said is
given the session's phrase to say first (the LLM stage says it in order
before the call: pipeline/messages/generation.py ``GenerateResponseRequest.preamble``),
since its answer needs the tool and a second pass of the model. And a reply
whose model has produced nothing ``preamble_after_ms`` after the user's turn
ended (a slow first token, a listing still under way) gets one from
:class:`PreambleTimer`; the output processor says it only if nothing of the
reply was said or is on its way, so it can never cut into the answer. The
wait is the user's: from the end of their speech, not from the end of the
turn (which the VAD decides a silence later, 0.3-0.6 s). What comes after
the preamble, while the reply still waits, is realtime/tools/holding.py's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from speech_to_speech.pipeline.messages.generation import Preamble
from speech_to_speech.realtime.conversation.response import ResponseState
from speech_to_speech.units.unit import PipelineUnit

# A few short phrases per language, taken in turn so the same words do not come back every time.
PHRASES: dict[str, tuple[str, ...]] = {
    "en": ("Let me check that.", "One moment.", "Let me look that up."),
    "fr": ("Je vérifie.", "Un instant.", "Je regarde ça."),
    "es": ("Déjame comprobarlo.", "Un momento.", "Voy a mirarlo."),
    "de": ("Ich schaue kurz nach.", "Einen Moment.", "Ich sehe nach."),
    "it": ("Controllo subito.", "Un momento.", "Verifico."),
    "pt": ("Deixa-me verificar.", "Um momento.", "Vou ver isso."),
    "nl": ("Ik kijk even.", "Een moment.", "Ik zoek het op."),
    "ja": ("確認します。", "少々お待ちください。", "調べてみます。"),
    "zh": ("我查一下。", "请稍等。", "让我看看。"),
}
# Said later in the same wait, when it goes on after the preamble (realtime/tools/holding.py): the user was
# told already, so these only say the line is alive; none promises how long is left.
HOLDING: dict[str, tuple[str, ...]] = {
    "en": ("Still checking.", "Just a moment more.", "Thanks for waiting."),
    "fr": ("Je cherche encore.", "Encore un petit instant.", "Merci de patienter."),
    "es": ("Sigo buscando.", "Un momento más.", "Gracias por esperar."),
    "de": ("Ich suche noch.", "Noch einen kleinen Moment.", "Danke für die Geduld."),
    "it": ("Sto ancora controllando.", "Ancora un attimo.", "Grazie per l'attesa."),
    "pt": ("Ainda estou a verificar.", "Só mais um momento.", "Obrigado pela espera."),
    "nl": ("Ik ben nog aan het zoeken.", "Nog een momentje.", "Bedankt voor het wachten."),
    "ja": ("まだ確認しています。", "もう少々お待ちください。", "お待たせしております。"),
    "zh": ("我还在查。", "请再稍等一下。", "谢谢您的耐心等待。"),
}


def _in_language(phrases: dict[str, tuple[str, ...]], language: str | None, turn: int) -> str:
    options = phrases.get((language or "en").split("-")[0].lower(), phrases["en"])
    return options[turn % len(options)]


def phrase(language: str | None, turn: int) -> str:
    """The preamble for the ``turn``-th request of a conversation, in its language (English if unknown)."""
    return _in_language(PHRASES, language, turn)


def holding_phrase(language: str | None, turn: int) -> str:
    """The ``turn``-th holding phrase of a conversation, in its language (English if unknown)."""
    return _in_language(HOLDING, language, turn)


class PreambleTimer:
    """Says a preamble when a submitted response has produced nothing by ``after_ms`` past its start."""

    def __init__(self, unit: PipelineUnit, active: Callable[[], ResponseState | None],
                 after_ms: Callable[[], int | None], language: Callable[[], str | None],
                 on_said: Callable[[ResponseState], None] = lambda response: None) -> None:
        """``on_said``: told each response it asked a preamble for (the wait after it is watched too)."""
        self._unit = unit
        self._active = active
        self._after_ms = after_ms
        self._language = language
        self._on_said = on_said
        self._timer: asyncio.TimerHandle | None = None
        self._said = 0

    def arm(self, response: ResponseState) -> None:
        """Watch ``response`` (just submitted to the model): the wait is counted from the moment the user
        stopped speaking, the user's own silence (a spoken turn's), else from the response's creation."""
        after = self._after_ms()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if after is None or response.marks.get("first_audio_sent") is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # driven step by step with no event loop (testing/stepped.py): no clock to wait on
        since = response.marks.get("speech_end") or response.marks.get("created", time.monotonic())
        due = since + after / 1000.0 - time.monotonic()
        self._timer = loop.call_later(max(0.0, due), self._fire, response, response.generation)

    def _fire(self, response: ResponseState, generation: int) -> None:
        self._timer = None
        if self._active() is not response or response.generation != generation:
            return  # it ended, or was asked again in a new generation
        if response.message is not None or "first_audio_sent" in response.marks:
            return  # something is being said already
        if self._unit.cancel_scope.is_stale(generation):
            return
        self._said += 1
        language = self._language()
        self._unit.say_preamble(Preamble(response.id, generation, phrase(language, self._said), language=language))
        self._on_said(response)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
