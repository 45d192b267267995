"""Offer ids when the page does not give one per offer (expected names written out, not computed)."""

from __future__ import annotations

from recordhound.items import Offer
from recordhound.normalize import offer_ids


def test_names_hold_page_format_condition_and_grades_and_count_only_equal_ones() -> None:
    offers = [Offer("", "u", "LP", "used", "VG+", "VG"), Offer("", "u", "LP", "new"), Offer("", "u", "CD", None),
              Offer("", "u", "LP", "used", "VG+", "VG"), Offer("", "u", "LP", "used", "NM", None)]
    assert offer_ids("p1", offers) == ["p1#LP/used/VG+/VG", "p1#LP/new", "p1#CD/-", "p1#LP/used/VG+/VG~2",
                                       "p1#LP/used/NM/-"]
    assert offer_ids("p1", [Offer("", "u", "Cassette", "new"), *offers])[1:] == offer_ids("p1", offers)


def test_a_shop_id_on_the_page_twice_keeps_both_offers_apart() -> None:
    offers = [Offer("SKU-1", "u", "LP", "new"), Offer("SKU-1", "u", "CD", "new"), Offer("", "u", "LP", "new")]
    assert offer_ids("p1", offers) == ["SKU-1", "SKU-1~2", "p1#LP/new"]
