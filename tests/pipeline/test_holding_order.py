"""The output processor's rule for the server's phrases, over random interleavings (hypothesis).

The event loop asks for a preamble or a holding phrase whenever its timers
say (realtime/tools/), so a phrase may reach the processor at any point of a
response's parts. Whatever the order, for each request of the response (its
parts up to its ResponseDone): a preamble is said only first; a holding
phrase never after any of the model's own words of that request were
said or held back for a clause; the model's words all come out, in order;
and nothing at all is said once the response was cancelled.
"""

from __future__ import annotations

import os
import queue
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.lm_output_processor import LMOutputProcessor
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    AssistantToolCallPart,
    Preamble,
    ResponseDone,
)
from speech_to_speech.pipeline.messages.speech_output import TTSInput
from speech_to_speech.pipeline.session_config import ConfigHolder

CI_EXAMPLES = int(os.environ.get("S2S_PROPERTY_EXAMPLES", "400"))
PREAMBLE, HOLDING = "Let me check that.", "Still checking."
WORDS = ["alpha ", "beta. ", "gamma, ", "delta! ", " ", "\n"]  # the model's (never a phrase of ours)

STEPS = st.one_of(
    st.tuples(st.just("text"), st.sampled_from(WORDS)),
    st.tuples(st.just("preamble"), st.just(PREAMBLE)),
    st.tuples(st.just("holding"), st.just(HOLDING)),
    st.tuples(st.just("call"), st.just("")),
    st.tuples(st.just("done"), st.just("")),
    st.tuples(st.just("cancel"), st.just("")),
)


def run(steps: list[tuple[str, str]]) -> list[tuple[list[str], list[Any]]]:
    """Feed one response's parts (and cancels) to a processor; per request, the model text fed and what the
    processor sent on, in order (after a cancel, still under the cancelled generation)."""
    scope = CancelScope()
    processor = LMOutputProcessor(HandlerContext(scope, ConfigHolder(None)), queue.Queue(), None)
    generation = scope.generation
    requests: list[tuple[list[str], list[Any]]] = [([], [])]
    for kind, text in steps:
        fed, out = requests[-1]
        item: Any
        if kind == "cancel":
            scope.cancel()
            continue
        if kind == "text":
            fed.append(text)
            item = AssistantTextPart("r", generation, text)
        elif kind in ("preamble", "holding"):
            item = Preamble("r", generation, text, holding=kind == "holding")
        elif kind == "call":
            item = AssistantToolCallPart("r", generation, "call_1", "look_up", "{}")
        else:
            item = ResponseDone("r", generation)
        out.extend(processor.outputs(item))
        if kind == "done":
            requests.append(([], []))
    return requests


def said(out: list[Any]) -> list[str]:
    return [item.text for item in out if isinstance(item, TTSInput)]


@settings(max_examples=CI_EXAMPLES, deadline=None)
@given(st.lists(STEPS, max_size=40))
def test_phrases_never_cut_into_the_model_s_words(steps: list[tuple[str, str]]) -> None:
    ours = {PREAMBLE + " ", HOLDING + " "}
    for fed, out in run([*steps, ("done", "")]):  # the last request ends too, its held words flushed
        spoken = said(out)
        for position, text in enumerate(spoken):
            if text == PREAMBLE + " ":
                assert position == 0, f"a preamble after something else was said: {spoken}"
            if text == HOLDING + " ":
                # Only ours (or blanks) before it: never after a word of the model's.
                assert all(t in ours or not t.strip() for t in spoken[:position]), f"in the answer: {spoken}"
        if ("cancel", "") not in steps:
            model = [t for t in spoken if t not in ours]
            assert "".join(model).split() == "".join(fed).split()  # every word of the model's, in order


@settings(max_examples=CI_EXAMPLES, deadline=None)
@given(st.lists(STEPS, max_size=40), st.lists(STEPS, min_size=1, max_size=20))
def test_nothing_is_said_after_a_cancel(before: list[tuple[str, str]], after: list[tuple[str, str]]) -> None:
    until_cancel = [text for _, out in run(before) for text in said(out)]
    everything = [text for _, out in run([*before, ("cancel", ""), *after]) for text in said(out)]
    assert everything == until_cancel
