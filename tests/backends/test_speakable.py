"""Which tokens write a script a Latin-script voice cannot say, and which voices those are."""

from __future__ import annotations

import pytest

from speech_to_speech.llm.speakable import foreign_token_ids, speaks_latin_only, writes_foreign_script


@pytest.mark.parametrize("piece", [
    "こんにちは".encode(), "ありがとう".encode()[:4], "你好".encode(), "Привет".encode(), "γεια".encode(),
    "שלום".encode(), "नमस्ते".encode(), "🙂".encode(), "안녕".encode(), "日".encode()[:1],
])
def test_other_scripts_and_their_first_bytes(piece: bytes) -> None:
    assert writes_foreign_script(piece)


@pytest.mark.parametrize("piece", [
    b" hello", b"Arigato", "café".encode(), "Grüße".encode(), "naïve".encode(), "Tiếng Việt".encode(),
    "—".encode(), "’s".encode(), "…".encode(), "°C".encode(), "€5".encode(), "—".encode()[:1], b"\x80",
    b"42", b"",
])
def test_latin_text_punctuation_and_pieces_that_may_still_become_latin(piece: bytes) -> None:
    assert not writes_foreign_script(piece)


def test_foreign_token_ids_are_positions_in_the_vocabulary() -> None:
    assert foreign_token_ids([b"a", "日本".encode(), b" the", "Да".encode()]).tolist() == [1, 3]


@pytest.mark.parametrize(("languages", "latin"), [
    (("en",), True), (("en-US", "fr"), True), (("en", "ja"), False), (("zh",), False), (None, False), ((), False),
])
def test_which_voices_speak_latin_script_only(languages: tuple[str, ...] | None, latin: bool) -> None:
    assert speaks_latin_only(languages) is latin
