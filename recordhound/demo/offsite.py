"""``--offsite-links``: every listing page also links to a product on another site.

A crawler must never fetch it (it is off-site for the demo profile); the truth does not change.
"""

from __future__ import annotations

from dataclasses import replace

from recordhound.demo.site import Page

OFFSITE_URL = "http://elsewhere.invalid/release/{n}"
_PAGER = b'<a class="next"'


def with_offsite_links(site: dict[str, Page]) -> dict[str, Page]:
    """The site with one off-site product link before the pager of each listing page."""
    out = dict(site)
    for n, (path, page) in enumerate(sorted(site.items())):
        if "?page=" in path and page.status == 200 and _PAGER in page.body:
            link = f'<a class="product-link" href="{OFFSITE_URL.format(n=n)}">Elsewhere</a> '.encode()
            out[path] = replace(page, body=page.body.replace(_PAGER, link + _PAGER, 1))
    return out
