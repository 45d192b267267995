"""An extension for tests: when the engine stops, it writes the top-level names of the modules the
crawler process has loaded to ``LOADED_MODULES_FILE`` (one per line)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from scrapy import signals


class LoadedModules:
    def __init__(self, path: str) -> None:
        self.path = Path(path)

    @classmethod
    def from_crawler(cls, crawler: Any) -> LoadedModules:
        extension = cls(crawler.settings.get("LOADED_MODULES_FILE"))
        crawler.signals.connect(extension.write, signal=signals.engine_stopped)
        return extension

    def write(self) -> None:
        self.path.write_text("\n".join(sorted({name.split(".")[0] for name in list(sys.modules)})))
