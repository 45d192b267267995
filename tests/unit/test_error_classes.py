"""Which errors pause and retry (the service is away) and which fail loudly (a bug, bad data)."""

from __future__ import annotations

import sqlite3

import pytest
import redis
from sqlalchemy.exc import DataError, IntegrityError, OperationalError

from recordhound.catalog.errors import WriteRaceError, describe, is_row_error, is_transient
from recordhound.frontier.redis import RedisFrontier
from recordhound.frontier.sqlite import SqliteFrontier
from recordhound.review.docstore import ReviewStoreError


def test_frontier_backends_tell_an_outage_from_a_bug() -> None:
    embedded, shared = SqliteFrontier("unused.sqlite3"), RedisFrontier("redis://127.0.0.1:1/0", "p")
    assert embedded.is_transient(sqlite3.OperationalError("database is locked"))
    assert not embedded.is_transient(sqlite3.IntegrityError("UNIQUE constraint failed"))
    assert not embedded.is_transient(KeyError("payload"))
    assert not embedded.is_transient(sqlite3.OperationalError("attempt to write a readonly database"))
    assert not embedded.is_transient(sqlite3.OperationalError("no such table: queue"))
    assert embedded.is_transient(sqlite3.OperationalError("disk I/O error"))
    assert shared.is_transient(redis.ConnectionError("Connection refused"))
    assert shared.is_transient(redis.TimeoutError())
    assert shared.is_transient(redis.ResponseError("OOM command not allowed when used memory > 'maxmemory'"))
    assert not shared.is_transient(redis.ResponseError("WRONGTYPE Operation against a key"))
    # a Redis Cluster during a failover or resharding, as redis-py reports it (the code stripped)
    assert shared.is_transient(redis.exceptions.ClusterDownError("The cluster is down"))
    assert shared.is_transient(redis.exceptions.TryAgainError("Multiple keys request during rehashing of slot"))
    assert shared.is_transient(redis.exceptions.SlotNotCoveredError("Slot 866 is not covered by the cluster"))
    assert not shared.is_transient(redis.exceptions.ClusterCrossSlotError("Keys in request don't hash to the same slot"))
    assert not shared.is_transient(TypeError("bad argument"))
    assert not shared.is_transient(redis.AuthenticationError("invalid username-password pair"))
    # a TLS certificate's OCSP check that refuses (redis-py's AuthorizationError, a ConnectionError): no wait cures it
    assert not shared.is_transient(redis.exceptions.AuthorizationError("not authorized to view this ocsp certificate"))


def test_writer_errors_outage_race_and_row() -> None:
    assert is_transient(OperationalError("SELECT 1", {}, Exception("server closed the connection")))
    assert is_transient(ReviewStoreError("review queue on Redis: Connection refused"))
    assert is_transient(WriteRaceError("raced"))
    refused = DataError("INSERT", {}, Exception("value too long for type character varying(200)\nDETAIL"))
    assert is_row_error(refused) and not is_transient(refused)
    assert is_row_error(IntegrityError("INSERT", {}, Exception("duplicate key")))
    assert not is_row_error(ValueError("a bug"))
    assert describe(refused) == "the database refused it: Exception: value too long for type character varying(200)"


def test_a_review_queue_on_a_redis_cluster_that_is_down_is_an_outage_not_a_bug() -> None:
    """A Redis Cluster client connects when it is made (the writer makes it at its first batch): that
    failure is the review queue's, retried as an outage; before, it failed the batch's items."""
    from recordhound.review.docstore import RedisDocStore

    with pytest.raises(ReviewStoreError) as raised:
        RedisDocStore("redis+cluster://127.0.0.1:1/0", "p")
    assert is_transient(raised.value)
