"""A crawl on a real 3-master Redis Cluster (started by the test), and a crawl stored under the key
names of before taken over at open.

Every key of one crawl carries the crawl's hash tag, so the Lua scripts that build key names from a
prefix (the seen buckets, the lease sets) stay on one node; two nodes crawl the demo shop through a
``redis+cluster://`` URL and the product DB equals the shop's truth, ``frontier verify`` clean.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.exceptions import RedisClusterException

from recordhound.demo.process import ShopProcess
from recordhound.frontier.backend import Entry
from recordhound.frontier.redis import RedisFrontier
from recordhound.redis_client import connect, crawl_prefix
from tests.integration.crawlers import CrawlSetup
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.rediscluster import RedisCluster
from tests.services import PostgresDatabase, redis_url, unique_prefix


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    with RedisCluster(tmp_path / "cluster") as running:
        yield running


def _slots(cluster: RedisCluster, prefix: str) -> dict[str, set[int]]:
    """The hash slots of the prefix's keys, by kind: the crawl's, each host's, the review queue's."""
    client = connect(cluster.url)
    found: dict[str, set[int]] = defaultdict(set)
    for key in (k.decode() for k in cluster.keys()):
        if key.startswith(f"{prefix}:{{demo}}:"):
            found["crawl"].add(client.cluster_keyslot(key))
        elif key.startswith(f"{prefix}:hosts:"):
            found[key.split(":")[2].strip("{}")].add(client.cluster_keyslot(key))
        elif key.startswith(f"{{{prefix}}}:"):
            found["review"].add(client.cluster_keyslot(key))
        elif prefix in key:
            found["untagged"].add(client.cluster_keyslot(key))
    client.close()
    return found


def test_two_nodes_crawl_the_demo_shop_on_a_redis_cluster(tmp_path: Path, cluster: RedisCluster) -> None:
    with ShopProcess(150, seed=51) as shop, PostgresDatabase() as database:
        setup = CrawlSetup(tmp_path / "crawl", shop.url, database.url, cluster.url)
        setup.workdir.mkdir()
        try:
            nodes = [setup.start("DOWNLOAD_DELAY=0.01", "RECORDHOUND_POLITENESS_CONCURRENCY=4", name=f"node{i}")
                     for i in range(2)]
            codes = [node.wait(300) for node in nodes]
            assert codes == [0, 0], (tmp_path / "crawl" / "node0.log").read_text()[-3000:]
            assert all(node.stats().get("response_received_count", 0) for node in nodes)
            assert_crawl_matches_truth(setup, shop.truth())
            slots = _slots(cluster, setup.prefix)
            assert len(slots["crawl"]) == 1 and "untagged" not in slots, dict(slots)
            assert all(len(found) == 1 for found in slots.values()), dict(slots)
        finally:
            setup.cleanup()


def test_the_key_names_of_before_are_refused_by_a_cluster(cluster: RedisCluster) -> None:
    """Why the hash tag: an untagged crawl's scripts touch keys of many slots."""
    untagged = RedisFrontier(cluster.url, "rhtest:demo")
    untagged.open()
    try:
        with pytest.raises(RedisClusterException, match="same key slot"):  # refused before it is sent
            untagged.commit([Entry(b"12345678", 0, "{}")], [], [])
    finally:
        untagged.close()


def test_a_crawl_stored_under_the_names_of_before_is_taken_over_at_open() -> None:
    prefix = unique_prefix()
    old = RedisFrontier(redis_url(), f"{prefix}:demo")  # the layout of before: no hash tag
    old.open()
    old.commit([Entry(n.to_bytes(8, "big"), 0, f'{{"url": "/{n}"}}') for n in range(40)], [], [], seeded=True)
    leased = old.lease("node-1", 5, 60.0)
    before = old.counts()
    old.close()
    new = RedisFrontier(redis_url(), crawl_prefix(prefix, "demo"))
    try:
        new.open()
        assert new.counts() == before and new.verify() == []
        assert sorted(lease.id for lease in new.leases_of("node-1")) == sorted(row.id for row in leased)
        assert new.is_seen((7).to_bytes(8, "big"))
        assert list(new.r.scan_iter(match=f"{prefix}:demo:*")) == []
        new.close()
        new.open()  # once: the next open finds the new names and renames nothing
        assert new.counts() == before
    finally:
        new.reset()
        new.close()
