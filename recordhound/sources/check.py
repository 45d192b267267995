"""Apply a profile to pages and show, per field, the selector that matched, the raw and the
normalized value (``profile_check`` in `scrapy shell`, `recordhound profile test`); over many
pages, a :class:`Survey` says what looks wrong: fields found on only some pages, and per
currency the price distribution with the outliers named."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from scrapy.http import TextResponse

from recordhound.normalize import Outcome, normalize_release
from recordhound.sources.extract import extract_links, extract_release, match_field, structured_data
from recordhound.sources.profile import IDENTIFIERS, Profile

OUTLIER_FACTOR = 20  # a price over 20× (or under 1/20 of) its currency's median is named


@dataclass
class CheckReport:
    url: str
    lines: list[str]
    found: list[str] = field(default_factory=list)  # the fields a selector found a value for
    outcome: Outcome | None = None

    def __repr__(self) -> str:  # the shell prints the repr of what -c returns
        return "\n".join(self.lines)

    __str__ = __repr__

    @property
    def is_product(self) -> bool:
        return "title" in self.found


def check_profile(profile: Profile, response: TextResponse) -> CheckReport:
    lines = [f"profile {profile.name} ({profile.path}) on {response.url}"]
    data = structured_data(response, profile)
    outcome = normalize_release(extract_release(response, profile, data), profile)
    normalized = outcome.release.__dict__ if outcome.release else {}
    found = []
    for name, spec in profile.fields.items():
        match = match_field(response, spec, data)
        if match.values:
            found.append(name)
        failed = [s.describe() for s in spec.selectors if s != match.selector]
        used = match.selector.describe() if match.selector else "no selector matched"
        lines.append(f"  {name:15} raw={match.values!r} normalized={normalized.get(name)!r} [{used}]"
                     + (f" (fallbacks unused or empty: {failed})" if failed and match.selector else ""))
    lines += [f"  problem: structured data: {problem}" for problem in data.problems]
    lines += [f"  problem: {p.field}: {p.reason}" for p in outcome.problems]
    lines.append(f"  item: {'rejected: ' + (outcome.rejected or '') if outcome.release is None else 'kept'}")
    for kind, link in profile.links.items():
        urls = extract_links(response, link.selectors)
        lines.append(f"  links {kind:10} {len(urls)} (priority {link.priority})" + (f", e.g. {urls[0]}" if urls else ""))
    return CheckReport(response.url, lines, found, outcome)


@dataclass
class _Price:
    amount: Decimal
    url: str
    rejected: str | None = None


@dataclass
class Survey:
    """What a profile found over many product pages."""

    profile: Profile
    pages: int = 0
    found: Counter[str] = field(default_factory=Counter)
    prices: dict[str, list[_Price]] = field(default_factory=lambda: defaultdict(list))
    rejected: Counter[str] = field(default_factory=Counter)

    def add(self, report: CheckReport) -> None:
        self.pages += 1
        self.found.update(report.found)
        outcome = report.outcome
        if outcome is None:
            return
        if outcome.release is not None and outcome.release.price is not None and outcome.release.currency:
            self.prices[outcome.release.currency].append(_Price(outcome.release.price, report.url))
        if outcome.implausible is not None and outcome.implausible.amount is not None:
            self.prices[outcome.implausible.currency].append(
                _Price(outcome.implausible.amount, report.url, str(outcome.implausible)))
        if outcome.rejected:
            self.rejected[outcome.rejected.split(":", 1)[0]] += 1

    def lines(self) -> list[str]:
        out = [f"{self.pages} product pages checked"]
        out.append("fields found: " + ", ".join(
            f"{name} {self.found[name]}/{self.pages}" for name in self.profile.fields))
        partial = [name for name in self.profile.fields if 0 < self.found[name] < self.pages]
        never = [name for name in self.profile.fields if not self.found[name] and name not in IDENTIFIERS]
        missing_ids = [name for name in self.profile.fields if not self.found[name] and name in IDENTIFIERS]
        if missing_ids:
            out.append(f"identifiers not printed (many shops have none): {', '.join(missing_ids)}")
        if partial:
            out.append(f"found on only part of the pages: {', '.join(partial)}")
        if never:
            out.append(f"never found: {', '.join(never)}")
        for currency, prices in sorted(self.prices.items()):
            out += self._distribution(currency, prices)
        if self.rejected:
            out.append("rejected items: " + ", ".join(f"{reason} {count}" for reason, count in self.rejected.items()))
        return out

    def outliers(self, currency: str) -> list[_Price]:
        prices = self.prices.get(currency, [])
        if len(prices) < 3:
            return [p for p in prices if p.rejected]
        median = Decimal(statistics.median(p.amount for p in prices))
        return [p for p in prices if p.rejected or p.amount > median * OUTLIER_FACTOR
                or p.amount * OUTLIER_FACTOR < median]

    def _distribution(self, currency: str, prices: list[_Price]) -> list[str]:
        amounts = sorted(p.amount for p in prices)
        median = Decimal(statistics.median(amounts))
        lines = [f"prices {currency}: {len(amounts)}, min {amounts[0]:.2f}, median {median:.2f}, max {amounts[-1]:.2f}"]
        for price in self.outliers(currency):
            why = f" (rejected: {price.rejected})" if price.rejected else ""
            lines.append(f"  outlier {currency} {price.amount:.2f} at {price.url}{why}")
        return lines
