"""The viseme set we send, and which phoneme shows which viseme.

Fifteen mouth shapes, the set most avatar rigs (and the Oculus/Meta lip-sync
convention) already have blend shapes for. The names are what goes on the
wire; docs/visemes.md has the same table for client authors.

Phonemes are in the Kokoro/misaki alphabet that hibari's G2P writes: IPA,
plus capital letters for English diphthongs (``A`` = eɪ, ``I`` = aɪ,
``O`` = oʊ, ``W`` = aʊ, ``Y`` = ɔɪ) and ``T`` for the American flap. Stress
and length marks carry no shape of their own.
"""

from __future__ import annotations

from typing import Final

SILENCE: Final = "sil"

# name -> what the mouth does (the docs' table).
VISEMES: Final[dict[str, str]] = {
    "sil": "closed, at rest (silence, pauses)",
    "PP": "lips pressed together (p, b, m)",
    "FF": "lower lip under the upper teeth (f, v)",
    "TH": "tongue between the teeth (th)",
    "DD": "tongue behind the upper teeth, jaw slightly open (t, d)",
    "kk": "back of the tongue raised, jaw open (k, g, ng)",
    "CH": "lips pushed forward, teeth close (ch, j, sh, zh)",
    "SS": "teeth close, lips spread (s, z)",
    "nn": "tongue up, lips slightly apart (n, l)",
    "RR": "lips slightly rounded (r)",
    "aa": "jaw wide open (father, cat, cut, my, now)",
    "E": "mid open, lips spread (bed, say, the)",
    "ih": "nearly closed, lips spread (sit, see, yes)",
    "oh": "open, lips rounded (law, go, boy)",
    "ou": "small rounded lips (food, good, we)",
}

_GROUPS: Final[dict[str, str]] = {
    "PP": "pbmɸβ",
    "FF": "fvʋ",
    "TH": "θð",
    "DD": "tdTɾʈɖ",
    "kk": "kɡgŋxqɣχɰ",
    "CH": "ʧʤʃʒɕʑʨʥçʝ",
    "SS": "szʦʣʂ",
    "nn": "nlɲɳɴʎ",
    "RR": "ɹrɻʁɚɽ",
    "aa": "ɑaæɐʌɒIW",
    "E": "ɛeəɜᵊAœø",
    "ih": "ɪiyᵻɨj",
    "oh": "ɔoOYɤ",
    "ou": "uʊwɯɥ",
}

PHONEME_VISEMES: Final[dict[str, str]] = {phoneme: viseme for viseme, group in _GROUPS.items() for phoneme in group}

# A breath: the mouth takes the shape of the sound it opens into.
LIKE_NEXT: Final = frozenset("hʔ")
# Pauses of their own (silence on the mouth); spaces between words are not pauses.
PAUSES: Final[dict[str, float]] = {",": 1.5, ";": 2.0, ":": 2.0, "—": 2.0, "…": 2.5, ".": 0.0, "!": 0.0, "?": 0.0}

VOWELS: Final = frozenset("ɑaæɐʌɒɛeəɜᵊœøɪiyᵻɨɔoɤuʊɯɚ")
DIPHTHONGS: Final = frozenset("AIOWY")
STOPS: Final = frozenset("pbtdkɡgTɾʔ")


def phoneme_weight(phoneme: str, stressed: bool) -> float:
    """How long a phoneme lasts, relative to an unstressed consonant (a rough English average)."""
    if phoneme in DIPHTHONGS:
        weight = 2.2
    elif phoneme in VOWELS:
        weight = 1.5 if phoneme not in "əᵊ" else 0.9
    elif phoneme in STOPS:
        weight = 0.9
    else:
        weight = 1.0
    return weight * 1.3 if stressed and (phoneme in VOWELS or phoneme in DIPHTHONGS) else weight
