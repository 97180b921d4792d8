"""The scripted conversations of ``bench conversation``: their words, their rules, their audio.

A conversation is a list of turns said one after the other in one session
(``conversations.json``, shipped with the package). Each turn has a kind
(:data:`KINDS`) and may have a rule on the answer's transcript: ``any`` (one
of these words or numbers) and ``all`` (every one of them), matched as
:func:`quality_score.contains` matches (whole words, any case, a number in
digits or words). A turn without a rule is said for the conversation's sake
and not scored. The audio is hibari's, cached like the turns corpus
(:mod:`corpus`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.bench import audio, corpus
from speech_to_speech.bench.quality_score import Expected, contains
from speech_to_speech.cache import cache_root

DEFAULT_SCRIPT = Path(__file__).with_name("conversations.json")
# fact: the user says something about themselves; everyday: a request; recall: a fact of an earlier
# turn; follow_up: needs the answer before; correction: changes what the turn before asked.
KINDS = ("fact", "everyday", "recall", "follow_up", "correction")
POINTS_BACK = ("recall", "follow_up", "correction")  # kinds that are about an earlier turn, and scored


@dataclass(frozen=True)
class Rule:
    any_of: tuple[Expected, ...] = ()
    all_of: tuple[Expected, ...] = ()

    @property
    def checkable(self) -> bool:
        return bool(self.any_of or self.all_of)

    def right(self, reply: str) -> bool | None:
        """Whether ``reply`` holds the answer; None for a turn with no rule."""
        if not self.checkable:
            return None
        return ((not self.any_of or any(contains(reply, e) for e in self.any_of))
                and all(contains(reply, e) for e in self.all_of))


@dataclass(frozen=True)
class ScriptedTurn:
    number: int  # 1-based, in its conversation
    kind: str
    text: str
    rule: Rule
    of_turn: int | None = None  # the earlier turn a recall, follow-up or correction is about


@dataclass(frozen=True)
class Conversation:
    name: str
    turns: tuple[ScriptedTurn, ...]


@dataclass(frozen=True)
class Script:
    conversations: tuple[Conversation, ...]
    voiced_s: tuple[float, float]  # every turn's voiced span lies within these bounds


def _expected(values: Any, where: str, problems: list[str]) -> tuple[Expected, ...]:
    if values is None:
        return ()
    if not isinstance(values, list) or not all(isinstance(v, str | int) and not isinstance(v, bool) for v in values):
        problems.append(f"{where}: a rule is a list of words and whole numbers")
        return ()
    return tuple(values)


def _turn(entry: dict[str, Any], number: int, where: str, problems: list[str]) -> ScriptedTurn:
    kind, text, of_turn = entry.get("kind"), entry.get("text"), entry.get("of_turn")
    rule = Rule(_expected(entry.get("any"), where, problems), _expected(entry.get("all"), where, problems))
    if kind not in KINDS:
        problems.append(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{where}: no text")
    if kind in POINTS_BACK and not rule.checkable:
        problems.append(f"{where}: a {kind} turn needs a rule")
    if of_turn is not None and not (isinstance(of_turn, int) and 1 <= of_turn < number):
        problems.append(f"{where}: of_turn {of_turn!r} is not an earlier turn")
    return ScriptedTurn(number, str(kind), str(text), rule, of_turn)


def load_script(path: Path | None = None) -> Script:
    """Read and check a conversations file: unique names, known kinds, rules where a kind needs one."""
    path = path or DEFAULT_SCRIPT
    raw = json.loads(path.read_text())
    problems: list[str] = []
    conversations = []
    for entry in raw.get("conversations") or []:
        name = str(entry.get("name"))
        turns = tuple(_turn(t, number, f"{name} turn {number}", problems)
                      for number, t in enumerate(entry.get("turns") or [], start=1))
        if not turns:
            problems.append(f"{name}: no turns")
        conversations.append(Conversation(name, turns))
    names = [c.name for c in conversations]
    problems += [f"{n}: the name is used twice" for n in sorted({n for n in names if names.count(n) > 1})]
    if not conversations:
        problems.append("no conversations")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    low, high = (float(v) for v in raw["voiced_s"])
    return Script(tuple(conversations), (low, high))


def _synthesize(texts: list[str], rate: int) -> list[audio.Samples]:
    return audio.synthesize(texts, rate)  # looked up at call time, so a test can stand in for the voice


def clips(script: Script, conversations: Sequence[Conversation], cache_dir: Path | None = None
          ) -> dict[str, list[audio.Speech]]:
    """Every turn of ``conversations`` as a clip (synthesised once, then read from the cache), by conversation."""
    spoken = corpus.Corpus(
        requests=tuple(corpus.Request(f"{c.name}-{t.number:02d}", t.text, (corpus.Segment(t.text, 0),))
                       for c in conversations for t in c.turns),
        voiced_s=script.voiced_s, max_pause_ms=0)
    folder = cache_dir or cache_root() / "bench" / "conversation"
    said = iter(corpus.clips(spoken, cache_dir=folder, synthesize=_synthesize))
    return {c.name: [next(said) for _ in c.turns] for c in conversations}


def chosen(script: Script, conversations: int | None, turns: int | None) -> tuple[Conversation, ...]:
    """The first ``conversations`` conversations, each cut to its first ``turns`` turns."""
    return tuple(Conversation(c.name, c.turns[:turns]) for c in script.conversations[:conversations])
