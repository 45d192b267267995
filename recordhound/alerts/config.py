"""The alerts' settings, parsed and checked once (defaults in recordhound/settings.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from recordhound.config import non_negative_float, positive_float, positive_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True)
class AlertsConfig:
    max_attempts: int
    retry_base_seconds: float
    retry_cap_seconds: float
    wait_seconds: float  # `alerts send` waits this long at most for a retry that is due soon
    claim_seconds: float  # a "sending" alert older than this is sent again (its sender died)
    timeout_seconds: float

    def backoff_seconds(self, attempts: int) -> float:
        """Wait after the ``attempts``-th failed attempt: base, 2 × base, 4 × base, ... up to the cap."""
        return float(min(self.retry_cap_seconds, self.retry_base_seconds * 2 ** min(max(attempts - 1, 0), 20)))

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> AlertsConfig:
        return cls(
            max_attempts=positive_int(settings, "RECORDHOUND_ALERTS_MAX_ATTEMPTS"),
            retry_base_seconds=positive_float(settings, "RECORDHOUND_ALERTS_RETRY_BASE_SECONDS"),
            retry_cap_seconds=positive_float(settings, "RECORDHOUND_ALERTS_RETRY_CAP_SECONDS"),
            wait_seconds=non_negative_float(settings, "RECORDHOUND_ALERTS_WAIT_SECONDS"),
            claim_seconds=non_negative_float(settings, "RECORDHOUND_ALERTS_CLAIM_SECONDS"),
            timeout_seconds=positive_float(settings, "RECORDHOUND_ALERTS_TIMEOUT_SECONDS"),
        )
