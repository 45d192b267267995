"""What crosses to the store's writer process is recordhound's own item classes: subclasses a launcher
script defined (in a ``__main__`` the writer does not have) become the plain classes, field for field."""

from __future__ import annotations

import pickle
import sys
from dataclasses import asdict
from decimal import Decimal

import pytest

from recordhound.catalog import worker
from recordhound.items import FieldProblem, Offer, Release
from recordhound.pipelines.writer_process import _one_by_one, plain


class MyOffer(Offer):
    pass


class MyProblem(FieldProblem):
    pass


class MyRelease(Release):
    pass


def _release(cls: type[Release], offer: type[Offer], problem: type[FieldProblem]) -> Release:
    return cls("demo", "http://shop/r/1", "DR-1", "Title", ["Artist"], "Label", "CAT-1", 1999, ["House"],
               Decimal("9.99"), "EUR", True, [problem("price", "no amount", "Price on request")],
               offers=[offer("DR-1", "http://shop/r/1", "LP", "new", price=Decimal("9.99"), currency="EUR"),
                       Offer("DR-1-U", "http://shop/r/1", "LP", "used", "VG+", "VG")])


def test_a_plain_release_is_handed_on_as_it_is() -> None:
    item = _release(Release, Offer, FieldProblem)
    assert plain(item) is item


def test_subclasses_become_the_plain_classes_with_every_field() -> None:
    for item in (_release(MyRelease, Offer, FieldProblem), _release(Release, MyOffer, FieldProblem),
                 _release(Release, Offer, MyProblem), _release(MyRelease, MyOffer, MyProblem)):
        made = plain(item)
        assert type(made) is Release
        assert [type(o) for o in made.offers] == [Offer, Offer]
        assert [type(p) for p in made.problems] == [FieldProblem]
        assert asdict(made) == asdict(_release(Release, Offer, FieldProblem))
        assert [name for name in (b"MyRelease", b"MyOffer", b"MyProblem") if name in pickle.dumps(made)] == []


class _Exits:
    """A value whose unpickling ends the process that reads it."""

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (sys.exit, (3,))


def test_a_batch_the_writer_cannot_read_is_told_apart_even_when_reading_raises_system_exit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "_writer", object())  # write() returns before it would use it
    assert worker.write(1, pickle.dumps([_release(Release, Offer, FieldProblem), _Exits()])) is None


def test_items_sent_one_by_one_keep_the_last_of_an_external_id_and_say_why_one_cannot_be_pickled() -> None:
    first, last = _release(Release, Offer, FieldProblem), _release(Release, Offer, FieldProblem)
    last.title = "Newer"
    odd = _release(Release, Offer, FieldProblem)
    odd.external_id, odd.url, odd.country = "DR-2", "http://shop/r/2", lambda: None  # type: ignore[assignment]
    sent = _one_by_one([first, odd, last])
    assert [pickle.loads(identity).external_id for identity, _ in sent] == ["DR-1", "DR-2"]
    assert pickle.loads(sent[0][1]).title == "Newer"
    assert isinstance(sent[1][1], str) and "pickle" in sent[1][1].lower()
    assert pickle.loads(sent[1][0]).url == "http://shop/r/2"


class _Unprintable:
    def __str__(self) -> str:
        raise ValueError("no text")


def test_an_item_sent_one_by_one_keeps_its_external_id_when_another_value_has_no_text() -> None:
    item, other = _release(Release, Offer, FieldProblem), _release(Release, Offer, FieldProblem)
    item.title = _Unprintable()  # type: ignore[assignment]
    other.external_id, other.url = _Unprintable(), _Unprintable()  # type: ignore[assignment]
    identities = [pickle.loads(identity) for identity, _ in _one_by_one([item, other])]
    assert [(i.external_id, i.url, i.title) for i in identities] == [
        ("DR-1", "http://shop/r/1", ""), ("item 2 of a batch", "item 2 of a batch", "Title")]


class _Name(str):
    """A launcher's text type whose ``str()`` is itself: the writer process could not import it."""

    def __str__(self) -> str:
        return self


def test_an_identity_holds_plain_strings_whatever_the_item_s_text_types() -> None:
    item = _release(Release, Offer, FieldProblem)
    item.external_id, item.url, item.title = _Name("DR-9"), _Name("http://shop/r/9"), None  # type: ignore[assignment]
    [(identity, _)] = _one_by_one([item])
    assert __name__.encode() not in identity  # nothing of this module's classes goes to the writer
    named = pickle.loads(identity)
    assert [(value, type(value)) for value in (named.external_id, named.url, named.title)] == [
        ("DR-9", str), ("http://shop/r/9", str), ("", str)]
