"""Making jobs: a crawl of a shop profile, an import of a file (with its column mapping)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml
from scrapy.settings import BaseSettings
from sqlalchemy import Engine

from recordhound.exceptions import RecordhoundError
from recordhound.jobs import states, store
from recordhound.sources import load_profile
from recordhound.sources.profile import FILE_KINDS

NAME = re.compile(r"[a-z0-9_]{1,60}")


def crawl_job(engine: Engine, settings: BaseSettings, profile_ref: str, base_url: str = "",
              every_hours: float | None = None, follow: bool = False) -> store.Job:
    profile = load_profile(profile_ref, settings.getlist("RECORDHOUND_PROFILES_DIRS"))
    if profile.kind in FILE_KINDS:
        raise RecordhoundError(f"{profile_ref} is a {profile.kind} file source: make an import job")
    doc: dict[str, Any] = {"type": states.CRAWL, "profile": _reference(profile_ref), "base_url": base_url,
                           "schedule": {"every_hours": every_hours, "follow": follow}}
    return store.create(engine, profile.name, profile.kind, base_url or profile.base_url, doc)


def import_job(engine: Engine, settings: BaseSettings, profile_ref: str, path: str = "",
               every_hours: float | None = None) -> store.Job:
    profile = load_profile(profile_ref, settings.getlist("RECORDHOUND_PROFILES_DIRS"))
    if profile.kind not in FILE_KINDS:
        raise RecordhoundError(f"{profile_ref} is a {profile.kind} source: make a crawl job")
    file = os.path.abspath(path or profile.location)
    if not os.path.isfile(file):
        raise RecordhoundError(f"no file {file} to import")
    doc = {"type": states.IMPORT, "profile": _reference(profile_ref), "file": file,
           "schedule": {"every_hours": every_hours, "follow": False}}
    return store.create(engine, profile.name, profile.kind, file, doc)


def _reference(profile_ref: str) -> str:
    """A profile given as a path is kept absolute: the worker may run in another folder."""
    return os.path.abspath(profile_ref) if os.sep in profile_ref or profile_ref.endswith((".yaml", ".yml")) \
        else profile_ref


def write_file_profile(folder: str, name: str, kind: str, mapping: dict[str, Any],
                       currency_symbols: dict[str, str] | None = None) -> Path:
    """A file source's profile from a column mapping (field → column, or {column, split})."""
    if not NAME.fullmatch(name):
        raise RecordhoundError(f"source name {name!r}: use 1-60 of a-z, 0-9 and _")
    if kind not in FILE_KINDS:
        raise RecordhoundError(f"file kind {kind!r}: use one of {', '.join(sorted(FILE_KINDS))}")
    document: dict[str, Any] = {"name": name, "kind": kind, "location": f"{name}.{kind}", "fields": mapping}
    if currency_symbols:
        document["price"] = {"currency_symbols": currency_symbols}
    target = Path(folder) / f"{name}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    trial = target.with_name(f".{name}.draft.yaml")
    trial.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    try:
        load_profile(str(trial))  # what it writes must load (a ProfileError names what is wrong)
    except RecordhoundError:
        trial.unlink()
        raise
    trial.replace(target)
    return target
