"""A tool call's JSON held to the offered tools' schemas while a local model writes it (llama.cpp grammars).

A small model decides well enough *whether* to call, but writes the call
badly with a schema it has not seen: a tool name it made up, an argument
the schema does not have, the arguments beside ``"arguments"`` instead of
inside. Such a call fails to parse and its JSON would be read aloud. So the
reply decodes freely until it starts a call (``<tool_call>``, or a reply
that opens with ``{`` or a code fence), and from there under a grammar that admits only
``{"name": <an offered tool>, "arguments": <that tool's schema>}``: the
call that comes out always parses and names a tool that exists. Built with
llama.cpp's JSON-schema converter, the schema's own property order.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from speech_to_speech.llm.tools import CALL_CLOSE, CALL_OPEN, FunctionTool

CallStart = Literal["tagged", "bare"]
_EMPTY = {"type": "object", "properties": {}}


def call_schema(tools: list[FunctionTool]) -> dict[str, Any]:
    """The JSON Schema of one call of any of ``tools``: the name fixed, the arguments its parameters."""
    return {"oneOf": [{
        "type": "object",
        "properties": {"name": {"const": tool.name}, "arguments": _inlined(tool.parameters or _EMPTY)},
        "required": ["name", "arguments"],
    } for tool in tools]}


def _inlined(root: dict[str, Any], depth: int = 8) -> dict[str, Any]:
    """``root`` with its local ``$ref``s (``#/$defs/Party``) replaced by what they name: each tool's refs point
    into its own schema, which is no longer the root once the tools are joined under one ``oneOf``. A
    recursive schema is cut off after ``depth`` levels, as a free-form value."""

    def resolve(node: Any, level: int) -> Any:
        if isinstance(node, list):
            return [resolve(item, level) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            if level >= depth:
                return {}
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            return resolve(target, level + 1)
        return {key: resolve(value, level) for key, value in node.items() if key not in ("$defs", "definitions")}

    inlined = resolve(root, 0)
    return inlined if isinstance(inlined, dict) else _EMPTY


@dataclass(frozen=True)
class CallGrammars:
    """GBNF text of a call after ``<tool_call>`` (``tagged``: ends with the closing tag) and of a bare one."""

    tagged: str
    bare: str


@functools.lru_cache(maxsize=32)
def _grammars(schema_json: str) -> CallGrammars:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    rules = json_schema_to_gbnf(schema_json)
    # The converter names the call's rule "root"; each grammar wraps it under its own root.
    body = rules.replace("root ::=", "call ::=", 1)
    # Its strings admit control characters (a raw line break), which JSON does not: such a call would not parse.
    body = body.replace('char ::= [^"\\\\]', 'char ::= [^"\\\\\\x7F\\x00-\\x1F]', 1)
    tagged = f'root ::= "\\n"? call "\\n"? {json.dumps(CALL_CLOSE)}\n{body}'
    return CallGrammars(tagged=tagged, bare=f"root ::= call\n{body}")


def call_grammars(tools: list[FunctionTool]) -> CallGrammars | None:
    """The grammars of a call of ``tools`` (None: no tools, nothing to hold)."""
    if not tools:
        return None
    return _grammars(json.dumps(call_schema(tools), sort_keys=False))


def call_starts(said: str, piece: str) -> CallStart | None:
    """Whether ``piece``, after ``said``, starts a call: it completes ``<tool_call>`` (and nothing follows it),
    or it is the first thing of the reply and opens a JSON object or a fenced block (the
    1.5B writes its calls as fenced JSON), which a voice never speaks."""
    text = said + piece
    if not said.strip() and piece.lstrip().startswith(("{", "```")):
        return "bare"  # a JSON object, or a fenced block, where a spoken answer would begin: a call
    if CALL_OPEN in text and CALL_OPEN not in said and text.rstrip().endswith(CALL_OPEN):
        return "tagged"
    return None


CALL_PREFIXES = ("{", "```", CALL_OPEN)
LogitsProcessor = Callable[[Any, npt.NDArray[np.float32]], npt.NDArray[np.float32]]


def call_start_tokens(pieces: Iterable[bytes]) -> npt.NDArray[np.intp]:
    """The tokens (by id, ``pieces`` in vocabulary order) that start a call where a reply begins."""
    return np.array([token for token, piece in enumerate(pieces)
                     if piece.decode("utf-8", errors="replace").lstrip().startswith(CALL_PREFIXES)], dtype=np.intp)


def first_token_decides(starts: npt.NDArray[np.intp], threshold: float) -> LogitsProcessor:
    """A logits processor whose first step starts a call when the model gives that ``threshold`` or more, and
    otherwise rules a call out; later steps pass untouched.

    Greedy decoding calls when a call's first token is the likeliest one, and
    that misjudges both ways: the 0.5B's words scatter over many first tokens,
    so ``{"`` won with a third of the probability on "Thanks, that is all"
    (a tool called for nothing), while the 1.5B gave a call 0.14-0.50 on every
    request that needed one and under 0.09 on those that did not, but began
    "To get the time in Tokyo, you can use…" each time (bench tools, tune requests).
    """
    decided = False

    def decide(_ids: Any, scores: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        nonlocal decided
        if decided:
            return scores
        decided = True
        shifted = np.exp(scores.astype(np.float64) - float(np.max(scores)))
        calling = float(shifted[starts].sum() / shifted.sum()) >= threshold
        if calling:
            kept = scores[starts].copy()
            scores[:] = -np.inf
            scores[starts] = kept
        else:
            scores[starts] = -np.inf
        return scores

    return decide



CALL_MARKUP = ("{", "}", "```", CALL_OPEN)


def call_markup_tokens(pieces: Iterable[bytes]) -> npt.NDArray[np.intp]:
    """The tokens (by id, ``pieces`` in vocabulary order) that write any part of a call's markup: braces,
    fences, the tag. A voice never says them."""
    return np.array([token for token, piece in enumerate(pieces)
                     if any(mark in piece.decode("utf-8", errors="replace") for mark in CALL_MARKUP)], dtype=np.intp)


def no_call(markup: npt.NDArray[np.intp]) -> LogitsProcessor:
    """A logits processor that rules out every token of a call's ``markup``, at every step: for the answer to
    a tool's result, which is words to say even with the tools still in its prompt. Ruling out only a
    call's first tokens is not enough: the 0.5B then opened its call with a parenthesis."""

    def words_only(_ids: Any, scores: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        scores[markup] = -np.inf
        return scores

    return words_only
