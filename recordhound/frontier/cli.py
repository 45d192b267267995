"""`recordhound frontier ...`: the persistent frontier's crawls from a terminal (status, dead letters,
their retry, a reset, a consistency check)."""

from __future__ import annotations

import click

from recordhound.cli_settings import frontier_config, setting_option


@click.group()
@setting_option
def frontier() -> None:
    """The persistent frontier (embedded, or Redis when REDIS_URL is set)."""


@frontier.command("status")
@click.option("--source", "crawl", default=None, help="one crawl (default: every crawl found)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def frontier_status(crawl: str | None, as_json: bool) -> None:
    """Queued / leased (by node) / done / failed counts and the seen-set size."""
    import json

    from recordhound.frontier.status import known_crawls, status

    config = frontier_config()
    crawls = [crawl] if crawl else known_crawls(config)
    reports = [status(config, name) for name in crawls]
    if as_json:
        click.echo(json.dumps(reports, indent=1))
        return
    if not reports:
        click.echo(f"no crawl state found ({config.backend} frontier)")
    for report in reports:
        click.echo(f"{report['crawl']} [{report['status']}, {config.backend}]: "
                   f"{report['queued']} queued, {report['leased']} leased, {report['done']} done, "
                   f"{report['failed']} failed, {report['seen']} seen")
        for node, count in sorted(report["leased_by_node"].items()):
            click.echo(f"  leased by {node}: {count}")
        for node, info in sorted(report["nodes"].items()):
            click.echo(f"  node {node}: pid {info['pid']} on {info['host']}, "
                       f"heartbeat {info['heartbeat_age_seconds']} s ago")
        if report["waiting_for_retry"]:
            click.echo(f"  waiting for a retry: {report['waiting_for_retry']} (of the queued)")
        if report["due"]:
            click.echo(f"  rechecks due now: {report['due']} (fetched by the next node that runs)")
        if report["scheduled"]:
            click.echo(f"  scheduled for a recheck: {report['scheduled']} ({report['due_within_hour']} "
                       f"due in the next hour)")
        for reason, count in report["failed_by_reason"].items():
            click.echo(f"  failed, {reason}: {count}")


@frontier.command("failed")
@click.option("--source", "crawl", default=None, help="one crawl (default: every crawl found)")
@click.option("--reason", default=None, help='one reason group ("http_404") or text in the reason')
@click.option("--json", "as_json", is_flag=True, help="every dead letter with its attempt history")
def frontier_failed(crawl: str | None, reason: str | None, as_json: bool) -> None:
    """Requests that failed for good (dead letters), grouped by reason."""
    import json

    from recordhound.frontier.status import known_crawls, matching, opened, reason_kind

    config = frontier_config()
    found: list[dict[str, object]] = []
    for name in [crawl] if crawl else known_crawls(config):
        with opened(config, name) as backend:
            letters = matching(backend.dead_letters(), reason)
        found += [{"crawl": name, "id": d.id, "url": d.url, "reason": d.reason, "group": reason_kind(d.reason),
                   "at": d.at, "attempts": d.history} for d in letters]
    if as_json:
        click.echo(json.dumps(found, indent=1))
        return
    if not found:
        click.echo("no failed requests" + (f" with reason {reason!r}" if reason else ""))
        return
    groups: dict[tuple[object, object], list[dict[str, object]]] = {}
    for letter in found:
        groups.setdefault((letter["crawl"], letter["group"]), []).append(letter)
    for (crawl_name, group), members in sorted(groups.items(), key=lambda g: (str(g[0][0]), -len(g[1]))):
        click.echo(f"{crawl_name}: {group}: {len(members)}")
        for letter in members:
            history = letter["attempts"]
            tried = f", {len(history)} attempts" if isinstance(history, list) and len(history) > 1 else ""
            click.echo(f"  {letter['url']}  ({letter['reason']}{tried})")


@frontier.command("retry")
@click.option("--source", "crawl", required=True, help="the crawl whose dead letters go back")
@click.option("--reason", default=None, help='only this reason group ("http_503") or text in the reason')
@click.option("--url", default=None, help="only this URL")
@click.option("--all", "everything", is_flag=True, help="every dead letter of the crawl")
def frontier_retry(crawl: str, reason: str | None, url: str | None, everything: bool) -> None:
    """Put dead letters back in the queue; a running crawl picks them up, the next crawl of a
    completed one fetches exactly these (it is not started anew)."""
    from recordhound.frontier.status import matching, opened

    if not (everything or reason or url):
        raise click.UsageError("say which: --reason R, --url U, or --all")
    config = frontier_config()
    with opened(config, crawl) as backend:
        letters = matching(backend.dead_letters(), reason, url)
        moved = backend.requeue_failed([d.id for d in letters])
        status = backend.counts().status
    if not moved:
        raise click.ClickException(f"no failed request of crawl {crawl!r} matches")
    click.echo(f"{crawl}: {moved} failed requests queued again (crawl {status}); "
               f"run `scrapy crawl catalog -a source={crawl}` or let the running nodes take them")


@frontier.command("reset")
@click.option("--source", "crawl", required=True, help="the crawl to forget")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
def frontier_reset(crawl: str, yes: bool) -> None:
    """Forget one crawl's queue, leases and seen-set (the next crawl starts from scratch)."""
    from recordhound.frontier.status import reset, status

    config = frontier_config()
    report = status(config, crawl)
    click.echo(f"{crawl}: {report['queued']} queued, {report['leased']} leased, {report['seen']} seen")
    if not yes:
        click.confirm(f"Reset the {config.backend} frontier of crawl {crawl!r}?", abort=True)
    reset(config, crawl)
    click.echo(f"{crawl}: frontier reset")


@frontier.command("verify")
@click.option("--source", "crawl", default=None, help="one crawl (default: every crawl found)")
def frontier_verify(crawl: str | None) -> None:
    """Check a crawl's stored state for inconsistencies; exit 1 when any is found."""
    from recordhound.frontier.status import known_crawls, verify

    config = frontier_config()
    found = 0
    for name in [crawl] if crawl else known_crawls(config):
        problems = verify(config, name)
        found += len(problems)
        click.echo(f"{name}: {'consistent' if not problems else f'{len(problems)} problems'}")
        for problem in problems:
            click.echo(f"  {problem}")
    if found:
        raise SystemExit(1)


def register(main: click.Group) -> None:
    main.add_command(frontier)
