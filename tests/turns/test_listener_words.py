"""Speech over the answer, judged by its words: the classification, the rule, and one utterance's judgement."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.protocol.overlap_decisions import ACKNOWLEDGE, BARGE_IN
from speech_to_speech.realtime.conversation.overlap import Overlap
from speech_to_speech.realtime.conversation.overlap_judge import Judged
from speech_to_speech.turns.listener_lexicon import LISTENER_PHRASES
from speech_to_speech.turns.listener_words import (
    LISTENER_CAP,
    MAX_REMARK_WORDS,
    Heard,
    heard_as,
    heard_so_far,
    judge,
    reread,
    undecided,
    words_of,
)

PHRASES = sorted(" ".join(p) for p in LISTENER_PHRASES)
# Words no listener phrase holds or starts with: a bid for the turn ("no" starts "no way": its own tests below).
TURN_WORDS = ("stop", "wait", "what", "actually", "sorry", "hang", "can", "tell", "but", "why", "is")


@pytest.mark.parametrize("text", ["Yeah.", "Okay.", "Right.", "I see.", "I hear you.", "I understand.", "Mm-hmm.",
                                  "Uh-huh.", "Yeah, yeah.", "Oh, okay, I see.", "Mhm", "Hmmm.", "Got it.",
                                  "Sure, sure.", "Thank you."])
def test_listener_words_are_listener_words(text: str) -> None:
    assert heard_as(text) is Heard.LISTENER


@pytest.mark.parametrize("text", ["Oh no!", "No way!", "Oh no, no.", "Good for her.", "Aww, poor thing.", "Yikes.",
                                  "That's wild.", "How sad.", "Ooh, spooky.", "You're kidding."])
def test_reactions_to_the_story_are_listener_words(text: str) -> None:
    assert heard_as(text) is Heard.LISTENER


@pytest.mark.parametrize("text", ["No.", "No", "No, that's wrong.", "No, no, I meant the other one.", "Oh no, wait."])
def test_a_no_that_is_not_a_reaction_takes_the_turn_at_once(text: str) -> None:
    assert heard_as(text) is Heard.TURN


@pytest.mark.parametrize("text", ["", "(laughs)", "[coughing]", "*sighs*", "Haha!", "Hahaha.", "♪", "...",
                                  "A- A- A-", "La-la-la-", "Mama? Mama?"])
def test_sounds_without_words_are_nothing(text: str) -> None:
    assert heard_as(text) is Heard.NOTHING


@pytest.mark.parametrize("text", ["Wait.", "Stop.", "No, I meant Tuesday.", "What about the dog?", "Stop, stop.",
                                  "Yeah, but why?", "Okay, what time is it?", "Hang on a second.", "Sorry?"])
def test_anything_else_takes_the_turn(text: str) -> None:
    assert heard_as(text) is Heard.TURN


@pytest.mark.parametrize("text", ["I", "Got", "Of", "Yeah, I", "Sounds", "Thank", "I'm", "How", "Oh, how"])
def test_the_start_of_a_listener_phrase_is_not_decided_yet(text: str) -> None:
    assert heard_as(text) is Heard.LISTENER_SO_FAR


def test_a_few_words_the_stt_was_unsure_of_are_not_yet_a_turn() -> None:
    assert heard_as("Is her there.", -0.9) is Heard.UNSURE  # Whisper's spelling of a hummed "uh-huh"
    assert heard_as("Is her there.", -0.3) is Heard.TURN
    assert heard_as("Is her there.") is Heard.TURN  # unknown confidence: taken at its word
    assert heard_as("Stop, what time is it?", -1.2) is Heard.TURN  # many words: someone is talking
    assert heard_as("Yeah.", -1.5) is Heard.LISTENER


def test_words_the_stt_nearly_read_as_a_listener_s_are_not_yet_a_turn() -> None:
    # tiny.en's readings of a synthesized "Cool." over an answer, best first.
    readings = (("Come on there?", -0.44), ("C'mon there?", -0.72), ("Cool.", -0.9))
    assert heard_as("Come on there?", -0.44, readings) is Heard.UNSURE
    assert heard_as("Come on there?", -0.44, (("Come on there?", -0.44), ("Cool.", -1.5))) is Heard.TURN
    assert heard_as("Come on there?", None, readings) is Heard.TURN  # unknown confidence: taken at its word
    assert heard_as("Stop.", -0.2, (("Stop.", -0.2), ("Stop!", -0.5), ("Stop?", -0.7))) is Heard.TURN


@pytest.mark.parametrize("text", ["I'm sure.", "I'm okay.", "How funny!", "How interesting.", "So cool.",
                                  "That's amazing.", "Oh my.", "Oh my god.", "Sounds great.", "Okay. Okay. Okay."])
def test_a_listener_s_assessment_is_a_remark(text: str) -> None:
    assert heard_as(text) is Heard.LISTENER


@pytest.mark.parametrize("text", ["I'm lost.", "I'm sorry, what?", "How come?", "How does it end?", "So what?",
                                  "Poor thing, but why?", "Poor little seagull, what happened next?",
                                  "That's wrong.", "I'm sure, but why?", "How nice, stop."])
def test_a_lead_in_followed_by_a_bid_s_words_takes_the_turn(text: str) -> None:
    assert heard_as(text) is Heard.TURN


@pytest.mark.parametrize("text", ["I love it. I love it. I love", "Oh wow, oh wow, oh wow, oh wow."])
def test_a_loop_on_a_phrase_is_the_phrase(text: str) -> None:
    assert heard_as(text) in (Heard.LISTENER, Heard.LISTENER_SO_FAR)


@pytest.mark.parametrize("text", ["left left left left left left left left", "O O O O O O O O O"])
def test_a_loop_on_one_word_is_one_word(text: str) -> None:
    assert heard_as(text) is Heard.UNSURE  # "Mm." heard as a loop: the utterance's end decides


@pytest.mark.parametrize("text", ["Come on.", "Climb.", "Oh, well.", "Rate rate", "Short. Short. Short.",
                                  "Out... Out... Out...", "All that's heartbreaking."])
def test_a_few_words_without_a_bid_s_words_wait_for_more(text: str) -> None:
    assert heard_as(text) is Heard.UNSURE  # and at the utterance's end a remark (see test_the_rule)


@pytest.mark.parametrize("text", ["Stop.", "Why?", "Paris?", "Come on, stop.", "Hold up.", "One second.",
                                  "Never mind.", "Come on, tell me.", "No, no, no.", "Stop. Stop. Stop.",
                                  "Nice, nice, nice day, Anna?", "Okay, slow down.", "Let's talk about dogs."])
def test_a_bid_s_word_a_question_or_more_words_take_the_turn(text: str) -> None:
    assert heard_as(text) is Heard.TURN


READINGS = st.lists(st.tuples(TEXTS_ANY := st.sampled_from(["Yeah.", "Cool.", "Stop.", "Come on.", "I", "(laughs)",
                                                            "Wait, what?", "Rate rate."]),
                              st.floats(-3.0, 0.0)), max_size=4)


@settings(max_examples=300)
@given(TEXTS_ANY, st.floats(-3.0, 0.0), READINGS)
def test_readings_only_ever_hold_back_a_turn(text: str, logprob: float, readings: list[tuple[str, float]]) -> None:
    alone, weighed = heard_as(text, logprob), heard_as(text, logprob, tuple(readings))
    assert weighed is alone or (alone is Heard.TURN and weighed is Heard.UNSURE)
    if weighed is Heard.UNSURE and alone is Heard.TURN:
        assert any(heard_as(t) is not Heard.TURN and logprob - p <= 0.8 for t, p in readings)


def test_a_final_pass_that_reads_a_remark_anew_leaves_it_a_remark() -> None:
    assert reread(("right", "right"), "Rate rate.", Heard.TURN) is Heard.UNSURE
    assert reread(("i", "see"), "RIC", Heard.TURN) is Heard.UNSURE
    assert reread(("okay",), "Okay, stop.", Heard.TURN) is Heard.TURN  # it went on from the remark
    assert reread(None, "Rate rate.", Heard.TURN) is Heard.TURN  # nothing was heard as a remark before
    assert reread(("hm",), "Who number?", Heard.TURN) is Heard.TURN  # a question ("Hmm, no." read anew)
    assert reread(("hm",), "No, wait.", Heard.TURN) is Heard.TURN  # a bid's words
    assert reread(("yeah",), "Stop, what time is it?", Heard.TURN) is Heard.TURN  # more than a remark's words
    assert reread(("yeah",), "Yeah.", Heard.LISTENER) is Heard.LISTENER


@settings(max_examples=200)
@given(st.lists(st.sampled_from(PHRASES), min_size=1, max_size=3), st.sampled_from([",", ".", "!", "?", ""]))
def test_any_short_run_of_listener_phrases_is_a_remark_however_punctuated(phrases: list[str], mark: str) -> None:
    text = (mark + " ").join(p.capitalize() for p in phrases) + mark
    words = ["hm" if "m" in w and set(w) <= set("uhm") else w for w in words_of(text)]  # a hum, however spelled
    said = " ".join(words)
    while (again := re.sub(r"(?<!\S)((?:\S+ ){0,2}\S+) \1(?!\S)", r"\1", said)) != said:
        said = again  # a word or a phrase of up to three said again at once: once
    expected = Heard.LISTENER if len(said.split()) <= MAX_REMARK_WORDS else Heard.TURN
    assert heard_as(text) is expected


@settings(max_examples=200)
@given(st.lists(st.sampled_from(PHRASES), max_size=2), st.sampled_from(TURN_WORDS))
def test_a_word_no_listener_says_makes_it_a_turn_wherever_it_comes(phrases: list[str], word: str) -> None:
    assert heard_as(" ".join([*phrases, word])) is Heard.TURN
    assert heard_as(" ".join([word, *phrases])) is Heard.TURN


HEARD = st.one_of(st.none(), st.sampled_from(list(Heard)))


def cap_limit(heard: Heard | None, cap_ms: int) -> int:
    """Voiced this long, speech over the answer is a barge-in: longer while its latest words are a listener's."""
    return cap_ms * (LISTENER_CAP if heard in (Heard.LISTENER, Heard.LISTENER_SO_FAR, Heard.UNSURE) else 1)


def test_listener_words_get_longer_before_the_cap() -> None:
    assert judge(Heard.LISTENER, 1500, final=True, cap_ms=1200).action == ACKNOWLEDGE  # "Ha! ... Brilliant."
    assert judge(Heard.LISTENER_SO_FAR, 1500, final=False, cap_ms=1200) is None
    assert judge(Heard.UNSURE, 1500, final=True, cap_ms=1200).action == ACKNOWLEDGE  # "Okay, admin page, yep."
    assert judge(Heard.NOTHING, 1500, final=False, cap_ms=1200).action == BARGE_IN  # sounds keep the cap
    assert judge(None, 1200, final=False, cap_ms=1200).action == BARGE_IN  # no words yet
    assert judge(Heard.LISTENER, 2400, final=False, cap_ms=1200).action == BARGE_IN


@given(HEARD, st.integers(0, 5000), st.booleans(), st.integers(1, 5000))
def test_the_rule(heard: Heard | None, voiced_ms: int, final: bool, cap_ms: int) -> None:
    verdict = judge(heard, voiced_ms, final=final, cap_ms=cap_ms)
    if voiced_ms >= cap_limit(heard, cap_ms) or heard is Heard.TURN:
        assert verdict is not None and verdict.action == BARGE_IN
    elif final and heard is not None:
        assert verdict is not None and verdict.action == ACKNOWLEDGE
    else:
        assert verdict is None  # no words yet, or a remark that may go on


# One utterance's life: STT passes (cumulative words), voiced spans, its end, then its final transcript.
TEXTS = st.sampled_from(["", "Yeah", "Yeah.", "I", "I see.", "(laughs)", "Stop.", "Wait, what?", "Okay, but"])
SURE = st.one_of(st.none(), st.floats(-3.0, 0.0))
STEP = st.one_of(st.tuples(st.just("words"), st.tuples(TEXTS, SURE)),
                 st.tuples(st.just("voiced"), st.integers(0, 3000)))


@settings(max_examples=300)
@given(st.lists(STEP, max_size=8), st.tuples(TEXTS, SURE), st.integers(100, 2500))
def test_each_utterance_over_the_answer_is_decided_exactly_once(steps: list[tuple[str, object]],
                                                              final: tuple[str, float | None], cap_ms: int) -> None:
    judged = Judged(Overlap("item_1", "resp_1"), cap_ms)
    verdicts = []
    for kind, value in steps:
        if kind == "words":
            assert isinstance(value, tuple)
            verdicts.append(judged.hear(*value))
        else:
            assert isinstance(value, int)
            verdicts.append(judged.voiced(value))
    verdicts.append(judged.voiced(0, stopped=True))
    verdicts.append(judged.hear(*final, final=True))
    made = [v for v in verdicts if v is not None]
    assert len(made) == 1 and made[0] == judged.verdict  # exactly once, whatever follows it
    # What it should be: a barge-in on a bid's words, or on voice past the cap for the words heard then.
    latest: Heard | None = None
    voiced, remark, barged = 0, None, False
    for kind, value in steps:
        if kind == "words":
            assert isinstance(value, tuple)
            latest = heard_so_far(*value)
            remark = words_of(value[0]) if latest is Heard.LISTENER else remark
        else:
            assert isinstance(value, int)
            voiced = max(voiced, value)
        barged = barged or latest is Heard.TURN or voiced >= cap_limit(latest, cap_ms)
    whole = reread(remark, final[0], heard_as(*final))
    barged = barged or whole is Heard.TURN or voiced >= cap_limit(whole, cap_ms)
    assert (made[0].action == BARGE_IN) == barged


# Remarks the rules know, by what makes them one.
REMARKS = {
    "an assessment made stronger or after a huh": [
        "That's so cute.", "It's really sad.", "How very sweet.", "That's pretty wild.", "Huh, interesting.",
        "Huh? That's great.", "Oh, I like that.", "Love it.", "Aw, bless him.", "That's too bad.",
        "Oh, that's such a shame.", "Oh, nice one.", "Poor little seagull.", "Oh no, poor Marcus.",
        "Huh, poor seagull."],
    "a word that judges what it names": [
        "Neat trick.", "Classic Nero.", "Good point.", "Poor little seagull.", "Nice day.", "How neat trick!",
        "Huh? Classic Nero.", "Oh, great idea."],
    "news to the listener and following along": [
        "Oh, I didn't know that.", "Huh, I never knew that.", "Go on.", "Mm, go on.", "Yep, with you.",
        "Oh no, not again.", "Oh, that's easy enough.", "The poor thing."],
    "too in a listener's phrase or assessment": ["That's too sad.", "Oh, too bad.", "Me too."],
}


@pytest.mark.parametrize("text", [pytest.param(text, id=f"{kind}: {text}")
                                  for kind, texts in REMARKS.items() for text in texts])
def test_a_listener_s_remark_is_a_remark(text: str) -> None:
    assert heard_as(text) is Heard.LISTENER


@pytest.mark.parametrize("text", ["That's so", "Huh?", "How?", "It's so very"])
def test_a_lead_in_waits_for_its_next_word(text: str) -> None:
    assert heard_as(text) is Heard.LISTENER_SO_FAR


@pytest.mark.parametrize("text", ["How?", "How so?"])
def test_a_question_word_asked_alone_is_a_bid_at_the_utterance_s_end(text: str) -> None:
    assert reread(None, text, heard_as(text)) is Heard.TURN


@pytest.mark.parametrize("text", ["Huh?", "So?"])
def test_a_lead_in_asked_alone_is_no_bid_at_the_utterance_s_end(text: str) -> None:
    # tiny.en writes a laugh ("Ha!") as "Huh?" (blind sets 8, 12, 16), and the laugh ends an utterance of its own
    assert reread(None, text, heard_as(text)) is Heard.LISTENER_SO_FAR


@pytest.mark.parametrize("text", ["Call Mom.", "Play some music.", "Turn it off.", "Set a timer.", "Text Anna."])
def test_a_request_to_the_assistant_is_a_bid(text: str) -> None:
    assert heard_as(text) is Heard.TURN


@pytest.mark.parametrize("text", ["Huh. That's great.", "That's so cute."])
def test_a_lead_in_that_went_on_to_a_remark_stays_one_at_the_end(text: str) -> None:
    assert reread(None, text, heard_as(text)) is Heard.LISTENER


def test_a_question_is_where_the_words_end_in_one() -> None:
    assert heard_as("Climb?") is Heard.TURN
    assert heard_as("Huh? Climb.") is Heard.UNSURE  # no bid's word, and no longer a question
    assert heard_as("That's great, why?") is Heard.TURN


def test_a_whole_utterance_that_says_stop_is_a_bid_however_unsure_the_stt_was() -> None:
    # "Cancel that." over a loud echo: tiny.en unsure of it (-0.87) on every pass and at the end
    assert heard_as("Cancel that.", -0.87) is Heard.UNSURE  # a probe's pass still waits for more
    assert reread(None, "Cancel that.", heard_as("Cancel that.", -0.87)) is Heard.TURN
    assert reread(None, "Wait.", Heard.UNSURE, None) is Heard.TURN
    assert reread(None, "cancelled at.", heard_as("cancelled at.", -0.78)) is Heard.TURN  # Whisper's spelling
    assert reread(None, "Is her there.", heard_as("Is her there.", -0.9)) is Heard.UNSURE  # a hummed "uh-huh"
    assert reread(None, "Yeah.", Heard.LISTENER) is Heard.LISTENER


def test_a_larger_model_sure_of_a_bid_makes_undecided_words_one() -> None:
    # tiny.en heard "Pause." as "Pies." (-0.6); the packaged Whisper base heard "Pause." (-0.4).
    assert undecided("Pies.", -0.6) and not undecided("Stop.", -0.2) and not undecided("Yeah.", -0.3)
    assert reread(None, "Pies.", Heard.UNSURE, ("Pause.", -0.4)) is Heard.TURN
    assert reread(None, "Pies.", Heard.UNSURE, ("Who's number?", -0.44)) is Heard.TURN  # a question
    assert reread(None, "Pies.", Heard.UNSURE, ("Pause.", -1.2)) is Heard.UNSURE  # it was unsure too
    assert reread(None, "Bye.", Heard.UNSURE, ("Okay.", -0.3)) is Heard.UNSURE  # it heard a remark
    assert reread(None, "A-pirthing.", Heard.UNSURE, ("Aw, per thing.", -0.5)) is Heard.UNSURE  # no bid's word
    assert reread(None, "Pies.", Heard.UNSURE, None) is Heard.UNSURE  # no larger model
    assert reread(None, "RIC", Heard.UNSURE, ("R I C", -0.45)) is Heard.UNSURE  # letters: a sound it spelled
    assert reread(("yeah",), "Yeah.", Heard.LISTENER, ("Stop.", -0.1)) is Heard.LISTENER  # only undecided words


SECOND = st.tuples(st.sampled_from(["Pause.", "Stop!", "Okay.", "Why?", "Mama.", "Nice day.", "Thank you for "
                                    "your time."]), st.floats(-3.0, 0.0))


@settings(max_examples=300)
@given(st.sampled_from(list(Heard)), SECOND)
def test_a_second_reading_only_ever_turns_undecided_words_into_a_bid(heard: Heard, second: tuple[str, float]) -> None:
    alone, weighed = reread(None, "Pies.", heard), reread(None, "Pies.", heard, second)
    assert weighed is alone or (alone is Heard.UNSURE and weighed is Heard.TURN and second[1] >= -0.7)


@pytest.mark.parametrize("text", ["Oh, that's like...", "Oh, that's what...", "Huh, br-", "Yeah, but...",
                                  "Whoa, that's why", "Oh, that's wrong.", "Okay, the Verizon one, what"])
def test_a_probe_whose_last_word_may_be_cut_off_after_words_that_make_no_bid_waits(text: str) -> None:
    assert heard_so_far(text) in (Heard.LISTENER_SO_FAR, Heard.UNSURE)


@pytest.mark.parametrize("text", ["Wait...", "Okay, stop...", "Oh, wait-", "Stop, what-", "That's not",
                                  "Yeah, but why?", "Oh, that's wrong, it's", "Gosh, no"])
def test_a_probe_with_a_stop_or_whole_bid_takes_the_turn(text: str) -> None:
    assert heard_so_far(text) is Heard.TURN


@settings(max_examples=300)
@given(st.sampled_from(["Oh, that's like...", "Wait...", "Okay, stop...", "Yeah, but...", "Stop.", "Huh? Brilliant",
                        "I see.", "Come on there..."]), st.one_of(st.none(), st.floats(-3.0, 0.0)))
def test_a_probe_only_ever_waits_where_the_utterance_s_end_would_decide(text: str, logprob: float | None) -> None:
    whole, so_far = heard_as(text, logprob), heard_so_far(text, logprob)
    assert so_far is whole or (whole is Heard.TURN and so_far is Heard.LISTENER_SO_FAR)


@pytest.mark.parametrize("text", ["Nice weather tomorrow?", "Good, now stop.", "Great, tell me more.", "Poor who?"])
def test_what_is_named_may_not_be_asked_or_a_bid(text: str) -> None:
    assert heard_as(text) is Heard.TURN


@pytest.mark.parametrize("text", ["Go back.", "That's enough.", "Not that one.", "Go to the end."])
def test_words_like_those_that_direct_the_assistant_take_the_turn(text: str) -> None:
    assert heard_as(text) is Heard.TURN


@pytest.mark.parametrize("text", ["Oh wow, that long.", "Ah, right, the Senate.", "Okay, admin page, yep.",
                                  "Salah, of course.", "Three meals a day, okay.", "Okay, admin page, fair enough.",
                                  "I'll make sense."])
def test_a_listener_s_phrase_with_words_that_make_no_bid_is_no_bid(text: str) -> None:
    assert heard_as(text) is Heard.UNSURE  # the next pass decides; at the utterance's end, a remark


@pytest.mark.parametrize("text", ["Right the Sherpas.", "Hall of Classic Hillary", "Twenty-one hairpins, wow.",
                                  "Yeah, I figured.", "My knees already hurt.", "Ooh, brutal cold.", "Huh, rye flour.",
                                  "Few, they made it."])
def test_a_reaction_in_words_of_its_own_makes_no_bid(text: str) -> None:
    assert heard_as(text) is Heard.UNSURE


@pytest.mark.parametrize("text", ["I meant Tuesday.", "I want the short version.", "I'd rather hear about K2.",
                                  "I asked for the weather.", "We already did this part?"])
def test_what_the_user_wants_or_meant_instead_is_a_bid(text: str) -> None:
    assert heard_as(text) is Heard.TURN


@pytest.mark.parametrize("text", ["How I didn't...", "Oh no, the price..."])
def test_a_probe_cut_off_inside_a_listener_s_phrase_waits(text: str) -> None:
    assert heard_so_far(text) in (Heard.LISTENER_SO_FAR, Heard.UNSURE)


OTHER_WORDS = ("admin", "page", "train", "ride", "valley", "senate", "three", "meals", "tram", "red", "card")


@settings(max_examples=300)
@given(st.sampled_from(PHRASES), st.lists(st.sampled_from(OTHER_WORDS), min_size=1, max_size=3),
       st.booleans(), st.sampled_from(TURN_WORDS))
def test_words_beside_a_listener_s_phrase_make_no_bid_until_a_bid_s_word_or_a_question(
        phrase: str, others: list[str], before: bool, word: str) -> None:
    said = [phrase, *others] if before else [*others, phrase]
    if len(words_of(" ".join(said))) > MAX_REMARK_WORDS:
        return
    if before and phrase == "you" and len(others) >= 2:
        return  # "you" and two words or more are words to the assistant: a bid (listener_words._TO_YOU)
    assert heard_as(" ".join(said) + ".") is not Heard.TURN
    assert heard_as(" ".join(said) + "?") is Heard.TURN
    assert heard_as(" ".join([*said, word]) + ".") is Heard.TURN


@pytest.mark.parametrize("text", ["Ah, too many spoilers.", "That doesn't make sense.", "You got the score.",
                                  "Too long.", "You already told that part.", "You're repeating yourself."])
def test_a_complaint_a_denial_or_words_to_the_assistant_are_a_bid(text: str) -> None:
    assert heard_as(text) is Heard.TURN
