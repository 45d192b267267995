"""What crosses to the store's writer process is recordhound's own item classes: subclasses a launcher
script defined (in a ``__main__`` the writer does not have) become the plain classes, field for field."""

from __future__ import annotations

import pickle
from dataclasses import asdict
from decimal import Decimal

from recordhound.items import FieldProblem, Offer, Release
from recordhound.pipelines.writer_process import plain


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
