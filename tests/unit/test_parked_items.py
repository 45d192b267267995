"""An item parked by an earlier version comes back in today's form when it is released: its
barcodes as EAN-13 and its offers named by page, format and condition (what migrations 0006 and
0007 did to the product DB), so it matches the rows stored since."""

from __future__ import annotations

from recordhound.review.items import release_from_doc

PARKED = {  # as the version before 0006/0007 parked it
    "source": "shop", "url": "http://shop/album", "external_id": "album-1", "title": "Common Assault EP",
    "artists": ["Gareth Wild"], "barcode": "724384960650",
    "offers": [
        {"external_id": "album-1#CD/new/0", "url": "http://shop/album", "format": "CD", "condition": "new",
         "price": "8.00", "currency": "EUR", "barcode": "00724384960643"},
        {"external_id": "album-1#LP/used/1", "url": "http://shop/album", "format": "LP", "condition": "used",
         "media_grade": "VG+", "sleeve_grade": "VG", "price": "9.00", "currency": "EUR"},
        {"external_id": "album-1#LP/used/2", "url": "http://shop/album", "format": "LP", "condition": "used",
         "media_grade": "VG+", "sleeve_grade": "VG", "price": "7.00", "currency": "EUR"},
        {"external_id": "SHOP-77", "url": "http://shop/album", "format": "LP", "condition": "new",
         "price": "12.00", "currency": "EUR", "barcode": "0724384960650"},
    ],
}


def test_an_item_parked_before_0006_and_0007_is_released_as_written_now() -> None:
    item = release_from_doc(PARKED)
    assert item.barcode == "0724384960650"
    assert [(o.external_id, o.barcode) for o in item.offers] == [
        ("album-1#CD/new", "0724384960643"),
        ("album-1#LP/used/VG+/VG", None),
        ("album-1#LP/used/VG+/VG~2", None),
        ("SHOP-77", "0724384960650"),
    ]


def test_an_item_parked_with_a_placeholder_barcode_is_released_without_it() -> None:
    """Parked before placeholders were refused: "0000000000000" would match every release the writer
    stored with it (releases are matched by barcode first)."""
    parked = {**PARKED, "barcode": "0000000000000",
              "offers": [{**PARKED["offers"][0], "barcode": "000000000000"}, PARKED["offers"][3]]}
    item = release_from_doc(parked)
    assert item.barcode is None
    assert [o.barcode for o in item.offers] == [None, "0724384960650"]


def test_a_placeholder_barcode_is_named_so_in_its_problem() -> None:
    from recordhound.normalize import _barcode
    said: list[tuple[str, str]] = []
    assert _barcode("0000000000000", lambda field, message: said.append((field, message))) is None
    assert _barcode("12345", lambda field, message: said.append((field, message))) is None
    assert said == [("barcode", "'0000000000000' is a placeholder (one digit repeated), not a record's barcode"),
                    ("barcode", "'12345' is not an EAN/UPC (8, 12, 13 or 14 digits with a valid check digit)")]
