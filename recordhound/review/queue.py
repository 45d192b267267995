"""The review queue: pending entities and price changes, decisions, and the jobs that apply them.

Written once over :class:`~recordhound.review.docstore.DocStore`, so the embedded and the Redis
queue behave the same (one contract test suite runs on both). Collections:

``review:entries``      every entry by id: pending entities (artist/label/style) and price changes
``tasks:pending``       ids of entities waiting for a decision
``tasks:price_changes`` ids of price changes waiting for a decision
``tasks:approved``      decisions (jobs) the apply worker has not taken yet
``tasks:processing``    jobs leased by an apply worker (with a deadline)
``tasks:completed``     jobs applied, with what they did
``tasks:failed``        jobs that failed (error, attempts) and entries whose time-to-live ran out
``review:index``        "kind|name key" (or "price|offer id") → entry id
``review:parked``       items waiting for entities, by "source id:external id"
``review:waiting:ID``   the parked items entry ID holds back
``review:rejected``     items that lost a required field to a skip, with the reason
"""

from __future__ import annotations

from recordhound.review.crawl_side import CrawlSide
from recordhound.review.records import (  # noqa: F401 - the queue's vocabulary, imported from here
    ACTIONS, APPROVED, COMPLETED, DECIDED, EDITABLE, ENTITY_KINDS, ENTRIES, FAILED, INDEX, KINDS, PARKED,
    PENDING, PRICES, PROCESSING, REJECTED, SOURCES_KEPT, Origin, Parked, PriceHold, ReviewError, Unknown,
    index_key, waiting,
)
from recordhound.review.reviewer_side import Decision, ReviewerSide  # noqa: F401 - Decision: part of the API
from recordhound.review.worker_side import WorkerSide


class ReviewQueue(CrawlSide, ReviewerSide, WorkerSide):
    """The whole queue over one document store; each side lives in its own module."""

    def close(self) -> None:
        self.store.close()
