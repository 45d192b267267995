from __future__ import annotations

import pytest
from scrapy import FormRequest, Request, Spider

from recordhound.frontier import serialize


class _Spider(Spider):
    name = "t"

    def parse_item(self, response: object) -> None: ...

    def on_error(self, failure: object) -> None: ...


def test_round_trip_keeps_callbacks_priority_headers_and_body() -> None:
    spider = _Spider()
    request = Request("http://shop/p?x=1", callback=spider.parse_item, errback=spider.on_error, priority=20,
                      method="POST", body=b"\xffraw", headers={"X-Kind": "product"},
                      meta={"recordhound_kind": "product", "recordhound_frontier_id": 7, "depth": 2})
    payload = serialize.dumps(request, spider)
    assert "recordhound_frontier_id" not in payload  # process-local ids are never stored
    back = serialize.loads(payload, spider)
    assert (back.url, back.callback, back.errback, back.priority, back.method, back.body) == (
        request.url, spider.parse_item, spider.on_error, 20, "POST", b"\xffraw")
    assert back.headers["X-Kind"] == b"product" and back.meta == {"recordhound_kind": "product", "depth": 2}


@pytest.mark.parametrize("make", [
    lambda s: Request("http://shop/", callback=lambda r: None),
    lambda s: Request("http://shop/", callback=s.parse_item, meta={"page": object()}),
    lambda s: Request("http://shop/", callback=s.parse_item, cb_kwargs={"when": {1, 2}}),
])
def test_unserializable_requests_name_the_request(make) -> None:  # type: ignore[no-untyped-def]
    spider = _Spider()
    with pytest.raises(serialize.UnserializableRequest, match="cannot store <GET http://shop/>"):
        serialize.dumps(make(spider), spider)


class _Other(_Spider):
    alias = _Spider.parse_item  # a second name of the same method: Scrapy stores the first in name order


@pytest.mark.parametrize("make", [
    lambda s: Request("http://shop/a", callback=s.parse_item, errback=s.on_error, meta={"k": 1}, priority=3),
    lambda s: Request("http://shop/b"),
    lambda s: Request("http://shop/c", callback=s.alias, cookies={"a": "b"}, flags=["f"], cb_kwargs={"n": 2}),
    lambda s: FormRequest("http://shop/d", formdata={"q": "x"}, callback=s.on_error, dont_filter=True),
])
def test_to_dict_is_scrapys_to_dict(make) -> None:  # type: ignore[no-untyped-def]
    spider = _Other()
    for _ in range(2):  # the second call uses the table of method names
        request = make(spider)
        assert serialize.to_dict(request, spider) == request.to_dict(spider=spider)


def _late(self: Spider, response: object) -> None: ...


def test_a_method_added_after_the_first_request_is_found() -> None:
    spider = _Spider()
    serialize.dumps(Request("http://shop/", callback=spider.parse_item), spider)  # the table is made here
    spider.late = _late.__get__(spider)  # type: ignore[attr-defined]
    request = Request("http://shop/", callback=spider.late)  # type: ignore[attr-defined]
    assert serialize.to_dict(request, spider)["callback"] == "late"


def test_a_name_given_to_another_method_after_the_first_request_is_not_stored_for_the_old_one() -> None:
    """The table was made with ``parse_item``; once that name means another method, a request for
    the original one must not come back with the new one (Scrapy's own search decides: it raises)."""
    spider = _Spider()
    original = spider.parse_item
    serialize.dumps(Request("http://shop/", callback=original), spider)  # the table is made here
    spider.parse_item = _late.__get__(spider)  # type: ignore[method-assign]
    with pytest.raises(serialize.UnserializableRequest):
        serialize.dumps(Request("http://shop/", callback=original), spider)


def test_the_gates_start_time_is_not_stored_with_a_request() -> None:
    from recordhound.frontier.hostgate import STARTED_META

    spider = _Spider()
    request = Request("http://shop/p", callback=spider.parse_item, meta={STARTED_META: 12.5, "depth": 1})
    payload = serialize.dumps(request, spider)
    assert STARTED_META not in payload  # a monotonic time of this process: meaningless in another
    assert serialize.loads(payload, spider).meta == {"depth": 1}
