"""Numbers in context said as words: money, units, percentages, times, ordinals, decades, abbreviations.

``say_numbers`` rewrites one piece of plain text (markup already gone). The
rules run from the most specific to the plainest, so "$12.50", "3.5 km",
"10:30 pm" and "the 1990s" are read as wholes before any bare number is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import speech_to_speech.speech_text.numbers as numbers

# A number as written: 2,172,500 or 1234 or 3.5 (the integer part may have thousands separators).
_NUM = r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?"

# unit -> (singular, plural); matched case-sensitively right after a number.
UNITS: dict[str, tuple[str, str]] = {
    "km": ("kilometre", "kilometres"), "m": ("metre", "metres"), "cm": ("centimetre", "centimetres"),
    "mm": ("millimetre", "millimetres"), "mi": ("mile", "miles"), "ft": ("foot", "feet"), "yd": ("yard", "yards"),
    "kg": ("kilogram", "kilograms"), "g": ("gram", "grams"), "mg": ("milligram", "milligrams"),
    "lb": ("pound", "pounds"), "lbs": ("pound", "pounds"), "oz": ("ounce", "ounces"),
    "l": ("litre", "litres"), "L": ("litre", "litres"), "ml": ("millilitre", "millilitres"),
    "mL": ("millilitre", "millilitres"), "km/h": ("kilometre per hour", "kilometres per hour"),
    "kph": ("kilometre per hour", "kilometres per hour"), "mph": ("mile per hour", "miles per hour"),
    "m/s": ("metre per second", "metres per second"), "°C": ("degree Celsius", "degrees Celsius"),
    "°F": ("degree Fahrenheit", "degrees Fahrenheit"), "°": ("degree", "degrees"),
    "h": ("hour", "hours"), "hr": ("hour", "hours"), "hrs": ("hour", "hours"), "min": ("minute", "minutes"),
    "mins": ("minute", "minutes"), "sec": ("second", "seconds"), "s": ("second", "seconds"),
    "ms": ("millisecond", "milliseconds"), "KB": ("kilobyte", "kilobytes"), "MB": ("megabyte", "megabytes"),
    "GB": ("gigabyte", "gigabytes"), "TB": ("terabyte", "terabytes"), "Hz": ("hertz", "hertz"),
    "kHz": ("kilohertz", "kilohertz"), "MHz": ("megahertz", "megahertz"), "GHz": ("gigahertz", "gigahertz"),
    "W": ("watt", "watts"), "kW": ("kilowatt", "kilowatts"), "kWh": ("kilowatt hour", "kilowatt hours"),
    "V": ("volt", "volts"), "mAh": ("milliamp hour", "milliamp hours"),
}
_UNIT_NAMES = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))

# symbol -> (singular, plural, cent word singular, plural)
CURRENCIES: dict[str, tuple[str, str, str, str]] = {
    "$": ("dollar", "dollars", "cent", "cents"), "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"), "¥": ("yen", "yen", "", ""), "₹": ("rupee", "rupees", "", ""),
}
_SCALE_WORDS = r"(?:\s+(thousand|million|billion|trillion))?"

ABBREVIATIONS: dict[str, str] = {
    "Dr.": "Doctor", "Mr.": "Mister", "Mrs.": "Missus", "Ms.": "Miz", "Prof.": "Professor", "Jr.": "Junior",
    "Sr.": "Senior", "St.": "Saint", "Mt.": "Mount", "Ave.": "Avenue", "Rd.": "Road", "Blvd.": "Boulevard",
    "vs.": "versus", "vs": "versus", "etc.": "et cetera", "e.g.": "for example", "i.e.": "that is",
    "approx.": "approximately", "Jan.": "January", "Feb.": "February", "Mar.": "March", "Apr.": "April",
    "Aug.": "August", "Sept.": "September", "Sep.": "September", "Oct.": "October", "Nov.": "November",
    "Dec.": "December", "Mon.": "Monday", "Tue.": "Tuesday", "Wed.": "Wednesday", "Thu.": "Thursday",
    "Fri.": "Friday", "Sat.": "Saturday", "Sun.": "Sunday", "No.": "number", "min.": "minutes",
}
_ABBREVIATION = re.compile(
    r"(?<![\w.])(" + "|".join(re.escape(a) for a in sorted(ABBREVIATIONS, key=len, reverse=True)) + r")(?=\s|$|,)"
)
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
_FRACTIONS = {(1, 2): "one half", (1, 3): "one third", (2, 3): "two thirds", (1, 4): "one quarter",
              (3, 4): "three quarters"}
_SYMBOLS = {"&": " and ", "≈": " about ", "~": " about ", "×": " times ", "÷": " divided by ", "+": " plus ",
            "=": " equals ", "→": " to ", "%": " percent"}


def _number(whole: str, fraction: str | None) -> str:
    whole = whole.replace(",", "")
    return numbers.decimal(whole, fraction) if fraction else numbers.cardinal(int(whole))


def _is_one(whole: str, fraction: str | None) -> bool:
    return whole == "1" and not fraction


def _money(match: re.Match[str]) -> str:
    symbol, whole, fraction, scale = match.group(1), match.group(2), match.group(3), match.group(4)
    one, many, cent, cents = CURRENCIES[symbol]
    if scale:
        return f"{_number(whole, fraction)} {scale} {many}"
    amount = int(whole.replace(",", ""))
    said = f"{numbers.cardinal(amount)} {one if amount == 1 else many}"
    if fraction and cent and len(fraction) == 2 and int(fraction):
        said += f" and {numbers.cardinal(int(fraction))} {cent if int(fraction) == 1 else cents}"
    elif fraction and fraction.strip("0"):
        said = f"{numbers.decimal(whole.replace(',', ''), fraction)} {many}"
    return said


def _unit(match: re.Match[str]) -> str:
    whole, fraction, unit = match.group(1), match.group(2), match.group(3)
    one, many = UNITS[unit]
    return f"{_number(whole, fraction)} {one if _is_one(whole, fraction) else many}"


def _percent(match: re.Match[str]) -> str:
    return f"{_number(match.group(1), match.group(2))} percent"


def _time(match: re.Match[str]) -> str:
    hour, minute, period = int(match.group(1)), int(match.group(2)), match.group(3)
    if minute == 0:
        said = f"{numbers.cardinal(hour)}" + ("" if period else " o'clock")
    elif minute < 10:
        said = f"{numbers.cardinal(hour)} oh {numbers.cardinal(minute)}"
    else:
        said = f"{numbers.cardinal(hour)} {numbers.cardinal(minute)}"
    if period:
        said += " A M" if period[0].lower() == "a" else " P M"
    return said


def _iso_date(year_: str, month_: str, day_: str) -> str | None:
    month, day = int(month_), int(day_)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return f"{MONTHS[month - 1]} {numbers.ordinal(day)}, {numbers.year(int(year_))}"


def _iso_datetime(match: re.Match[str]) -> str:
    """2026-12-06T12:32:35+09:00, as a time tool writes it: the time, then the day. A person reading a
    clock leaves out the seconds and the offset from UTC."""
    day = _iso_date(match.group(1), match.group(2), match.group(3))
    hour, minute = int(match.group(4)), int(match.group(5))
    if day is None or hour > 23 or minute > 59:
        return match.group(0)
    return f"{match.group(4)}:{match.group(5)} on {day}"


def _iso_day(match: re.Match[str]) -> str:
    return _iso_date(match.group(1), match.group(2), match.group(3)) or match.group(0)


def _clock_seconds(match: re.Match[str]) -> str:
    """12:32:35 on a clock is said without its seconds (the time rule reads what is left)."""
    hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3))
    return f"{match.group(1)}:{match.group(2)}" if hour <= 23 and minute <= 59 and second <= 59 else match.group(0)


def _hour_period(match: re.Match[str]) -> str:
    return f"{numbers.cardinal(int(match.group(1)))} {'A M' if match.group(2)[0].lower() == 'a' else 'P M'}"


def _ordinal(match: re.Match[str]) -> str:
    return numbers.ordinal(int(match.group(1).replace(",", "")))


def _decade(match: re.Match[str]) -> str:
    century, decade = match.group(1), match.group(2)
    if century:
        return numbers.plural(numbers.year(int(century + decade)))
    return numbers.plural(numbers.cardinal(int(decade)))


def _fraction(match: re.Match[str]) -> str:
    top, bottom = int(match.group(1)), int(match.group(2))
    if not 0 < top < bottom:
        return f"{numbers.cardinal(top)} divided by {numbers.cardinal(bottom)}"
    known = _FRACTIONS.get((top, bottom))
    if known:
        return known
    return f"{numbers.cardinal(top)} over {numbers.cardinal(bottom)}"


def _date(match: re.Match[str]) -> str:
    """Month/day/year, the order American text writes."""
    month, day, year = int(match.group(1)), int(match.group(2)), match.group(3)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match.group(0).replace("/", " slash ")
    full_year = int(year) if len(year) == 4 else 2000 + int(year)
    return f"{MONTHS[month - 1]} {numbers.ordinal(day)}, {numbers.year(full_year)}"


def _phone(match: re.Match[str]) -> str:
    return ", ".join(numbers.digits(group) for group in match.group(0).split("-"))


def _version(match: re.Match[str]) -> str:
    return " point ".join(numbers.cardinal(int(part)) for part in match.group(0).split("."))


def _range(match: re.Match[str]) -> str:
    return f"{_read(match.group(1), match.group(2))} to {_read(match.group(3), match.group(4))}"


def _read(whole: str, fraction: str | None) -> str:
    """A bare number: a year, a code with leading zeros, or a quantity."""
    digits = whole.replace(",", "")
    if not fraction and "," not in whole and len(digits) == 4 and 1100 <= int(digits) <= 2099:
        return numbers.year(int(digits))  # a bare four-digit number in this span is nearly always a year
    if not fraction and len(digits) > 1 and digits.startswith("0"):
        return numbers.digits(digits)  # "007", a code or a PIN
    return _number(whole, fraction)


def _plain(match: re.Match[str]) -> str:
    return ("minus " if match.group(1) else "") + _read(match.group(2), match.group(3))


Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str] | str]

RULES: tuple[Rule, ...] = (
    (re.compile(r"([$€£¥₹])\s?" + _NUM + _SCALE_WORDS + r"\b"), _money),
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?(?!\d)"),
     _iso_datetime),
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), _iso_day),
    (re.compile(r"\b(\d{1,2}):(\d{2}):(\d{2})\b"), _clock_seconds),
    (re.compile(r"\b(\d{1,2}:\d{2})\s?[-–]\s?(?=\d{1,2}:\d{2}\b)"), r"\1 to "),  # 10:00-11:00
    (re.compile(r"\b(\d{1,2}):(\d{2})(?:\s*([AaPp]\.?[Mm](?:\.(?!$))?))?(?![\d:])"), _time),
    (re.compile(r"\b(\d{1,2})\s*([AaPp]\.?[Mm](?:\.(?!$))?)(?!\w)"), _hour_period),
    (re.compile(_NUM + r"\s?%"), _percent),
    (re.compile(r"(?:\b(\d{2})|'|\b)(\d0)'?s\b"), _decade),
    (re.compile(r"\b" + _NUM + r"\s?(" + _UNIT_NAMES + r")(?![\w/])"), _unit),
    (re.compile(r"\b(\d{1,3}(?:,\d{3})+|\d+)(?:st|nd|rd|th)\b"), _ordinal),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})\b"), _date),
    (re.compile(r"\b(?:\d{3}-)?\d{3}-\d{4}\b"), _phone),
    (re.compile(r"\b\d+(?:\.\d+){2,}\b"), _version),
    (re.compile(r"(?<![\d/])\b(\d{1,2})/(\d{1,2})\b(?!/)"), _fraction),
    (re.compile(r"\b" + _NUM + r"(?:-|\s?–\s?)" + _NUM + r"\b"), _range),
    (re.compile(r"#(?=\d)"), "number "),
    (re.compile(r"(?<=\d)\s?[x*]\s?(?=\d)"), " times "),
    (re.compile(r"(?<=\d)\s[-–]\s(?=\d)"), " minus "),
    (re.compile(r"(?<=\d)\s?/\s?(?=\d)"), " divided by "),
    (re.compile(r"(?<![\w.,])(-)?" + _NUM + r"(?!\w)"), _plain),
)


def say_abbreviations(text: str) -> str:
    def say(match: re.Match[str]) -> str:
        words = ABBREVIATIONS[match.group(1)]
        # "… etc." at the very end also ended the sentence.
        return words + "." if match.end() == len(text) and match.group(1).endswith(".") else words

    return _ABBREVIATION.sub(say, text)


def say_numbers(text: str) -> str:
    """Every number of ``text`` in words, read the way its context says."""
    for pattern, replacement in RULES:
        text = pattern.sub(replacement, text)
    return text


def say_symbols(text: str) -> str:
    """Symbols that mean words; the rest of the punctuation is left for the voice's own pauses."""
    for symbol, words in _SYMBOLS.items():
        text = text.replace(symbol, words)
    text = re.sub(r"(?<=\w)_(?=\w)", " ", text)
    text = text.replace("and/or", "and or")
    return re.sub(r"(?<=\w)/(?=\w)", " or ", text)
