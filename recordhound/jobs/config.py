"""The worker's settings (defaults in ``recordhound.settings``), parsed once."""

from __future__ import annotations

from dataclasses import dataclass

from scrapy.settings import BaseSettings

from recordhound.config import non_negative_float, positive_float, positive_int


@dataclass(frozen=True)
class WorkerConfig:
    poll_seconds: float
    lease_seconds: float
    import_batch: int
    scrapyd_target: str  # empty: crawl jobs run as local crawl processes
    uploads_dir: str
    drafts_dir: str
    profiles_dir: str  # where the admin saves the profiles it creates (the first profiles folder)
    stop_seconds: float = 120.0  # a stopping worker's crawl: SIGTERM, then SIGKILL after this long
    unavailable_seconds: float = 600.0  # a crawl that cannot reach a service at its start: tried again this long

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> WorkerConfig:
        dirs = settings.getlist("RECORDHOUND_PROFILES_DIRS") or ["profiles"]
        return cls(
            poll_seconds=positive_float(settings, "RECORDHOUND_WORKER_POLL_SECONDS"),
            lease_seconds=positive_float(settings, "RECORDHOUND_WORKER_LEASE_SECONDS"),
            import_batch=positive_int(settings, "RECORDHOUND_JOB_IMPORT_BATCH"),
            scrapyd_target=str(settings.get("RECORDHOUND_JOB_SCRAPYD_TARGET") or ""),
            uploads_dir=str(settings.get("RECORDHOUND_UPLOADS_DIR") or ".recordhound/uploads"),
            drafts_dir=str(settings.get("RECORDHOUND_DRAFTS_DIR") or ".recordhound/drafts"),
            profiles_dir=str(dirs[0]),
            stop_seconds=positive_float(settings, "RECORDHOUND_WORKER_STOP_SECONDS"),
            unavailable_seconds=non_negative_float(settings, "RECORDHOUND_WORKER_UNAVAILABLE_SECONDS"),
        )
