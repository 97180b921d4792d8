"""Speech over the assistant's answer: a listener's remark, or a bid for the turn?

People talk over a speaking assistant for two reasons: to show they are
listening ("yeah", "mm-hm", "I see", a laugh, a cough) or to take the turn
("wait", "stop", "no, I meant …", a question). Duration alone cannot tell
"okay" from "stop"; the words can, and an STT pass on a quarter second of
speech already has them. Pure functions of what was heard and how long it was
voiced; the service applies them (realtime/conversation/overlap_judge.py).
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

# What listeners say while someone else talks, as normalised words (lowercase, no punctuation, hyphens
# split: "Mm-hmm." is ("mm", "hmm")). A remark is any run of these ("yeah, yeah", "oh, okay, I see").
LISTENER_PHRASES: frozenset[tuple[str, ...]] = frozenset(tuple(p.split()) for p in (
    "yeah", "yea", "yeh", "ya", "yes", "yep", "yup", "ok", "okay", "kay", "right", "alright", "all right",
    "sure", "uh huh", "uh hu", "uh-huh", "mm hmm", "mm hm", "um hmm", "m hmm", "ah", "aha", "ahh", "oh", "ooh",
    "wow", "cool", "nice", "great", "good", "true", "exactly", "indeed", "totally", "absolutely", "definitely",
    "gotcha", "i see", "got it", "of course", "i know", "sounds good", "makes sense", "that's right",
    "that's true", "fair enough", "thank you", "thanks", "interesting", "really", "uh", "um", "er", "erm",
    "for sure", "okay then", "alright then", "all right then", "make sense", "i hear you", "i get it",
    "i understand", "i agree", "i guess", "i bet", "me too", "you bet",
    # Assessments and exclamations: how a listener reacts to what is told.
    "funny", "lovely", "amazing", "awesome", "perfect", "fine", "fantastic", "wonderful", "brilliant", "neat",
    "sweet", "fascinating", "incredible", "excellent", "beautiful", "impressive", "oh my", "my god",
    "oh my god", "my gosh", "oh my gosh", "my goodness", "oh boy", "oh dear", "oh man", "geez", "jeez",
    "hm", "you",  # Whisper's word for a breath or a click it cannot place
    # Reactions to what happens in a story, "no" among them: "No." alone disagrees, "Oh no!" and "No way!" do not.
    "oh no", "no way", "no kidding", "no wonder", "you're kidding", "you're joking", "seriously", "get out",
    "holy cow", "holy moly", "good grief", "goodness", "gosh", "whoa", "woah", "yikes", "ouch", "ugh", "aw", "aww",
    "poor thing", "poor guy", "poor girl", "poor soul", "poor her", "poor him", "good for her", "good for him",
    "good for them", "good for you",
    "wild", "crazy", "sad", "awful", "terrible", "scary", "spooky", "creepy", "cute", "weird", "strange", "insane",
    "unbelievable", "hilarious", "adorable", "horrible", "tragic", "classic", "brutal", "rough", "tough", "harsh",
    "heartbreaking", "fun", "bad", "too bad", "shame", "pity", "lucky", "gross", "clever",
    "smart", "rude", "nasty", "odd", "ironic", "typical", "bizarre", "magical",
    # Liking what is told, and sympathy: "I like that.", "Love it.", "Bless him."
    "i like that", "i like it", "i love that", "i love it", "love that", "love it", "like that", "bless",
    "bless him", "bless her", "bless them", "bless you", "aw bless", "oh bless", "nice one", "good one",
    # News to the listener, and following along ("I didn't know that.", "Go on.", "With you."; sets 18, 19).
    "i didn't know that", "didn't know that", "i never knew that", "i had no idea", "who knew", "go on",
    "keep going", "carry on", "with you", "i'm with you", "i'm following", "not again", "easy enough",
))
_PHRASE_LENGTHS = tuple(range(max(map(len, LISTENER_PHRASES)), 0, -1))  # longest first
# Words that open a listener's assessment as well as a bid ("How nice." / "How does it end?", "I'm sure." /
# "I'm lost."): followed by listener words they are a remark. Whisper also writes a hum before a word as
# "I'm" ("Hmm, okay." heard as "I'm okay.", "Mhm, sure." as "I'm sure."; bench room, fourth held-out set).
# How Whisper spells a listener's "ah", "mm" or "uh" before a word: "Uh-huh, yeah." heard as "I hurt you.",
# "Ah, okay." as "Are okay.", "Mm, interesting." as "I'm interested." (bench room, fifth and sixth sets),
# "Aw, that's heartbreaking." as "All that's heartbreaking." (twelfth set).
# "Ah, makes sense." as "I'll make sense.", "Ha, that's wild." as "Hi, that's what..." (set 18, 19).
FILLER_SPELLINGS = frozenset({"i", "i'm", "i'll", "are", "our", "and", "on", "a", "all", "hi"})
LEAD_INS = frozenset({"i'm", "how", "so", "that's", "it's", "sounds", "very", "pretty", "huh", "the"})
# Words that judge what they name, whatever it is, at a remark's end: sympathy for someone in the story
# ("Poor little seagull.", said in blind sets 9, 14 and 15) and assessments of a thing told ("Neat trick.",
# "Classic Nero.", sets 18 and 19), as in "Good point." or "Great idea.".
NAMING = frozenset({
    "poor", "classic", "neat", "nice", "good", "great", "clever", "smart", "lovely", "sweet", "cute", "cool",
    "crazy", "wild", "fancy", "amazing", "beautiful", "brilliant", "fascinating", "interesting", "wonderful",
    "fantastic", "perfect", "funny", "sad", "weird", "strange", "terrible", "awful", "lucky", "true",
})
# Words that make an assessment stronger ("That's so cute.", "It's really sad.", "How very sweet."): after a
# lead-in they lead on to the assessment.
INTENSIFIERS = frozenset({"so", "very", "pretty", "really", "quite", "too", "super", "just", "such"})
# Hums and laughs, however many letters: "mmm", "mhm", "hmmm", "mm-hmm" written as one word; "haha", "heh".
_HUM = re.compile(r"^(?:u?h?m+h?m*|h+m+|m+h+m+)$")
_LAUGH = re.compile(r"^(?:h+[ae]+){2,}h?$|^ha+h$|^he+h$")
# Whisper writes sounds it hears but cannot spell as annotations: "(laughs)", "[coughing]", "*sighs*", "♪".
_ANNOTATION = re.compile(r"\([^)]*\)|\[[^\]]*\]|\*[^*]*\*|♪")
_WORD = re.compile(r"[a-z']+")
_CUT_OFF = re.compile(r"[a-z'](?:\.\.\.|…|-)\s*$", re.IGNORECASE)  # "like...", "br-": the speech went on
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

# Words people open a bid for the turn with: a stop, a question, a correction, a request, a wait. A few words
# over the answer with none of these and no question mark are not yet a bid: tiny.en spelled listeners'
# sounds as such words ("Come on." and "Climb." for "Cool.", "Oh, well." for "Oh wow.", "Rate rate" for
# "Right, right."; bench room, held-out remarks), so the next pass, on more speech, decides, and at the
# utterance's end so few words are a remark. Written from how people interrupt, not from those words. The words
# are counted once each: on a short stretch Whisper loops on one word ("Short. Short. Short." for "Sure, sure.",
# "Out... Out... Out..." for "Uh, okay.", bench room's second held-out set), and a loop is one word heard.
TURN_CUES = frozenset({
    "stop", "wait", "hold", "hang", "no", "nope", "not", "don't", "sorry", "excuse", "pardon", "pause", "hey",
    "enough", "listen", "hello", "help", "quiet", "shut", "what", "what's", "why", "how", "who", "when", "where",
    "which", "whose", "can", "could", "would", "will", "should", "shall", "is", "are", "was", "do", "does", "did",
    "actually", "but", "please", "tell", "let", "i", "i'm", "me", "my", "we", "repeat", "again", "say", "said",
    "mean", "meant", "wrong", "skip", "next", "back", "louder", "slower", "faster", "shorter", "longer", "cancel",
    "never", "mind", "instead", "question", "lost", "confused", "missed",
    "second", "moment", "minute", "sec", "just", "up",
    # What people ask a voice assistant to do, in the middle of anything ("Call Mom.", blind set 16).
    "call", "play", "text", "send", "set", "turn", "open", "show", "find", "remind", "add", "check", "book",
    "order", "start", "give", "make", "read", "search", "switch", "change", "put",
    # How and of what the assistant should talk ("Slow down.", "Let's talk about something else.").
    "slow", "down", "let's", "your", "talk", "talking", "about", "else", "other", "different", "more", "less",
})
FEW_WORDS = 2
# Bid's words that stop the answer by themselves, cut off or not.
STOPS = frozenset({"stop", "wait", "pause", "hold", "hang", "enough", "cancel", "quiet", "shut", "sorry", "excuse"})
# The starts of listener phrases, which wait for the next word; not "No", though it may go on to "no way": it is
# decided at once, as "No, I meant…" is the commonest correction.
_STARTS = frozenset(phrase[:n] for phrase in LISTENER_PHRASES for n in range(1, len(phrase)) if phrase[0] != "no")


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


def heard_as(text: str, avg_logprob: float | None = None, readings: Readings = ()) -> Heard:
    """Classify a transcript (cumulative: the speech so far) of speech over the assistant's answer, given how
    sure the STT was of its words (mean log-probability; None: unknown, taken as sure) and its other readings
    of the same speech (most likely first)."""
    heard = _heard_as(text, avg_logprob)
    if heard is not Heard.TURN or avg_logprob is None or _cued(words_of(text)):
        return heard
    # Words with no bid's word, where the STT was nearly as ready to hear a remark or fewer words: not yet a bid.
    close = (reading for reading, logprob in readings if avg_logprob - logprob <= READING_MARGIN)
    return Heard.UNSURE if any(_heard_as(reading, None) in _NO_BID for reading in close) else heard


def heard_so_far(text: str, avg_logprob: float | None = None, readings: Readings = ()) -> Heard:
    """``heard_as`` for a pass on speech that goes on (a probe). Its last word may be cut off, as Whisper marks
    with "..." or "-": "Oh, that's like..." was "Oh, that's lovely." and "Oh, that's what..." the same
    (blind set 14). Where the words before it are a listener's so far, the next pass, on more speech, decides;
    a word that stops the answer whole ("Okay, stop...") is not waited on."""
    heard = heard_as(text, avg_logprob, readings)
    words = words_of(text)
    if heard is not Heard.TURN or len(words) < 2 or words[-1] in STOPS or not _CUT_OFF.search(text):
        return heard
    before = heard_as(" ".join(words[:-1]), avg_logprob)
    return Heard.LISTENER_SO_FAR if before in _LISTENERS else heard


def undecided(text: str, avg_logprob: float | None = None, readings: Readings = ()) -> bool:
    """Whether these words of a whole utterance over the answer decide nothing by themselves (a few words the
    STT was unsure of, or with no bid's word), so that a second reading of the speech is worth its cost."""
    return heard_as(text, avg_logprob, readings) is Heard.UNSURE


def reread(remark: tuple[str, ...] | None, text: str, heard: Heard, second: SecondReading | None = None) -> Heard:
    """The whole utterance's words (``text``, heard as ``heard``), where an earlier pass on its start heard
    listener words (``remark``; None: none did). A final pass that hears a few other words in their place
    ("Right, right." three times, then "Rate rate.") read the same sound anew: a remark still, unless they
    hold a bid's word or a question. Words that go on from the remark ("Okay, stop.") take the turn.
    ``second``: a larger model's reading of the same speech, if it was asked for one (see ``undecided``):
    where it is sure of a bid ("Pause.", where the STT heard "Pies."), the words it left undecided are one."""
    if heard is Heard.UNSURE and second is not None and _sure_bid(*second):
        return Heard.TURN
    words = words_of(text)
    if heard is Heard.LISTENER_SO_FAR and asked(text) and set(words) <= LEAD_INS | INTENSIFIERS and \
            TURN_CUES.intersection(words):
        return Heard.TURN  # nothing followed the lead-in, a question word, and it was asked: "How?", "How so?"
    if heard is not Heard.TURN or remark is None or len(words) > UNSURE_MAX_WORDS:
        return heard
    if asked(text) or TURN_CUES.intersection(words):
        return heard  # a bid's words or a question: "Hmm, no." heard as "Hmm", then as "Who number?"
    return heard if words[:len(remark)] == remark else Heard.UNSURE


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


def _beside_phrases(words: tuple[str, ...]) -> tuple[str, ...] | None:
    """The words beside the listener's phrases that open and end ``words``, or None where neither end is one
    ("Okay, admin page, fair enough.": "admin page")."""
    opening = next((n for n in _PHRASE_LENGTHS if n < len(words) and words[:n] in LISTENER_PHRASES), 0)
    rest = words[opening:]
    ending = next((n for n in _PHRASE_LENGTHS if n < len(rest) and rest[-n:] in LISTENER_PHRASES), 0)
    return rest[:len(rest) - ending] if opening or ending else None


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
    # No bid's word and no question, in few words or with a listener's phrase before or after them ("Oh wow,
    # that long.", "Ah, right, the Senate.", "Salah, of course."; sets 18, 19, 23): a reaction to what is told,
    # or not yet a bid.
    rest = words if len(set(words)) <= FEW_WORDS else _beside_phrases(words)
    uncued = rest is not None and not question and not TURN_CUES.intersection(rest)
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
