"""Apply a profile to one response and show, per field, the selector that matched, the raw and
the normalized value (``profile_check`` in `scrapy shell`, `recordhound profile test`)."""

from __future__ import annotations

from dataclasses import dataclass

from scrapy.http import TextResponse

from recordhound.normalize import normalize_release
from recordhound.sources.extract import extract_links, extract_release, match_field
from recordhound.sources.profile import Profile


@dataclass
class CheckReport:
    url: str
    lines: list[str]

    def __repr__(self) -> str:  # the shell prints the repr of what -c returns
        return "\n".join(self.lines)

    __str__ = __repr__


def check_profile(profile: Profile, response: TextResponse) -> CheckReport:
    lines = [f"profile {profile.name} ({profile.path}) on {response.url}"]
    outcome = normalize_release(extract_release(response, profile), profile)
    normalized = outcome.release.__dict__ if outcome.release else {}
    for name, spec in profile.fields.items():
        found = match_field(response, spec)
        failed = [s.describe() for s in spec.selectors if s != found.selector]
        used = found.selector.describe() if found.selector else "no selector matched"
        lines.append(f"  {name:15} raw={found.values!r} normalized={normalized.get(name)!r} [{used}]"
                     + (f" (fallbacks unused or empty: {failed})" if failed and found.selector else ""))
    for problem in outcome.problems:
        lines.append(f"  problem: {problem.field}: {problem.reason}")
    lines.append(f"  item: {'rejected: ' + (outcome.rejected or '') if outcome.release is None else 'kept'}")
    for kind, link in profile.links.items():
        urls = extract_links(response, link.selectors)
        lines.append(f"  links {kind:10} {len(urls)} (priority {link.priority})" + (f", e.g. {urls[0]}" if urls else ""))
    return CheckReport(response.url, lines)
