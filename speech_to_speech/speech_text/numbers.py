"""Numbers as the words a voice says: cardinals, ordinals, decimals, years and decades.

Pure functions over digit strings, so "2,172,500", "3.5", "21st" and
"1990s" all go through one place. American style without "and"
("one hundred five"); numbers too long to read as words are read digit by
digit, as people read serial numbers.
"""

from __future__ import annotations

_ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ("", "thousand", "million", "billion", "trillion")
_ORDINAL_WORDS = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
                  "nine": "ninth", "twelve": "twelfth"}
# Longer numbers are read digit by digit.
MAX_WORDS_DIGITS = 15


def _below_thousand(number: int) -> list[str]:
    words: list[str] = []
    hundreds, rest = divmod(number, 100)
    if hundreds:
        words += [_ONES[hundreds], "hundred"]
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        words.append(_TENS[tens] + (f"-{_ONES[ones]}" if ones else ""))
    elif rest or not words:
        words.append(_ONES[rest])
    return words


def cardinal(number: int) -> str:
    """``2172500`` -> "two million one hundred seventy-two thousand five hundred"; negatives say "minus"."""
    if number < 0:
        return f"minus {cardinal(-number)}"
    if len(str(number)) > MAX_WORDS_DIGITS:
        return digits(str(number))
    if number == 0:
        return "zero"
    groups: list[str] = []
    scale = 0
    while number:
        number, group = divmod(number, 1000)
        if group:
            words = _below_thousand(group)
            groups.insert(0, " ".join(words + ([_SCALES[scale]] if _SCALES[scale] else [])))
        scale += 1
    return " ".join(groups)


def digits(text: str) -> str:
    """Each digit as a word: "0420" -> "zero four two zero"."""
    return " ".join(_ONES[int(c)] for c in text if c.isdigit())


def ordinal(number: int) -> str:
    """``21`` -> "twenty-first", ``100`` -> "one hundredth"."""
    words = cardinal(number)
    head, sep, last = max(words.rpartition(" "), words.rpartition("-"), key=lambda p: len(p[0]))
    if not sep:
        head, last = "", words
    if last in _ORDINAL_WORDS:
        last = _ORDINAL_WORDS[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return f"{head}{sep}{last}"


def decimal(whole: str, fraction: str) -> str:
    """``("3", "14")`` -> "three point one four"; the fraction is read digit by digit."""
    head = cardinal(int(whole)) if whole else "zero"
    return f"{head} point {digits(fraction)}" if fraction else head


def year(number: int) -> str:
    """``1990`` -> "nineteen ninety", ``2005`` -> "two thousand five", ``2024`` -> "twenty twenty-four"."""
    if not 1000 <= number <= 9999:
        return cardinal(number)
    high, low = divmod(number, 100)
    if low == 0:
        return cardinal(number) if high % 10 == 0 else f"{cardinal(high)} hundred"
    if 2000 <= number < 2010:
        return cardinal(number)
    tail = f"oh {_ONES[low]}" if low < 10 else cardinal(low)
    return f"{cardinal(high)} {tail}"


def plural(words: str) -> str:
    """The plural of a number's words, as in decades: "nineteen ninety" -> "nineteen nineties"."""
    if words.endswith("y"):
        return words[:-1] + "ies"
    if words.endswith("x"):
        return words + "es"
    return words + "s"
