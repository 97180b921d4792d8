"""The rules a pause is judged by: eagerness levels and whether the words read as finished.

Pure functions of a score, a transcript and the STT's doubt; the turn
controller (:mod:`speech_to_speech.turns.controller`) applies them.

The word lists are English (and so is the STT doubt they were measured
with). Words heard in another language are read by their punctuation only:
a trailing comma or ellipsis (Japanese and Chinese marks included) says
the turn goes on, a sentence's final mark that a turn the model heard as
unfinished may still be over; otherwise the Smart Turn model, trained on 23
languages, decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from speech_to_speech.pipeline.session_config import TurnDetection


@dataclass(frozen=True)
class Eagerness:
    """How readily a pause ends the turn: the scores that count as finished, and the longest wait."""

    finished_at: float  # probability at or above which the turn is finished
    max_silence_scale: float  # times --max_turn_silence_ms an unfinished turn may stay silent
    # The probability a turn needs when its words do not read as a whole sentence ("… do I need for?",
    # "… thank you very much in"): the model scored such mid-sentence cuts 0.75-0.97.
    unread_finished_at: float
    # Whether a turn judged finished waits out a pause between two sentences (--finished_pause_ms) before
    # it ends, or ends at --turn_pause_ms: "high" answers sooner and may answer a request's first sentence.
    waits_between_sentences: bool = True


# People pause up to ~400 ms between two sentences of one request ("I'm going camping." … "What should I
# pack?"): a finished turn whose reply cannot be taken back waits this long (14 VAD chunks of 32 ms).
SENTENCE_PAUSE_MS = 448

# OpenAI's semantic_vad eagerness: "low" lets the user take their time, "high" answers sooner.
EAGERNESS: dict[str, Eagerness] = {
    "low": Eagerness(finished_at=0.8, max_silence_scale=1.5, unread_finished_at=0.99),
    "medium": Eagerness(finished_at=0.5, max_silence_scale=1.0, unread_finished_at=0.98),
    "auto": Eagerness(finished_at=0.5, max_silence_scale=1.0, unread_finished_at=0.98),
    "high": Eagerness(finished_at=0.3, max_silence_scale=0.5, unread_finished_at=0.9,
                      waits_between_sentences=False),
}


# Words after which an English utterance is not over: articles, possessives, conjunctions, the
# infinitive "to", "of", and fillers. A sentence can end with most prepositions ("what is it for?"),
# so those are not here.
CONTINUATION_WORDS = frozenset({
    "a", "an", "the", "my", "your", "his", "her", "our", "their", "its", "and", "or", "but", "nor",
    "because", "if", "unless", "whether", "although", "than", "to", "of", "um", "uh", "er", "erm", "uhm",
})


# Words a sentence can end on but a phrase left hanging usually does: prepositions, modal and
# auxiliary verbs, subject pronouns, question and relative words. They do not veto a turn that
# sounds finished ("what is it for?"), but they do not end one that sounds unfinished either.
# Particles that end phrasal verbs ("turn it off", "log in") are not here.
OPEN_ENDED_WORDS = CONTINUATION_WORDS | frozenset({
    "about", "above", "across", "after", "against", "along", "among", "at", "before", "behind", "below",
    "beneath", "beside", "between", "beyond", "by", "during", "except", "for", "from", "into", "like",
    "near", "onto", "since", "through", "toward", "towards", "under", "until", "upon", "with", "within",
    "without", "can", "could", "will", "would", "shall", "should", "may", "might", "must", "do", "does",
    "did", "is", "are", "was", "were", "am", "be", "been", "being", "have", "has", "had", "i", "you",
    "he", "she", "we", "they", "who", "whom", "whose", "which", "that", "what", "where", "when", "why",
    "how", "so", "then",
})


# The STT's doubt above which its final punctuation is not taken for the end of a sentence (see
# reads_finished). Whisper tiny.en gave 0.21-0.54 to the comma or the word it left out of speech cut
# at a mid-sentence pause ("… black holes [and]", "… tomorrow morning [to]"), and at most 0.09 at the
# end of 94 requests the user had finished (docs/benchmarks/README.md, "Turn detection, sixth round").
MAX_CONTINUATION = 0.2


# Final punctuation of a sentence, and marks after which it goes on, in the scripts Whisper writes.
SENTENCE_END_MARKS = (".", "?", "!", "。", "？", "！", "؟", "।")
GOES_ON_MARKS = ("...", "…", ",", "-", "—", "、", "，", "،")


def _english(language: str | None) -> bool:
    """Words heard in English, or by an STT that does not say (the English word lists apply)."""
    return language is None or language.split("-")[0].lower() == "en"


def reads_finished(transcript: str, continuation: float | None = None, language: str | None = None) -> bool:
    """The words end as a whole sentence does: final punctuation, after a word a phrase rarely stops on,
    and (where the STT measured it) little ``continuation``: its own doubt that the speech ended there.

    Stricter than the opposite of :func:`ends_mid_phrase`: it is the evidence that overrides a
    turn that *sounds* unfinished, so it must not take "… maybe we could." for a finished request,
    nor "… black holes." where Whisper left out the "and" the speech ended on.
    """
    text = transcript.strip()
    if not text.endswith(SENTENCE_END_MARKS) or text.endswith(("...", "…")):
        return False
    if not _english(language):
        return True  # no word list of this language: its final mark is all the words say
    if continuation is not None and continuation >= MAX_CONTINUATION:
        return False
    last = _last_word(text)
    return bool(last) and last not in OPEN_ENDED_WORDS


def ends_mid_phrase(transcript: str, language: str | None = None) -> bool:
    """The words stop where a sentence cannot: after "the", "and", "to", an "um" (English), or trailing off
    (a comma, an ellipsis: any language)."""
    text = transcript.strip()
    if not text:
        return False
    if text.endswith(GOES_ON_MARKS):
        return True
    return _english(language) and _last_word(text) in CONTINUATION_WORDS


def judged_finished(probability: float, words: str | None, level: Eagerness,
                    continuation: float | None = None, language: str | None = None) -> bool:
    """Whether a pause that scored ``probability``, after ``words`` (and the STT's ``continuation``,
    see :func:`reads_finished`), ends the turn.

    It must sound finished, and its words (when a speculative pass heard
    some) must not stop mid-phrase. Words that do not read as a whole
    sentence either (no final punctuation, or a last word phrases hang on)
    need a confident score: on speech cut mid-sentence the model is often
    sure of the wrong answer, the transcript less often.
    """
    if probability < level.finished_at:
        return False
    if not words or not words.strip():
        return True  # nothing heard to weigh: the model decides
    if ends_mid_phrase(words, language):
        return False
    if not _english(language):
        # No word list to say the words hang: the model decides (Whisper often leaves a Japanese request
        # without its "？", which must not make a finished-sounding turn wait out the longest silence).
        return True
    return reads_finished(words, continuation, language) or probability >= level.unread_finished_at


def _last_word(text: str) -> str:
    """The last word of ``text``, lowercased, without punctuation ("" when there is none)."""
    words = re.sub(r"[^\w']+", " ", text).split()
    return words[-1].lower() if words else ""


def eagerness(turn_detection: TurnDetection | None) -> Eagerness:
    return EAGERNESS[(turn_detection.eagerness if turn_detection else None) or "auto"]
