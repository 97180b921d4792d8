"""The speech text normaliser: what the voice is given for what the model wrote."""

from __future__ import annotations

import pytest

from speech_to_speech.speech_text import SpeechText, speech_text
from speech_to_speech.speech_text.numbers import cardinal, ordinal, year


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("It is 3.5 km away.", "It is three point five kilometres away."),
        ("Dr. Smith paid $12 for it.", "Doctor Smith paid twelve dollars for it."),
        ("That is $12.50, or $1 each.", "That is twelve dollars and fifty cents, or one dollar each."),
        ("It cost $3.5 million.", "It cost three point five million dollars."),
        ("Music of the 1990s and the '80s.", "Music of the nineteen nineties and the eighties."),
        ("We meet at 10:30, 10:05 or 10:00.", "We meet at ten thirty, ten oh five or ten o'clock."),
        # What a time tool returns, read as a person reads a clock: no seconds, no offset from UTC.
        ("It is 2026-12-06T12:32:35+09:00 in Tokyo.", "It is twelve thirty-two on December sixth, twenty twenty-six "
         "in Tokyo."),
        ("London: 2026-12-06 at 03:12:23, or 2026-12-06T03:32:49Z.", "London: December sixth, twenty twenty-six at "
         "three twelve, or three thirty-two on December sixth, twenty twenty-six."),
        ("Monday 10:00-11:00, or 9:00 – 10:30.",
         "Monday ten o'clock to eleven o'clock, or nine o'clock to ten thirty."),
        ("Dinner at 7 p.m. or 7:45 PM.", "Dinner at seven P M or seven forty-five P M."),
        ("She came 1st, he came 22nd; the 100th guest.",
         "She came first, he came twenty-second; the one hundredth guest."),
        ("Prices rose 45% and 3.5%.", "Prices rose forty-five percent and three point five percent."),
        ("About 384,400 km.", "About three hundred eighty-four thousand four hundred kilometres."),
        ("It is 21°C or 70°F.", "It is twenty-one degrees Celsius or seventy degrees Fahrenheit."),
        ("Add 1/2 or 3/4 of a cup.", "Add one half or three quarters of a cup."),
        ("2 + 2 = 4, 3 x 4 = 12, 6 / 3 = 2", "two plus two equals four, three times four equals twelve, six divided by "
         "three equals two"),
        ("Born in 1987, back in 2005, now 2024.",
         "Born in nineteen eighty-seven, back in two thousand five, now twenty twenty-four."),
        ("It takes 5-10 minutes, 1 hour or 1.5 hours.", "It takes five to ten minutes, one hour or one point five "
         "hours."),
        ("Call 555-1234.", "Call five five five, one two three four."),
        ("The PIN is 0420; it is -5 outside.", "The PIN is zero four two zero; it is minus five outside."),
        ("Fruit, e.g. apples, pears, etc.", "Fruit, for example apples, pears, et cetera."),
        ("Due 12/25/2024.", "Due December twenty-fifth, twenty twenty-four."),
        ("Version 3.5.2 is out.", "Version three point five point two is out."),
    ],
)
def test_numbers_units_and_abbreviations_are_said_as_words(written: str, said: str) -> None:
    assert speech_text(written) == said


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("**Paris** is the _capital_ of ***France***.", "Paris is the capital of France."),
        ("Great question! 😀🎉 The answer is 👍🏽 yes.", "Great question! The answer is yes."),
        ("Flags 🇫🇷 and families 👨‍👩‍👧 go.", "Flags and families go."),
        ("See https://www.example.com/a/b?c=1 for more.", "See example dot com for more."),
        ("Read [the guide](https://docs.example.org/guide).", "Read the guide."),
        ("Write to help.desk@example.co.uk today.", "Write to help dot desk at example dot co dot uk today."),
        ("Run `rm -rf /tmp/x` or use `numpy`.", "Run or use numpy."),  # code with symbols goes; a word stays
        ("A <b>bold</b> claim.", "A bold claim."),
        ("# Shopping\n- apples\n- 2 pears\n", "Shopping. apples. two pears."),
        ("1. Boil water\n2. Add tea\n", "Boil water. Add tea."),
        ("> quoted words\n---\n", "quoted words."),
        ("| city | people |\n|---|---|\n| Paris | 2 million |\n", "city, people. Paris, two million."),
    ],
)
def test_markup_code_urls_and_emoji_never_reach_the_voice(written: str, said: str) -> None:
    assert speech_text(written) == said


def test_a_code_block_streamed_over_several_clauses_is_left_out_whole() -> None:
    speech = SpeechText()
    clauses = ["Here is the code:\n", "```python\n", "for i in range(3):\n", "    print(i * 2)\n", "```\n",
               "It prints three numbers."]
    said = [speech.feed(clause) for clause in clauses]
    assert said == ["Here is the code:", "", "", "", "", "It prints three numbers."]


def test_a_list_marker_is_markup_only_at_the_start_of_a_line() -> None:
    speech = SpeechText()
    # The clause splitter cuts "1. " off as its own clause at a line start; mid-line "- 2" is arithmetic.
    assert speech.feed("Steps:\n") == "Steps:"
    assert speech.feed("1. ") == ""
    assert speech.feed("Mix it. ") == "Mix it."
    assert speech.feed("Then 5 - 2 is 3.") == "Then five minus two is three."


def test_text_with_nothing_to_rewrite_is_left_as_it_is() -> None:
    plain = "Paris is the capital of France, and it sits on the Seine!"
    assert speech_text(plain) == plain


@pytest.mark.parametrize(
    ("number", "words"),
    [(0, "zero"), (13, "thirteen"), (40, "forty"), (105, "one hundred five"), (1000, "one thousand"),
     (2_172_500, "two million one hundred seventy-two thousand five hundred"), (-7, "minus seven"),
     (10**18, "one zero zero zero zero zero zero zero zero zero zero zero zero zero zero zero zero zero zero")],
)
def test_cardinals(number: int, words: str) -> None:
    assert cardinal(number) == words


@pytest.mark.parametrize(
    ("number", "words"),
    [(1, "first"), (2, "second"), (3, "third"), (5, "fifth"), (12, "twelfth"), (20, "twentieth"),
     (21, "twenty-first"), (99, "ninety-ninth"), (100, "one hundredth"), (1003, "one thousand third")],
)
def test_ordinals(number: int, words: str) -> None:
    assert ordinal(number) == words


@pytest.mark.parametrize(
    ("number", "words"),
    [(1990, "nineteen ninety"), (1905, "nineteen oh five"), (1900, "nineteen hundred"), (2000, "two thousand"),
     (2009, "two thousand nine"), (2010, "twenty ten"), (2024, "twenty twenty-four")],
)
def test_years(number: int, words: str) -> None:
    assert year(number) == words
