"""`recordhound profile ...` (test a source profile, draft one from a shop) and `recordhound import`
(a file source into the product DB)."""

from __future__ import annotations

import sys

import click

from recordhound.cli_settings import current_settings, setting_option


@click.group()
def profile() -> None:
    """Source profiles."""


@profile.command("test")
@click.argument("source")
@click.option("--cassette", default=None, type=click.Path(exists=True, dir_okay=False),
              help="read the pages of a cassette (RECORDHOUND_CASSETTE_MODE=record) instead of the shop")
@click.option("--url", default=None, help="check this page only")
@click.option("--pages", default=20, show_default=True, type=click.IntRange(1),
              help="live: how many product pages to fetch from the first start URL")
@click.option("--base-url", default=None, help="live: another copy of the shop (as `-a base_url=` of a crawl)")
@click.option("--verbose", "-v", is_flag=True, help="print every page's report, not only the summary")
def profile_test(source: str, cassette: str | None, url: str | None, pages: int, base_url: str | None,
                 verbose: bool) -> None:
    """Apply SOURCE's profile to product pages (a cassette's, or fetched live from the shop) and
    report what looks wrong: fields found on part of the pages, price outliers per currency."""
    from urllib.parse import urljoin

    from scrapy.http import TextResponse

    from recordhound.middlewares.cassette import load_responses
    from recordhound.sources import load_profile
    from recordhound.sources.check import Survey, check_profile
    from recordhound.sources.extract import extract_links
    from recordhound.sources.fetch import fetch_samples
    from recordhound.sources.schema import with_base_url

    project = current_settings()
    loaded = load_profile(source, project.getlist("RECORDHOUND_PROFILES_DIRS"))
    if base_url:
        loaded = with_base_url(loaded, base_url)
    if cassette:
        responses = [r for r in load_responses(cassette) if isinstance(r, TextResponse) and r.status == 200
                     and (url is None or r.url == url)]
        if url is not None and not responses:
            raise click.ClickException(f"{url} is not a 200 text page of {cassette}")
    else:
        if not loaded.start_urls:
            raise click.UsageError(f"source {source!r} has no start_urls to fetch; give --cassette")
        product = loaded.links["product"].selectors
        listings = tuple(s for kind, link in loaded.links.items() if kind != "product" for s in link.selectors)
        fetched = fetch_samples(urljoin(loaded.base_url, loaded.start_urls[0]), [url] if url else [],
                                lambda listing: [] if url else extract_links(listing, product), project, pages,
                                follow=lambda listing: extract_links(listing, listings))
        for error in fetched.errors:
            click.echo(f"fetch failed: {error}", err=True)
        if fetched.listing is None:
            raise click.ClickException(f"cannot fetch the start page of {source!r}; see above")
        responses = fetched.products
    survey = Survey(loaded)
    for page in responses:
        report = check_profile(loaded, page)
        if url is None and not report.is_product:
            continue  # not a product page
        survey.add(report)
        if verbose or url is not None:
            click.echo(report)
    click.echo("\n".join(survey.lines()))


@profile.command("draft")
@click.argument("url")
@click.option("--product", "products", multiple=True, help="a product page of the shop (repeatable)")
@click.option("--name", default=None, help="the source name (default: from the host name)")
@click.option("--output", "-o", default=None, type=click.Path(dir_okay=False),
              help="write the profile here (default: profiles/NAME.yaml)")
@click.option("--samples", default=3, show_default=True, type=click.IntRange(1, 20),
              help="product pages to learn from when no --product is given")
def profile_draft(url: str, products: tuple[str, ...], name: str | None, output: str | None, samples: int) -> None:
    """Propose a profile for the shop whose listing page is URL: structured data, product and
    pagination links; writes it as commented YAML to check with `profile test`."""
    import re
    from pathlib import Path
    from urllib.parse import urlparse

    from recordhound.sources import load_profile
    from recordhound.sources.draft import draft_profile, product_link_candidates
    from recordhound.sources.draft_shops import store_api_probes
    from recordhound.sources.fetch import fetch_samples

    host = urlparse(url).hostname or ""
    if urlparse(url).scheme not in ("http", "https") or not host:
        raise click.UsageError(f"expected an absolute http(s) URL of a listing page, got {url!r}")
    if name is None:
        label = "" if re.fullmatch(r"[\d.:\[\]]+", host) else host.removeprefix("www.").split(".")[0]
        name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_") or "shop"
    target = Path(output or Path("profiles") / f"{name}.yaml")
    fetched = fetch_samples(url, list(products), product_link_candidates, current_settings(), samples,
                            probe=store_api_probes)
    for error in fetched.errors:
        click.echo(f"fetch failed: {error}", err=True)
    if fetched.listing is None:
        raise click.ClickException(f"cannot fetch the listing page {url}; see above")
    draft = draft_profile(name, fetched.listing, fetched.products, fetched.probes)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(draft.yaml(url), encoding="utf-8")
    load_profile(str(target))  # what it wrote must load
    click.echo(f"wrote {target}: {len(draft.matched)} fields found on {draft.pages} product pages "
               f"({', '.join(f'{k} {v}/{draft.pages}' for k, v in draft.matched.items())})")
    for warning in draft.warnings:
        click.echo(f"todo: {warning}")
    click.echo(f"next: recordhound profile test {target}    then: scrapy crawl catalog -a source={target}")


@click.command("import")
@click.argument("source")
@click.option("--file", "path", default=None, type=click.Path(dir_okay=False),
              help="the file to read (default: the profile's location); CSV, XLSX or JSON")
@click.option("--restart", is_flag=True, help="start at line 1 even if the last import did not finish")
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(1))
@setting_option
def import_file(source: str, path: str | None, restart: bool, batch_size: int) -> None:
    """Import a CSV/XLSX/JSON source row by row (resumes where an interrupted import stopped)."""
    import logging

    from recordhound.config import ReviewConfig, StoreConfig
    from recordhound.db.migrate import open_database
    from recordhound.catalog.writer import open_writer
    from recordhound.sources import load_profile
    from recordhound.sources.importer import FileImport
    from recordhound.sources.profile import FILE_KINDS

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    project = current_settings()
    profile = load_profile(source, project.getlist("RECORDHOUND_PROFILES_DIRS"))
    if profile.kind not in FILE_KINDS:
        raise click.UsageError(f"source {source!r} is a {profile.kind} source; crawl it with "
                               f"`scrapy crawl catalog -a source={source}`")
    store, review = StoreConfig.from_settings(project), ReviewConfig.from_settings(project)
    engine = open_database(store.database_url)
    writer = open_writer(engine, store, review, trusted=profile.trusted or review.trust_new_entities)
    job = FileImport(profile, path or profile.location, engine, writer, batch_size,
                     retry_max_seconds=store.retry_max_seconds)
    source_id, first, total = job.prepare(restart)
    with click.progressbar(length=total, label=f"{source} lines", show_pos=True, file=sys.stderr) as bar:
        bar.update(first - 1)
        job.progress = lambda line: bar.update(line - bar.pos)
        result = job.run(source_id, first, total)
    click.echo(f"{source}: lines {result.first_line}-{result.last_line} of {result.total_lines} read; "
               f"{dict(result.counts)}")


def register(main: click.Group) -> None:
    main.add_command(profile)
    main.add_command(import_file)
