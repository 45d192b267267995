"""The frontier reset's owner as a state machine, on both backends: random sequences of parties (handles
on one crawl: a process each) that fill the crawl, complete it, begin its reset (from "completed", or
take a left-over one over from the owner they read), try a stale owner, and reset (their own, or the
operator's unconditional one), against a model of the decisions alone: a compare-and-set wins only from
the status and owner the party saw; a party's reset deletes only while it owns the reset (else nothing,
and False); the operator's always deletes; the counts, status and owner are the model's after each step."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from recordhound.frontier.backend import Entry, FrontierBackend
from recordhound.frontier.redis import RedisFrontier
from recordhound.frontier.sqlite import SqliteFrontier
from recordhound.redis_client import crawl_prefix
from tests.services import redis_url, unique_prefix

PARTIES = 3


class ResetMachine(RuleBasedStateMachine):
    backend_kind = "embedded"
    folder = Path(".")

    def __init__(self) -> None:
        super().__init__()
        prefix = crawl_prefix(unique_prefix(), "reset")
        path = str(self.folder / f"{prefix.replace(':', '_')}.sqlite3")
        self.parties: list[FrontierBackend] = []
        for _ in range(PARTIES):
            party = SqliteFrontier(path) if self.backend_kind == "embedded" else RedisFrontier(redis_url(), prefix)
            party.open()
            self.parties.append(party)
        self.status, self.urls, self.turn = "new", set[str](), 0
        self.owner: int | None = None  # the begin (a number) that owns the reset in progress
        self.began: list[int | None] = [None] * PARTIES  # per party: the begin it made and has not finished

    @rule(party=st.integers(0, PARTIES - 1), url=st.integers(0, 30))
    @precondition(lambda self: self.status != "resetting")
    def fill(self, party: int, url: int) -> None:
        """A node queues a URL (the crawl runs)."""
        name = f"https://shop/{url}"
        self.parties[party].commit([Entry(hashlib.sha1(name.encode()).digest()[:8], 0, name)], [], [], seeded=True)
        self.parties[party].set_status("running")
        self.status = "running"
        self.urls.add(name)

    @rule()
    @precondition(lambda self: self.status == "running")
    def complete(self) -> None:
        self.parties[0].set_status("completed")
        self.status = "completed"

    @rule(party=st.integers(0, PARTIES - 1))
    @precondition(lambda self: self.status in ("completed", "resetting"))
    def begin(self, party: int) -> None:
        """From "completed", or taking a left-over reset over from the owner the party reads now: it wins."""
        backend = self.parties[party]
        seen = backend.reset_owner() if self.status == "resetting" else ""
        assert backend.begin_reset(self.status, seen)
        self.turn += 1
        self.status, self.owner, self.began[party] = "resetting", self.turn, self.turn

    @rule(party=st.integers(0, PARTIES - 1))
    @precondition(lambda self: self.status == "resetting")
    def begin_from_a_stale_read(self, party: int) -> None:
        """A party that read another owner (or none) before the last begin: refused, nothing changes."""
        assert not self.parties[party].begin_reset("resetting", "a-stale-owner")
        assert not self.parties[party].begin_reset("completed")

    @rule(party=st.integers(0, PARTIES - 1))
    @precondition(lambda self: any(b is not None for b in self.began))
    def reset_of_a_party_that_began_one(self, party: int) -> None:
        if self.began[party] is None:
            return
        owns = self.began[party] == self.owner and self.status == "resetting"
        assert self.parties[party].reset() == owns
        if owns:
            self._emptied()
            self.began[party] = None

    @rule(party=st.integers(0, PARTIES - 1))
    def operator_reset(self, party: int) -> None:
        """`frontier reset` (a fresh handle: it began nothing): always deletes."""
        if self.began[party] is not None:
            return
        assert self.parties[party].reset()
        self._emptied()

    def _emptied(self) -> None:
        self.status, self.owner, self.urls = "new", None, set()

    @invariant()
    def the_store_is_the_model(self) -> None:
        counts = self.parties[0].counts()
        assert (counts.status, counts.seen) == (self.status, len(self.urls)), (counts, self.status, self.urls)
        assert bool(self.parties[1].reset_owner()) == (self.status == "resetting")

    def teardown(self) -> None:
        fresh = self.parties[0]
        fresh._reset_by = ""  # type: ignore[attr-defined]  # the operator's reset: the store left empty
        fresh.reset()
        for party in self.parties:
            party.close()


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_the_reset_owner_machine(kind: str, tmp_path: Path) -> None:
    machine = type(f"ResetMachine_{kind}", (ResetMachine,), {"backend_kind": kind, "folder": tmp_path})
    run = machine.TestCase
    run.settings = settings(max_examples=40, stateful_step_count=25, deadline=None,
                            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    run().runTest()
