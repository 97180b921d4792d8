"""Speech over the assistant's answer: a listener's remark, or a bid for the turn?

People talk over a speaking assistant for two reasons: to show they are
listening ("yeah", "mm-hm", "I see", a laugh, a cough) or to take the turn
("wait", "stop", "no, I meant …", a question). Duration alone cannot tell
"okay" from "stop"; the words can, and an STT pass on a quarter second of
speech already has them. A hum has no words: Whisper spells it as some word
("No.", "Let's..."), but the STT also says how nearly as likely it found a
hum itself (the hum gap), and that decides. Pure functions of what was heard
and how long it was voiced; the service applies them
(realtime/conversation/overlap_judge.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from speech_to_speech.pipeline.messages.transcription import Readings, SecondReading
from speech_to_speech.protocol.overlap_decisions import (
    ACKNOWLEDGE,
    BACKCHANNEL,
    BARGE_IN,
    INTERRUPTION,
    LONG_OVERLAP,
    OverlapAction,
    OverlapReason,
)
from speech_to_speech.turns.listener_lexicon import (
    FILLER_SPELLINGS,
    INTENSIFIERS,
    LEAD_INS,
    LISTENER_PHRASES,
    NAMING,
    STOPS,
    TURN_CUES,
)

_PHRASE_LENGTHS = tuple(range(max(map(len, LISTENER_PHRASES)), 0, -1))  # longest first
# Hums and laughs, however many letters: "mmm", "mhm", "hmmm", "mm-hmm" written as one word; "haha", "heh".
_HUM = re.compile(r"^(?:u?h?m+h?m*|h+m+|m+h+m+)$")
_LAUGH = re.compile(r"^(?:h+[ae]+){2,}h?$|^ha+h$|^he+h$")
# Whisper writes sounds it hears but cannot spell as annotations: "(laughs)", "[coughing]", "*sighs*", "♪".
_ANNOTATION = re.compile(r"\([^)]*\)|\[[^\]]*\]|\*[^*]*\*|♪")
_WORD = re.compile(r"[a-z']+")
# Whisper writes a hummed or sung sound it cannot spell as open syllables, often repeated: "A- A- A-",
# "La-la-la-", "Mama? Mama?" (bench room heard these for "uh-huh" and "mm-hmm"). Alone they are no words.
_BABBLE = re.compile(r"^(?:[bdhlmn]?a)+$")
# More listener words than this in one breath is someone talking, whatever the words.
MAX_REMARK_WORDS = 6
# Whisper (tiny.en) spells a hum it cannot place as a word, and is unsure of it: "mm-hmm" came out "Mama"
# (mean log-probability -0.72 to -0.79), "uh-huh" "It's her." (-0.82 to -1.44), "hmm" "Hama" (-1.59), where
# short real words over the answer scored -0.03 to -0.67, except some cut a quarter second in ("Wait." and
# "What about" -0.82, "For much" for "Remind" -0.99): so few words this unsure are not yet a bid for the turn
# (the next pass, on more speech, decides), and at the utterance's end they are a sound, not words.
UNSURE_LOGPROB = -0.7
UNSURE_MAX_WORDS = 3
# A reading of the same speech as a listener's this close (mean log-probability) to the best one makes the
# best one's other words unsure: tiny.en heard "Cool." as "Come on." (-0.44) with "C'mon." at -0.72 and
# "uh-huh" as "It has..." with a reading "Uh-huh" close behind. Chosen on bench room's own listener words and
# interruptions (19 of 20 remarks heard as remarks at 0.5 and 0.8, up from 18; every interruption still one).
READING_MARGIN = 0.8
# A hum the STT spelled as words: one or two words (once each), with one of Whisper's spellings of a hum
# nearly as likely a reading of the same speech (within this many nats: see stt.whisper_window.Decoded.hum_gap),
# or any words it found less likely than a hum. tiny.en wrote hibari's hums as "No.", "Hello?", "Let's..." or
# "Yeah." (gap 0-10 nats; 14 % of 280 hums, cut at seven onsets and two levels, were a bid by their words);
# real interruptions left every hum 1.7 nats behind or more on a pass, and 8 or more on a whole utterance. At
# 5, 266 of those 280 hums were remarks (248 without) and all 456 interruptions kept their verdicts; at 7, two
# were lost.
HUM_GAP = 5.0
HUM_MAX_WORDS = 2

# Bids open with a stop, a question, a request or a correction: words with none of TURN_CUES and no question mark
# make no bid (the next pass decides; at the utterance's end they are a remark). Listeners react to what they hear
# in words of their own ("Right, the Sherpas.", "Huh, rye flour.", "Ooh, brutal cold."), and tiny.en spells
# their sounds as such words ("Come on." and "Climb." for "Cool.", "Rate rate" for "Right, right."). Only the
# words beside the listener's phrases that open or end them count: "Oh no, that many" holds no correction.
# Words to the assistant ("You already told that part.", "You're repeating yourself.") are a bid: "you" and two
# words or more. Whisper also writes "you" for a breath or an "ooh": "You, wow." is still a remark, and "You brutal
# cold." for "Ooh, brutal cold." a bid, the price (sets 7-35: it cut 5 of 1,244 remarks and kept 2 interruptions).
_TO_YOU = frozenset({"you", "you're", "you've", "you'll", "you'd"})
# The starts of listener phrases, which wait for the next word; not "No" or "Not", though they may go on to "no
# way" or "not again": they are decided at once, as "No, I meant…" and "That's not what I asked." are corrections.
_AT_ONCE = frozenset({"no", "not"})
_STARTS = frozenset(phrase[:n] for phrase in LISTENER_PHRASES for n in range(1, len(phrase))
                    if phrase[0] not in _AT_ONCE)


class Heard(Enum):
    """What the words of speech over the answer are."""

    NOTHING = "nothing"  # no words: a cough, a laugh, a breath, a click
    LISTENER = "listener"  # listener words only
    LISTENER_SO_FAR = "listener_so_far"  # listener words and the start of another ("I", "got", "uh")
    UNSURE = "unsure"  # a few words the STT was unsure of: a hum or a laugh spelled as a word, or not yet
    TURN = "turn"  # anything else: the user is taking the turn


_REMARKS = frozenset({Heard.NOTHING, Heard.LISTENER, Heard.LISTENER_SO_FAR})
_LISTENERS = frozenset({Heard.LISTENER, Heard.LISTENER_SO_FAR})
# Listener words take longer than the cap now and then: a laugh, a pause, then the assessment ("Ha! ...
# Brilliant.", "Ha ha, that's great.": 1.2-1.5 s voiced in bench room's voices), or a detail said back ("Okay,
# admin page, yep.", "Oh, that's a long train ride.": 1.3-1.6 s, sets 20 and 22). While the latest pass heard a
# listener's words, or a few words with no bid's word, the cap on speech over the answer is this many times
# longer; any bid's word still takes the turn the moment it is heard, and more than MAX_REMARK_WORDS words are
# a turn whatever they are. Sounds without words keep the cap as it is.
LISTENER_CAP = 2
_LONGER_CAP = _LISTENERS | {Heard.UNSURE}
# Readings that make no bid for the turn: a remark, or a few words with no bid's word ("Huh." beside "Huh?").
_NO_BID = _REMARKS | {Heard.UNSURE}


def words_of(text: str) -> tuple[str, ...]:
    """The normalised words of a transcript, without Whisper's annotations of non-speech sounds."""
    text = _ANNOTATION.sub(" ", text.lower()).replace("-", " ").replace("\u2019", "'")
    return tuple(_WORD.findall(text))


def heard_as(text: str, avg_logprob: float | None = None, readings: Readings = (),
             hum_gap: float | None = None) -> Heard:
    """Classify a transcript (cumulative: the speech so far) of speech over the assistant's answer, given how
    sure the STT was of its words (mean log-probability; None: unknown, taken as sure), its other readings
    of the same speech (most likely first) and how much less likely it found a hum (None: not measured)."""
    if hummed(text, hum_gap):
        return Heard.LISTENER
    heard = _heard_as(text, avg_logprob)
    if heard is not Heard.TURN or avg_logprob is None or _cued(words_of(text)):
        return heard
    # Words with no bid's word, where the STT was nearly as ready to hear a remark or fewer words: not yet a bid.
    close = (reading for reading, logprob in readings if avg_logprob - logprob <= READING_MARGIN)
    return Heard.UNSURE if any(_heard_as(reading, None) in _NO_BID for reading in close) else heard


def heard_so_far(text: str, avg_logprob: float | None = None, readings: Readings = (),
                 hum_gap: float | None = None) -> Heard:
    """``heard_as`` for a pass on speech that goes on (a probe). Its last word may be cut off, marked ("Oh,
    that's what..." was "Oh, that's lovely.", blind set 14) or not ("Whoa, that's why" was "Whoa, that's
    wild.", set 21). Where the words before it make no bid, the next pass, on more speech, decides (at the
    utterance's end, its own pass); a word that stops the answer whole ("Okay, stop") or a "no" is not waited on."""
    heard = heard_as(text, avg_logprob, readings, hum_gap)
    words = words_of(text)
    if heard is not Heard.TURN or len(words) < 2 or words[-1] in STOPS | _AT_ONCE:
        return heard
    before = heard_as(" ".join(words[:-1]), avg_logprob)
    return Heard.LISTENER_SO_FAR if before in _NO_BID else heard


def undecided(text: str, avg_logprob: float | None = None, readings: Readings = (),
              hum_gap: float | None = None) -> bool:
    """Whether these words of a whole utterance over the answer decide nothing by themselves (a few words the
    STT was unsure of, or with no bid's word), so that a second reading of the speech is worth its cost."""
    return heard_as(text, avg_logprob, readings, hum_gap) is Heard.UNSURE


def takes_turn(text: str, avg_logprob: float | None, readings: Readings, *, final: bool) -> bool:
    """Whether these words by themselves take the turn: at the utterance's end (``final``) or on a probe. Only
    there can a hum reading of the same speech change the verdict (see ``hummed``)."""
    return (heard_as if final else heard_so_far)(text, avg_logprob, readings) is Heard.TURN


def hummed(text: str, hum_gap: float | None) -> bool:
    """Whether the words are a hum the STT spelled as words: it found a hum nearly as likely (see HUM_GAP)."""
    if hum_gap is None:
        return False
    return hum_gap <= 0.0 or (hum_gap <= HUM_GAP and len(_once_each(words_of(text))) <= HUM_MAX_WORDS)


def reread(remark: tuple[str, ...] | None, text: str, heard: Heard, second: SecondReading | None = None) -> Heard:
    """The whole utterance's words (``text``, heard as ``heard``), where an earlier pass on its start heard
    listener words (``remark``; None: none did). A final pass that hears a few other words in their place
    ("Right, right." three times, then "Rate rate.") read the same sound anew: a remark still, unless they
    hold a bid's word or a question. Words that go on from the remark ("Okay, stop.") take the turn.
    ``second``: a larger model's reading of the same speech, if it was asked for one (see ``undecided``):
    where it is sure of a bid ("Pause.", where the STT heard "Pies."), the words it left undecided are one; so
    are words it left undecided that hold a word that stops the answer (``STOPS``)."""
    if heard is Heard.UNSURE and second is not None and _sure_bid(*second):
        return Heard.TURN
    words = words_of(text)
    if heard is Heard.UNSURE and any(_stop_word(word) for word in words):
        # a word that stops the answer by itself, in the whole utterance's reading: over a loud echo tiny.en
        # read "Cancel that." at a mean log-probability of -0.78 to -0.98 (-0.61 clean), and it played on
        return Heard.TURN
    if heard is Heard.LISTENER_SO_FAR and asked(text) and set(words) <= LEAD_INS | INTENSIFIERS and \
            TURN_CUES.intersection(words):
        return Heard.TURN  # nothing followed the lead-in, a question word, and it was asked: "How?", "How so?"
    if heard is not Heard.TURN or remark is None or len(words) > UNSURE_MAX_WORDS:
        return heard
    if asked(text) or TURN_CUES.intersection(words):
        return heard  # a bid's words or a question: "Hmm, no." heard as "Hmm", then as "Who number?"
    return heard if words[:len(remark)] == remark else Heard.UNSURE


def _stop_word(word: str) -> bool:
    """A word of ``STOPS``, or one of them with an ending Whisper gave it: "Cancel that." read "cancelled at"."""
    return word in STOPS or any(word.endswith(end) and word[:-len(end)] in STOPS for end in _ENDINGS)


_ENDINGS = ("led", "ped", "ping", "ting", "ed", "ing", "d", "s")  # (a doubled consonant: "stopped")


def asked(text: str) -> bool:
    """Whether the words end in a question: "Huh? That's great." is a reaction, "Wait, why?" a question."""
    return _ANNOTATION.sub(" ", text).rstrip(" .…").endswith("?")


def _sure_bid(text: str, avg_logprob: float) -> bool:
    """Whether a second reading is a bid for the turn, and one its model was sure of."""
    words = words_of(text)
    spelled = any(len(w) == 1 and w not in ("i", "a") for w in words)  # "R I C" for "Ah, I see.": a sound
    return avg_logprob >= UNSURE_LOGPROB and not spelled and _heard_as(text, avg_logprob) is Heard.TURN and (
        asked(text) or _cued(words))


def _once_each(words: tuple[str, ...]) -> tuple[str, ...]:
    """``words`` with a word, or a phrase of up to three, said again at once counted once: on a short stretch
    Whisper loops ("left left left left" for a hummed "Mm.", "I love it. I love it. I love" for "I love
    that."; bench room's second held-out set and blind set 13), and a loop is what was heard once."""
    kept: list[str] = []
    for word in words:
        kept.append(word)
        for n in (1, 2, 3):
            if len(kept) >= 2 * n and kept[-n:] == kept[-2 * n:-n]:
                del kept[-n:]
                break
    return tuple(kept)


def _cued(words: tuple[str, ...]) -> bool:
    """Whether ``words`` hold a bid's word (past a first word that may be a filler: "I'm wait." is a bid)."""
    return bool(TURN_CUES.intersection(words[1:] if words[:1] and words[0] in FILLER_SPELLINGS else words))


def _starts_phrase(words: tuple[str, ...]) -> bool:
    return any(words[:n] in LISTENER_PHRASES for n in _PHRASE_LENGTHS)


def _beside_phrases(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words beside the listener's phrases that open and end ``words`` (all of them where neither end is
    one): "Okay, admin page, fair enough." is "admin page"."""
    opening = next((n for n in _PHRASE_LENGTHS if n < len(words) and words[:n] in LISTENER_PHRASES
                    and words[:n] != ("you",)), 0)  # Whisper's breath, and the pronoun bids open with
    rest = words[opening:]
    ending = next((n for n in _PHRASE_LENGTHS if n < len(rest) and rest[-n:] in LISTENER_PHRASES), 0)
    return rest[:len(rest) - ending]


def _heard_as(text: str, avg_logprob: float | None) -> Heard:
    # A laugh is no word; a hum ("mhm", "hmmm") is a listener's, however Whisper spells it.
    said = tuple("hm" if _HUM.match(w) else w for w in words_of(text)
                 if not _LAUGH.match(w) and ((w,) in LISTENER_PHRASES or not _BABBLE.match(w)))
    words = _once_each(said)
    heard = _classify(words, asked(text), avg_logprob)
    if heard is Heard.TURN and words != said and len(words) <= MAX_REMARK_WORDS and \
            _remark_from(said, 0, named=not asked(text)) is Heard.LISTENER:
        return Heard.LISTENER  # not a loop: two phrases meet on one word ("Sounds good, good for her.")
    if heard is not Heard.TURN or not words or words[0] not in FILLER_SPELLINGS or len(words) > MAX_REMARK_WORDS:
        return heard  # more words than a remark's are someone talking, a filler among them or not
    # The first word may be a filler Whisper spelled as a word: it is no bid if the rest is none.
    rest = _classify(words[1:], asked(text), avg_logprob) if len(words) > 1 else Heard.LISTENER_SO_FAR
    return Heard.UNSURE if rest in (Heard.LISTENER, Heard.UNSURE, Heard.NOTHING) else rest


def _classify(words: tuple[str, ...], question: bool, avg_logprob: float | None) -> Heard:
    if not words:
        return Heard.NOTHING
    if len(words) > MAX_REMARK_WORDS:
        return Heard.TURN
    remark = _remark_from(words, 0, named=not question)
    if remark is not None:
        return remark
    unsure = avg_logprob is not None and avg_logprob < UNSURE_LOGPROB and len(words) <= UNSURE_MAX_WORDS
    rest = _beside_phrases(words)
    to_you = len(rest) >= 3 and rest[0] in _TO_YOU
    uncued = not question and not to_you and not TURN_CUES.intersection(rest)  # see _TO_YOU
    return Heard.UNSURE if unsure or uncued else Heard.TURN


def _leads_in(words: tuple[str, ...], at: int) -> bool:
    """Whether ``words[at]`` may open a listener's assessment: a lead-in, or an intensifier after one."""
    return words[at] in LEAD_INS or (at > 0 and words[at - 1] in LEAD_INS | INTENSIFIERS and words[at] in INTENSIFIERS)


def _remark_from(words: tuple[str, ...], at: int, *, named: bool = True) -> Heard | None:
    """LISTENER where ``words[at:]`` is a run of listener phrases, LISTENER_SO_FAR where it may become one with
    the next word, else None. Every way of splitting it is tried: "Oh, no kidding." is "oh" and "no kidding",
    though "oh no" is a phrase too. ``named``: a word of NAMING may end it with what it names (not where the
    words are asked: "Nice weather tomorrow?" is a question)."""
    if at == len(words):
        return Heard.LISTENER
    steps = [n for n in _PHRASE_LENGTHS if at + n <= len(words) and words[at:at + n] in LISTENER_PHRASES]
    if not steps and _leads_in(words, at):
        if at + 1 == len(words):
            return Heard.LISTENER_SO_FAR  # "I'm", "How", "That's so": the next word says which
        rest = words[at + 1:]
        steps = [1] if _starts_phrase(rest) or rest[0] in LEAD_INS | INTENSIFIERS | NAMING or rest in _STARTS else []
    if named and words[at] in NAMING:  # "Poor little seagull.", "Neat trick.": whoever or whatever it is
        steps += [n for n in (2, 3) if at + n == len(words) and not TURN_CUES.intersection(words[at + 1:])]
    found = [_remark_from(words, at + n, named=named) for n in steps]
    if Heard.LISTENER in found:
        return Heard.LISTENER
    if Heard.LISTENER_SO_FAR in found or words[at:] in _STARTS:
        return Heard.LISTENER_SO_FAR
    return None


# ---------------------------------------------------------------- the decision



@dataclass(frozen=True)
class Verdict:
    action: OverlapAction  # BARGE_IN or ACKNOWLEDGE
    reason: OverlapReason  # INTERRUPTION, LONG_OVERLAP or BACKCHANNEL


def judge(heard: Heard | None, voiced_ms: int, *, final: bool, cap_ms: int) -> Verdict | None:
    """The verdict on speech over the answer, or None while it is undecided.

    ``heard``: what its latest words are (None: no STT pass has come back
    yet); ``voiced_ms``: its voiced span so far; ``final``: ``heard`` is the
    whole utterance's (its final transcript). Anything but listener words is
    a barge-in the moment it is heard, as is anything voiced for ``cap_ms``
    (``LISTENER_CAP`` times that while its latest words are a listener's or
    make no bid);
    a remark is acknowledged only once it is whole.
    """
    if voiced_ms >= cap_ms * (LISTENER_CAP if heard in _LONGER_CAP else 1):
        return Verdict(BARGE_IN, LONG_OVERLAP)
    if heard is Heard.TURN:
        return Verdict(BARGE_IN, INTERRUPTION)
    if final and heard is not None:
        return Verdict(ACKNOWLEDGE, BACKCHANNEL)
    return None
