from __future__ import annotations

import tracemalloc

import pytest

from recordhound.text import (
    catalog_number_key, clean, fold, name_key, parse_bool, parse_year, preferred_spelling, split_catalog_numbers, split_names,
    text_or,
)


@pytest.mark.parametrize("spellings", [
    ("The Beatles", "Beatles, The", "the  beatles", "THE BEATLES"),
    ("Hip Hop", "Hip-Hop", "hip hop", "HIP-HOP"),
    ("Drum & Bass", "Drum and Bass", "drum&bass"),
    ("Björk", "Bjork", "BJÖRK"),
    ("Sigur Rós", "Sigur Ros"),
])
def test_spellings_of_one_name_share_a_key(spellings: tuple[str, ...]) -> None:
    assert len({name_key(s) for s in spellings}) == 1


@pytest.mark.parametrize(("value", "key"), [
    ("AC/DC & Friends_2", "ac dc and friends 2"),  # ASCII: the fast path
    ("  Sly &  the Family-Stone!! ", "sly and the family stone"),
    ("Motörhead & Friends", "motorhead and friends"),  # the same rules past ASCII
    ("Straße_Ø", "strasse o"),
])
def test_fold_keys_ascii_and_other_text_alike(value: str, key: str) -> None:
    assert fold(value) == key


def test_different_names_keep_different_keys() -> None:
    assert name_key("The The") != name_key("The")
    assert name_key("Orb, The") != name_key("Orbital")


def test_clean_normalizes_unicode_and_whitespace() -> None:
    assert clean("  Cafe\u0301\u200b  del \n Mar ") == "Café del Mar"
    assert clean("   ") is None


@pytest.mark.parametrize("value", ["a\x1cb\x1f c", "\xa0x\u2003y\u3000", "A\u200b\u00adB", "\u202fz\x85", "plain ascii\t\r\n"])
def test_clean_collapses_exactly_what_a_regex_whitespace_matches(value: str) -> None:
    import re
    import unicodedata

    expected = re.sub(r"\s+", " ", unicodedata.normalize("NFC", value).translate(
        dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad")))).strip() or None
    assert clean(value) == expected


def test_split_names_keeps_ampersand_names_whole() -> None:
    assert split_names(["A / B feat. C", "Simon & Garfunkel", "A"]) == ["A", "B", "C", "Simon & Garfunkel"]


def test_years_and_stock_flags() -> None:
    assert parse_year("Released 1997 (reissue)") == 1997
    assert parse_year("soon") is None
    assert parse_bool("In stock") is True and parse_bool("false") is False
    assert parse_bool("maybe") is None


def test_preferred_spelling_is_the_natural_one() -> None:
    assert preferred_spelling(["Beatles, The", "the beatles", "The Beatles"]) == "The Beatles"
    assert preferred_spelling(["Bjork", "BJÖRK", "Björk"]) == "Björk"


@pytest.mark.parametrize(("printed", "numbers"), [
    ("FLD001 / CAT-2", ["FLD001", "CAT-2"]),
    ("FLD001; CAT-2, XYZ 3 // FLD-001", ["FLD001", "CAT-2", "XYZ 3"]),
    ("SUB 12/3", ["SUB 12/3"]),
    (" - ", []),
    (None, []),
])
def test_a_printed_catalogue_number_may_be_several(printed: str | None, numbers: list[str]) -> None:
    assert split_catalog_numbers(printed) == numbers


def test_the_key_caches_hold_a_bounded_amount_of_memory() -> None:
    """A crawl's writer meets every artist, label and catalogue number of the shop: the caches of
    their keys keep the recent ones, not all (65,536 of each held ~30 MB, filled over a whole crawl)."""
    name_key.cache_clear()
    catalog_number_key.cache_clear()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(50_000):
            name_key(f"Artist Number {n}")
            catalog_number_key(f"CAT-{n:06d}")
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 6 * 2**20, f"the key caches hold {held / 2**20:.1f} MB"


def test_text_or_gives_a_plain_str_whatever_a_value_s_str_returns() -> None:
    """A launcher's value whose ``__str__`` returns itself, a ``str`` subclass: what names an item must
    be a plain ``str`` (it is pickled to the store's writer, which cannot import the launcher's class)."""
    class Name(str):
        def __str__(self) -> str:
            return self

    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no")

    named = text_or(Name("Blue Train"), "?")
    assert (named, type(named)) == ("Blue Train", str)
    assert text_or(Broken(), "item 3 of a batch") == "item 3 of a batch"
