from __future__ import annotations

import pytest
from scrapy import Request, Spider

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
