"""`scrapy shell` inside recordhound: no frontier, no database, plus ``profile_check(source)``.

    scrapy shell http://127.0.0.1:8070/release/000001-x -c 'profile_check("demo")'
"""

from __future__ import annotations

from typing import Any

from scrapy.commands.shell import Command as ScrapyShell

from recordhound.config import project_settings
from recordhound.sources import load_profile
from recordhound.sources.check import CheckReport, check_profile


# selector debugging needs neither Redis nor a database (set above the project's priority)
SHELL_SETTINGS = {
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
    "RECORDHOUND_STORE_ENABLED": False,
}


class Command(ScrapyShell):
    def process_options(self, args: list[str], opts: Any) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        self.settings.setdict(SHELL_SETTINGS, priority="cmdline")

    def update_vars(self, vars: dict[str, Any]) -> None:  # noqa: A002 - Scrapy's signature
        def profile_check(source: str = "demo") -> CheckReport:
            """Apply SOURCE's profile to the current response: each field's selector and values."""
            dirs = project_settings().getlist("RECORDHOUND_PROFILES_DIRS")
            return check_profile(load_profile(source, dirs), vars["response"])

        vars["profile_check"] = profile_check
