"""`recordhound review ...` and `recordhound apply`: the review queue from a terminal."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from recordhound.cli_settings import current_settings, setting_option
from recordhound.review.queue import ENTITY_KINDS
from recordhound.review.records import revision, shown_change

Doc = dict[str, Any]

if TYPE_CHECKING:
    from recordhound.review.queue import ReviewQueue


def _queue() -> ReviewQueue:
    from recordhound.config import ReviewConfig
    from recordhound.review.factory import open_queue

    return open_queue(ReviewConfig.from_settings(current_settings()))


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return "-"
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=1, ensure_ascii=False, default=str))


def describe(entry: Doc) -> str:
    if entry["kind"] == "price":
        change = "currency change" if entry["change_pct"] is None else f"{entry['change_pct']:+.2f} %"  # signed
        return (f"#{entry['id']} price  offer {entry['offer_id']} ({entry['external_id']}): "
                f"{entry['old_price']} {entry['old_currency'] or ''} → {entry['new_price']} "
                f"{entry['new_currency'] or ''} ({change}) [{entry['status']}, revision {revision(entry)}]")
    sources = sorted({s["source_name"] for s in entry.get("sources", ())})
    suggestions = ", ".join(f"{s['name']} (#{s['id']}, {s['score']:.0f})" for s in entry.get("suggestions", ()))
    return (f"#{entry['id']} {entry['kind']:6} {entry['name']!r}: {entry['waiting']} items waiting, "
            f"spellings {entry['spellings']}, sources {sources} [{entry['status']}]"
            + (f"\n      suggested merges: {suggestions}" if suggestions else ""))


@click.group()
@setting_option
def review() -> None:
    """The review queue: pending artists/labels/styles and price changes (Redis when REDIS_URL is set)."""

@review.command("list")
@click.option("--type", "kind", type=click.Choice([*ENTITY_KINDS, "price"]), default=None)
@click.option("--source", default=None, help="only entries seen in this source")
@click.option("--json", "as_json", is_flag=True)
def review_list(kind: str | None, source: str | None, as_json: bool) -> None:
    """Entries waiting for a decision (oldest first)."""
    queue = _queue()
    entries = queue.entries(kind, source)
    if as_json:
        _echo_json(entries)
        return
    for entry in entries:
        click.echo(describe(entry))
    counts = queue.counts()
    click.echo(f"{len(entries)} entries listed; queue: {counts['pending']} pending names, "
               f"{counts['price_changes']} price changes, {counts['parked']} items parked, "
               f"{counts['approved']} decisions to apply, {counts['failed']} failed")

@review.command("show")
@click.argument("entry_id", type=int)
@click.option("--json", "as_json", is_flag=True)
def review_show(entry_id: int, as_json: bool) -> None:
    """One entry: spellings, sources and lines, suggestions, the items it holds back."""
    queue = _queue()
    entry = queue.entry(entry_id)
    parked = queue.parked_items(entry_id)
    if as_json:
        _echo_json({**entry, "parked_items": parked})
        return
    click.echo(describe(entry))
    click.echo(f"  created {_when(entry['created_at'])}, attempts {entry.get('attempts', 0)}, "
               f"last error: {entry.get('last_error') or '-'}")
    for source in entry.get("sources", ()):
        click.echo(f"  seen in {source['source_name']} (source {source['source_id']}): {source['ref']}")
    for item in parked:
        click.echo(f"  waiting: {item['item']['title']!r} by {item['item']['artists']} ({item['ref']})")

def _decide(entry_id: int, action: str, apply: bool, into: int | None = None,
            fields: dict[str, str] | None = None) -> None:
    """Check, queue and (with ``apply``) carry out one decision."""
    from recordhound.review.decisions import decide

    job = decide(_queue(), _engine(), entry_id, action, into=into, fields=fields)
    if not apply:
        click.echo(f"job {job['id']}: {action} entry {entry_id} queued; `recordhound apply` (or the admin, "
                   f"or --apply) carries it out")
        return
    counts = _apply()
    click.echo(f"job {job['id']}: {action} entry {entry_id} applied ({counts['completed']} decisions applied, "
               f"{counts['failed']} failed)")


def _engine() -> Any:
    from recordhound.config import StoreConfig
    from recordhound.db.migrate import open_database

    return open_database(StoreConfig.from_settings(current_settings()).database_url)


def _apply() -> Any:
    """The catalog's apply worker over what is approved, in this process, with progress lines."""
    from recordhound.cli import run_apply  # review/ does not import catalog/

    def progress(counts: Any, seconds: float) -> None:
        _progress("applied", counts["completed"] + counts["failed"], None, seconds, f", {counts['failed']} failed")
    return run_apply(follow=False, progress=progress)


def _progress(what: str, done: int, total: int | None, seconds: float, extra: str = "") -> None:
    rate = done / seconds if seconds > 0 else 0.0
    of = f"/{total}" if total is not None else ""
    click.echo(f"{what} {done}{of} ({rate:,.0f}/s, {seconds:.1f} s){extra}", err=True)


def _decide_many(action: str, ids: tuple[int, ...], apply: bool, as_json: bool, into: int | None = None,
                 **filters: Any) -> None:
    """Check every selected entry, record the decisions in batches, then (``apply``) carry them out."""
    from recordhound.config import ReviewConfig
    from recordhound.review.bulk import Selection, plan, record

    queue = _queue()
    decisions, left = plan(queue, _engine(), Selection(ids=ids, **filters), action, into)
    batch = ReviewConfig.from_settings(current_settings()).batch_size
    jobs, _ = record(queue, decisions, batch,
                     progress=(lambda d, t, s: _progress("decided", d, t, s)) if len(decisions) > batch else None)
    if as_json:
        _echo_json(jobs)
    else:
        for job in jobs:  # a price change is decided as it is now: say which change that is
            if job.get("change"):
                click.echo(f"job {job['id']}: {action} price change {job['entry_id']}: {shown_change(job['change'])} "
                           f"(revision {job.get('revision', 1)})")
        span = f" (jobs {jobs[0]['id']}–{jobs[-1]['id']})" if jobs else ""
        click.echo(f"{action}: {len(jobs)} decided{span}"
                   + (f"; {len(left)} left: no suggestion scored above {filters['suggested_above']:g}" if left else "")
                   + ("" if apply else "; queued: `recordhound apply` (or the admin, or --apply) carries them out"))
    if apply and jobs:
        counts = _apply()
        click.echo(f"applied {counts['completed']} decisions, {counts['failed']} failed",
                   err=as_json)  # stdout stays JSON


APPLY = click.option("--apply", "apply", is_flag=True, help="carry the decisions out now (runs the apply worker)")


def selecting(command: Any) -> Any:
    """The options that pick entries for a bulk decision (instead of ids)."""
    for option in reversed((
            click.argument("entry_ids", nargs=-1, type=int),
            click.option("--all", "every", is_flag=True, help="every pending entry the other filters keep"),
            click.option("--type", "kind", default=None, help="only entries of this type (artist, label, style, price)"),
            click.option("--source", default=None, help="only entries seen in this source"),
            click.option("--no-suggestion", is_flag=True, help="only entries with no suggested merge"),
            click.option("--json", "as_json", is_flag=True, help="print the recorded jobs as JSON"),
            APPLY)):
        command = option(command)
    return command


REVISION = click.option(
    "--revision", type=int, default=None, metavar="N",
    help="with one price change's id: the revision you viewed (`review list`/`show`); refused if a crawl "
         "changed it since. Without it the current change is decided, and printed")


def decision(name: str, help_text: str) -> Any:
    def run(entry_ids: tuple[int, ...], apply: bool, as_json: bool, **filters: Any) -> None:
        _decide_many(name, entry_ids, apply, as_json, **filters)
    run.__doc__ = help_text
    return review.command(name)(REVISION(selecting(run)))


decision("approve", "Create the entities (or approve the price changes): ID... or --all/--type/--source filters.")
decision("skip", "Drop the names from their items (reject price changes): ID... or --all/--type/--source filters.")

@review.command("merge")
@selecting
@click.option("--into", type=int, default=None, help="the id of the existing entity (all selected merge into it)")
@click.option("--suggested-above", type=float, default=None, metavar="SCORE",
              help="merge each into its top suggestion when that scores above SCORE (0-100)")
def review_merge(entry_ids: tuple[int, ...], into: int | None, apply: bool, as_json: bool, **filters: Any) -> None:
    """The names become synonyms of existing entities: ID... or filters; --into ID or --suggested-above SCORE."""
    _decide_many("merge", entry_ids, apply, as_json, into=into, **filters)

@review.command("edit")
@click.argument("entry_id", type=int)
@click.option("--set", "values", multiple=True, required=True, metavar="FIELD=VALUE")
@click.option("--apply", "apply", is_flag=True, help="carry the decision out now (runs the apply worker)")
def review_edit(entry_id: int, values: tuple[str, ...], apply: bool) -> None:
    """Change fields (name=...), then approve."""
    fields = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep:
            raise click.BadParameter(f"expected FIELD=VALUE, got {value!r}", param_hint="--set")
        fields[name.strip()] = text
    _decide(entry_id, "edit", apply, fields=fields)

def job_list(state: str, help_text: str, detail: Any) -> None:
    def run(as_json: bool) -> None:
        jobs = _queue().jobs(state)
        if as_json:
            _echo_json(jobs)
            return
        for job in jobs:
            click.echo(f"job {job['id']}: {job['action']} {job['kind']} entry {job['entry_id']} "
                       f"({job.get('name')!r}){detail(job)}")
        click.echo(f"{len(jobs)} {state}")
    run.__doc__ = help_text
    review.command(state)(click.option("--json", "as_json", is_flag=True)(run))

job_list("failed", "Jobs that failed (and expired entries), with the error and attempt count.",
         lambda job: f", attempts {job['attempts']}: {job['last_error']}")
job_list("completed", "Jobs applied, with what they did.",
         lambda job: f" at {_when(job.get('finished_at'))}: {job.get('result')}")

@review.command("retry")
@click.argument("job_id", type=int)
def review_retry(job_id: int) -> None:
    """Put a failed job back in the approved queue (an expired entry back to pending)."""
    job = _queue().retry(job_id)
    where = "pending" if job["action"] == "expire" else "the approved queue"
    click.echo(f"job {job_id}: back in {where}")


def register(main: click.Group) -> None:
    """`recordhound review ...` (`recordhound apply`, which runs the catalog's apply worker, is in ``cli.py``)."""
    main.add_command(review)
