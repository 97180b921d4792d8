"""The summary of ``bench conversation``: pure functions over its per-turn samples.

Does the conversation slow down as it grows? The p50 of end of speech ->
first audio over turns 2–6 (turn 1 pays for the instructions) against the
p50 over the last five turns of each conversation, and their ratio; the
prompt tokens the LLM read per turn say why. Does it remember and answer
right? Recall rate over the recall turns, accuracy over every scored turn
(an unanswered one is wrong), and per kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from speech_to_speech.bench.stats import summarize, summarize_fields
from speech_to_speech.bench.turns import FIGURES, LATENCY

EARLY = (2, 6)  # the turns the conversation starts from (the first reads the instructions too)
LAST = 5  # the turns it ends with
EARLY_MS = "turns_2_to_6_ms"
LAST_MS = "last_five_turns_ms"
RATIO = "last_five_to_turns_2_to_6"
TOKENS = "prompt_tokens_read"


def _by_conversation(samples: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        grouped.setdefault(str(sample["conversation"]), []).append(sample)
    return {name: sorted(turns, key=lambda s: int(s["turn"])) for name, turns in grouped.items()}


def early(turns: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in turns if EARLY[0] <= int(s["turn"]) <= EARLY[1]]


def last(turns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last five turns of one conversation (ordered by turn)."""
    return list(turns[-LAST:])


def ratio(later: float | None, earlier: float | None) -> float | None:
    return round(later / earlier, 3) if later is not None and earlier else None


def share(oks: Sequence[bool]) -> dict[str, Any]:
    """Right of n, and the rate (None of none)."""
    return {"right": sum(oks), "n": len(oks), "rate": round(sum(oks) / len(oks), 3) if oks else None}


def _scored(turns: Iterable[dict[str, Any]], kind: str | None = None) -> list[bool]:
    return [bool(s["right"]) for s in turns if s["right"] is not None and (kind is None or s["kind"] == kind)]


def slowdown(turns: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The early and late latency blocks of ``turns`` (one conversation's, or every one's pooled) and the
    ratio of their p50s."""
    grouped = _by_conversation(turns)
    start = summarize(s.get(LATENCY) for c in grouped.values() for s in early(c))
    end = summarize(s.get(LATENCY) for c in grouped.values() for s in last(c))
    return {EARLY_MS: start, LAST_MS: end, RATIO: ratio(end["p50"], start["p50"])}


def conversation_figures(turns: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One conversation's headline: answered, early and late p50, their ratio, tokens read, recall, accuracy."""
    slow = slowdown(turns)
    return {"turns": len(turns), "answered": sum(1 for s in turns if s["answered"]),
            "turns_2_to_6_p50_ms": slow[EARLY_MS]["p50"], "last_five_p50_ms": slow[LAST_MS]["p50"],
            RATIO: slow[RATIO], "prompt_tokens_read_p50": summarize(s.get(TOKENS) for s in turns)["p50"],
            "recall_rate": share(_scored(turns, "recall"))["rate"], "accuracy": share(_scored(turns))["rate"]}


def summarize_conversations(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a run: latency early and late, tokens read, recall, accuracy, and per conversation."""
    grouped = _by_conversation(samples)
    answered = sum(1 for s in samples if s["answered"])
    recall, scored = share(_scored(samples, "recall")), share(_scored(samples))
    kinds = sorted({str(s["kind"]) for s in samples if s["right"] is not None})
    return {
        **summarize_fields(samples, FIGURES),
        **slowdown(samples),
        TOKENS: summarize(s.get(TOKENS) for s in samples),
        "conversations": len(grouped),
        "turns": len(samples),
        "answered": answered,
        "answered_rate": round(answered / len(samples), 3) if samples else None,
        "unanswered": [f"{s['conversation']} turn {s['turn']}" for s in samples if not s["answered"]],
        "double_answers": sum(1 for s in samples if s["double"]),
        "taken_back": sum(int(s.get("taken_back", 0)) for s in samples),
        "errors": sum(1 for s in samples if "error" in s),
        "recall": recall,
        "recall_rate": recall["rate"],
        "scored": scored,
        "accuracy": scored["rate"],
        "by_kind": {kind: share(_scored(samples, kind)) for kind in kinds},
        "per_conversation": {name: conversation_figures(turns) for name, turns in grouped.items()},
    }
