"""A scripted reviewer: clears the demo's 1,000-name backlog (``recordhound/demo/backlog.py``) in the
web admin, in Chromium, as a person would with the truth in mind: the bulk "merge each into its
top suggestion" where the top suggestion is right, the keyboard (j/k to move, a/m to decide) and
the merge search for the rest, then "approve all of this source with no suggestion" for the new
names. Used by ``test_review_bulk_browser.py`` and ``bench/review_bulk.py``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from playwright.sync_api import Page, expect
from sqlalchemy import text

from recordhound.demo.backlog import BacklogName, backlog_names, known_names
from recordhound.demo.catalog import Catalog
from recordhound.items import Release
from tests.integration.admin_server import PASSWORD, USER
from tests.integration.review_env import ReviewEnv

logger = logging.getLogger(__name__)
SOURCE = "demo"
ROWS_JS = """() => Array.from(document.querySelectorAll('table#pending tr[data-entry]')).map(row => ({
  id: Number(row.dataset.entry), name: row.dataset.name,
  suggested: Array.from(row.querySelectorAll('input[name=into]')).map(input => Number(input.value))}))"""


@dataclass
class Backlog:
    catalog: Catalog
    names: list[BacklogName]
    extra_new: list[tuple[str, str]] = field(default_factory=list)  # (kind, spelling) of hostile new names

    def right(self, kind: str, spelling: str) -> str | None:
        """The catalog name a pending spelling should merge into; None: approve it."""
        if not hasattr(self, "_into"):
            self._into = {(n.kind, n.spelling): n.into for n in self.names}
        return self._into.get((kind, spelling))


def park_backlog(env: ReviewEnv, catalog: Catalog, extra_new: tuple[tuple[str, str], ...] = ()) -> Backlog:
    """The demo catalog's names in the product DB (a trusted first crawl), the backlog in the queue."""
    known = known_names(catalog)
    for kind, pool in known.items():
        env.seed(kind, *pool)
    backlog = Backlog(catalog, backlog_names(catalog), list(extra_new))
    artist, label = known["artist"][-1], known["label"][-1]
    releases = [Release(source=SOURCE, url=f"http://127.0.0.1/release/bk{i}-{r}", external_id=f"bk{i}-{r}",
                        title=f"Backlog {i}.{r}", artists=[n.spelling if n.kind == "artist" else artist],
                        label=n.spelling if n.kind == "label" else label, styles=[], price=None, currency=None)
                for i, n in enumerate(backlog.names) for r in range(n.releases)]
    releases += [Release(source=SOURCE, url=f"http://127.0.0.1/release/x{i}", external_id=f"x{i}", title=f"X {i}",
                         artists=[spelling if kind == "artist" else artist], label=spelling if kind == "label" else label,
                         styles=[], price=None, currency=None) for i, (kind, spelling) in enumerate(extra_new)]
    source = env.source(SOURCE)
    for start in range(0, len(releases), 500):
        env.writer().write(source, releases[start:start + 500])
    return backlog


def entity_ids(env: ReviewEnv) -> dict[str, dict[str, int]]:
    with env.engine.connect() as conn:
        return {kind: {str(name): int(i) for i, name in conn.execute(text(f"SELECT id, name FROM {kind}s"))}
                for kind in ("artist", "label")}


# A page of 1,000 pending names on a busy 2-core machine can take longer than Playwright's 5 s
expect.set_options(timeout=30_000)


def log_in(page: Page, base: str) -> None:
    page.set_default_timeout(60_000)
    page.goto(f"{base}/admin/login")
    page.fill("input[name=username]", USER)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/admin/")


def clear(page: Page, base: str, env: ReviewEnv, backlog: Backlog) -> Counter[str]:
    """Decide every pending name; returns how many decisions each way of deciding took. First the
    names with a suggestion (most items waiting first), then those with none."""
    ids = entity_ids(env)
    kinds = {e["id"]: e["kind"] for e in env.queue.entries()}
    used: Counter[str] = Counter()
    for listing in ("suggested=yes&sort=waiting", "suggested=no"):
        _walk(page, f"{base}/admin/review?{listing}", kinds, ids, backlog, used)
    page.goto(f"{base}/admin/review?suggested=no")
    page.locator("button.approve-unsuggested").click()
    done = page.locator("#done")
    expect(done).to_contain_text("with no suggestion")
    used["approve all of the source with no suggestion"] += int(done.inner_text().split(": ", 1)[1].split()[0])
    return used


def _walk(page: Page, url: str, kinds: dict[int, str], ids: dict[str, dict[str, int]], backlog: Backlog,
          used: Counter[str]) -> None:
    """Page by page, until no page of the list holds a name to decide by hand or in bulk."""
    page_number = 1
    page.goto(url)
    for _ in range(5000):  # a name that cannot be decided must not loop forever
        if "q=" in page.url or "/admin/review" not in page.url:  # back from the merge search
            page.goto(f"{url}&page={page_number}")
        rows = page.evaluate(ROWS_JS)
        plan = _plan(rows, kinds, ids, backlog)
        if not any(plan.values()):
            if not page.locator("a[rel=next]").count():
                return
            page_number += 1
            page.goto(f"{url}&page={page_number}")
            continue
        if plan["bulk"] and not used["keyboard merge (m)"]:  # the first right top suggestion: by keyboard
            plan["key_merge"], plan["bulk"] = [next(r for r in rows if r["id"] == plan["bulk"][0])], []
        how, count = _bulk(page, plan, rows) if plan["bulk"] else (_one(page, plan), 1)
        used[how] += count
        logger.info("%s, page %d: %s %d (%s so far)", url, page_number, how, count, dict(used))


def _bulk(page: Page, plan: dict[str, list], rows: list[dict]) -> tuple[str, int]:  # type: ignore[type-arg]
    """Select all, untick the names whose top suggestion is wrong, merge each into its top suggestion
    (names with no suggestion stay)."""
    page.locator("input.select-all").check()
    for row in rows:
        if row["suggested"] and row["id"] not in plan["bulk"]:
            page.locator(f'tr[data-entry="{row["id"]}"] input.pending-entry').uncheck()
    _decide(page, page.locator("button.merge-top").click)
    expect(page.locator("#done")).to_contain_text(f"{len(plan['bulk'])} decided")
    return "bulk merge into the top suggestion", len(plan["bulk"])


def _plan(rows: list[dict], kinds: dict[int, str], ids: dict[str, dict[str, int]],  # type: ignore[type-arg]
          backlog: Backlog) -> dict[str, list]:  # type: ignore[type-arg]
    """What the reviewer does with each row of the page, knowing the truth."""
    plan: dict[str, list] = {"bulk": [], "key_merge": [], "click": [], "search": [], "key_approve": []}  # type: ignore[type-arg]
    for row in rows:
        kind = kinds[row["id"]]
        into = backlog.right(kind, row["name"])
        target = ids[kind][into] if into else None
        if target is None:
            if row["suggested"]:
                plan["key_approve"].append(row)  # a new name with a wrong suggestion
        elif row["suggested"][:1] == [target]:
            plan["bulk"].append(row["id"])
        elif target in row["suggested"]:
            plan["click"].append((row, target))
        else:
            plan["search"].append((row, into))
    if len(plan["bulk"]) == 1:  # the last right top suggestion of a page: by keyboard
        plan["key_merge"], plan["bulk"] = [next(r for r in rows if r["id"] == plan["bulk"][0])], []
    return plan


def _one(page: Page, plan: dict[str, list]) -> str:  # type: ignore[type-arg]
    """One name decided by hand: the keyboard where it can, a click or the merge search where not."""
    if plan["key_merge"] or plan["key_approve"]:
        row = (plan["key_merge"] or plan["key_approve"])[0]
        _cursor_to(page, row["id"])
        _decide(page, lambda: page.keyboard.press("m" if plan["key_merge"] else "a"))
        return "keyboard merge (m)" if plan["key_merge"] else "keyboard approve (a)"
    if plan["click"]:
        row, target = plan["click"][0]
        _decide(page, page.locator(f'tr[data-entry="{row["id"]}"] form:has(input[name=into][value="{target}"]) button').click)
        return "click another suggestion"
    row, into = plan["search"][0]
    _cursor_to(page, row["id"])
    page.keyboard.press("m")  # no suggestion: m opens the merge search
    page.fill("input[name=q]", into)
    page.press("input[name=q]", "Enter")
    _decide(page, page.locator(f'tr.found[data-name="{into}"] button').first.click)
    return "merge search"


def _decide(page: Page, act: Callable[[], None]) -> None:
    """A decision posted, and the page it comes back to loaded with its script (the cursor placed):
    the message of the page before also says "done", and rows read before the load are stale."""
    with page.expect_navigation():
        act()
    expect(page.locator("#done")).to_be_visible()


def _cursor_to(page: Page, entry_id: int) -> None:
    """j/k until the cursor is on the entry."""
    expect(page.locator("table#pending tr.current")).to_have_count(1)  # placed at DOMContentLoaded
    order = [row["id"] for row in page.evaluate(ROWS_JS)]
    here = page.evaluate("() => Array.from(document.querySelectorAll('table#pending tr[data-entry]'))"
                         ".findIndex(row => row.classList.contains('current'))")
    want = order.index(entry_id)
    for _ in range(abs(want - here)):
        page.keyboard.press("j" if want > here else "k")
    assert page.locator(f'tr.current[data-entry="{entry_id}"]').count() == 1


def wait_applied(env: ReviewEnv, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while True:
        counts = env.queue.counts()
        if counts["approved"] == counts["processing"] == counts["pending"] == 0:
            return
        assert time.monotonic() < deadline, f"the admin's apply worker did not finish: {counts}"
        time.sleep(0.5)


def catalog_vs_truth(env: ReviewEnv, backlog: Backlog) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(what the catalog holds, what the truth says): entity names per type and each variant's entity."""
    from recordhound.demo.backlog import backlog_truth

    truth = backlog_truth(backlog.catalog)
    expected: dict[str, list[str]] = {}
    for kind, entity_names in truth["entities"].items():  # type: ignore[attr-defined]
        extra = [s for k, s in backlog.extra_new if k == kind]
        expected[kind] = sorted([*entity_names, *extra])
        for spelling, into in truth["synonyms"][kind].items():  # type: ignore[index]
            expected[kind].append(f"{spelling} -> {into}")
    found: dict[str, list[str]] = {}
    with env.engine.connect() as conn:
        for kind in ("artist", "label"):
            found[kind] = sorted(str(n) for (n,) in conn.execute(text(f"SELECT name FROM {kind}s")))
            variants = truth["synonyms"][kind]  # type: ignore[index]
            found[kind] += [f"{s} -> {n}" for s, n in conn.execute(text(
                f"SELECT s.spelling, e.name FROM {kind}_synonyms s JOIN {kind}s e ON e.id = s.{kind}_id"))
                if s in variants]
    return {k: sorted(v) for k, v in found.items()}, {k: sorted(v) for k, v in expected.items()}
