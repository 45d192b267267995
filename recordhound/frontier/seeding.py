"""The start requests of a crawl: written once, by one node, and marked ``seeded`` with them.

One node claims them (compare-and-set in the store); the others wait until they are in. The
claimant keeps the entries it wrote, so if the store comes back from an older snapshot without
the ``seeded`` mark (a replica failover, a power loss with ``appendfsync everysec``), the node
writes them again: the seen-set drops those that survived, the rest are queued anew, and the
crawl can drain again.
"""

from __future__ import annotations

import logging

from recordhound import failpoints
from recordhound.frontier import lifecycle
from recordhound.frontier.backend import Counts, Entry, FrontierBackend

logger = logging.getLogger(__name__)
MAX_KEPT = 100_000  # start requests kept for a re-write; beyond that the mark alone is re-derived


class Seeding:
    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.claimed = False
        self.written = False  # this process wrote the start requests and the seeded mark

    def claim(self, backend: FrontierBackend, token: str, lease_seconds: float) -> str:
        """"claimed": this node writes the start requests; "seeded": they are in; "wait":
        another live node claimed them and has not finished."""
        counts = backend.counts()
        if counts.seeded:
            return "seeded"
        if counts.start_claim == token:
            self.claimed = True
            return "claimed"
        if counts.start_claim and lifecycle.claimant_alive(backend, counts.start_claim, lease_seconds):
            return "wait"
        if not backend.claim_start(token, counts.start_claim):
            return "wait"
        if counts.start_claim:
            logger.warning("The node that claimed the start requests is gone; this node writes them")
        self.claimed = True
        failpoints.hit("frontier.after_start_claim")
        return "claimed"

    def keep(self, entry: Entry) -> None:
        if self.claimed and not self.written and len(self.entries) < MAX_KEPT:
            self.entries.append(entry)

    def lost(self, counts: Counts) -> bool:
        """The store no longer knows the start requests were written, though this process wrote them."""
        return self.written and not counts.seeded

    def again(self) -> list[Entry]:
        logger.warning("The frontier store lost the mark that the start requests are in (it came back from "
                       "an older snapshot?); writing the %d start requests again", len(self.entries))
        return list(self.entries)
