"""Named crash points: the process kills itself with SIGKILL at an exact step of the write path.

Off unless the environment says otherwise (tests and ``bench/torture.py`` set it)::

    RECORDHOUND_FAILPOINTS="store.after_commit=kill@3,frontier.before_flush=kill"

``NAME=kill`` dies at the first time the step is reached, ``NAME=kill@N`` at the N-th;
``NAME=stop[@N]`` freezes there with SIGSTOP instead (a test then kills or continues it);
``NAME=hang[@N]`` holds the thread that reached the step for good, the rest of the process going on
(a call that a silent database holds: in a thread writer, the crawler's writer thread).
``NAME=kill@/path`` dies every time the step is reached for a page whose URL ends with ``/path``
(steps that name their page: ``spider.output_exhausted``, ``spider.item_settled``), in every run: a page that kills the crawler.
It is an environment variable, not a Scrapy setting, because the steps run in several
processes (the crawler, its writer child, the apply worker, ``recordhound import``) and
children inherit the environment. A writer child kills its crawler too, so "the process
died here" means what it means in production: the whole node is gone.

Every step is listed in ``POINTS``; a name that is not there is a start-up error.
"""

from __future__ import annotations

import os
import signal
import threading

from recordhound.exceptions import ConfigError

ENV = "RECORDHOUND_FAILPOINTS"
ACTIONS = ("kill", "stop", "hang")
POINTS = {
    "spider.output_exhausted": "a callback's output is exhausted (its requests reached the scheduler)",
    "spider.item_settled": "an item of a page was stored (or dropped), the page not yet acked",
    "frontier.before_flush": "new requests, acks and failures are about to be written to the frontier",
    "frontier.after_flush": "the frontier write committed, nothing after it yet",
    "frontier.after_retry_flush": "a frontier write put failed requests back to wait out their backoff",
    "frontier.before_recheck_flush": "pages fetched again are about to be written back with their next due time",
    "frontier.follow_idle": "a following node has nothing due: every lease acked and written, nothing in flight",
    "frontier.close_released": "the close wrote its outcomes and returned its leases; the node has not left the crawl",
    "frontier.joining": "this node reached the frontier store and has not registered in it yet",
    "frontier.after_start_claim": "this node claimed the start requests and has not written them",
    "frontier.reset_begun": "this node won a completed crawl's reset (its status resetting, owned) and deleted nothing",
    "store.before_commit": "a batch written and (a crawl's) the review queue told, its product-DB transaction not committed",
    "store.after_commit": "a batch committed to the product DB (the apply worker's release: the review queue not told yet)",
    "store.opening_source": "the writer is about to open the crawl's source (schema, the source's row, status, first sample)",
    "store.source_opened": "the writer committed the crawl's source opened, its reply (the source's id) not yet sent",
    "store.end_recorded": "the writer committed the crawl's end (status, last sample), its reply not yet sent",
    "store.after_touch": "304 pages moved their offers' last_seen; the pages not acked yet",
    "store.after_review": "a batch committed and the review queue told, its items not yet settled (acked)",
    "store.before_unreadable_rejected": "a batch read item by item: its readable items written, the "
                                        "ones the writer cannot read not yet rejected",
    "store.backpressure_paused": "the crawl paused for back-pressure: items wait for a slow product store, unacked",
    "apply.after_write": "the apply worker wrote a decision to the product DB and has not acked it",
    "apply.after_settle": "the apply worker wrote a decision and settled its entry; its job not acked",
    "alerts.after_send": "an alert reached its receiver and is not yet recorded as sent",
    "import.after_commit": "a file import committed a batch, last_parsed_line not yet moved",
    "jobs.crawl_exited": "a worker's crawl process exited, the counts of its end not written to its job yet",
    "jobs.run_ended": "a worker's job run ended (its crawl or import exited) and its end is not recorded yet",
    "jobs.scrapyd_scheduled": "a worker scheduled its job's crawl on scrapyd and has not written a beat since",
}

_lock = threading.Lock()
_hits: dict[str, int] = {}
_also_kill: int | None = None  # a writer child kills its crawler with it


def parse(spec: str) -> dict[str, tuple[str, int | str]]:
    """``name=kill[@N|@/path]`` / ``name=stop[@N|@/path]`` pairs, comma-separated → name → (action,
    hit number or URL ending)."""
    plan: dict[str, tuple[str, int | str]] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, action = part.partition("=")
        action, _, nth = action.partition("@")
        if name not in POINTS:
            raise ConfigError(f"{ENV}: unknown crash point {name!r}; known: {', '.join(sorted(POINTS))}")
        if action not in ACTIONS or (nth and not nth.isdigit() and not nth.startswith("/")) or nth == "0":
            raise ConfigError(f"{ENV}: {part!r} must be NAME=kill, NAME=stop or NAME=hang, or one with @N (N ≥ 1) "
                              "or @/path")
        plan[name] = (action, nth if nth.startswith("/") else int(nth or 1))
    return plan


_plan = parse(os.environ.get(ENV, ""))


def kill_with(pid: int) -> None:
    """In a helper process (the writer): reaching a crash point kills ``pid`` as well."""
    global _also_kill
    _also_kill = pid


def hit(name: str, page: str = "") -> None:
    """Mark that step ``name`` is reached (for ``page``, a URL, when the step is about one); SIGKILL
    here if the environment asks for it."""
    if not _plan or name not in _plan:
        return
    with _lock:
        _hits[name] = count = _hits.get(name, 0) + 1
    action, nth = _plan[name]
    if not (page.endswith(nth) if isinstance(nth, str) else count == nth):
        return
    if action == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    if action == "hang":
        threading.Event().wait()  # never set
        return
    if _also_kill is not None:
        os.kill(_also_kill, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
