"""`recordhound import` meets a PostgreSQL outage (its role locked out, its sessions killed) between a batch's
commit and its progress: it waits, one warning per try, and goes on once the database is back; every readable
row lands once, the broken lines are line errors, the counts are the file's, IDs consecutive. Before, the
import ended at the outage (exit 75, its status left ``in_progress``), and an import job failed with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from scrapy.settings import Settings

from recordhound import settings as project_settings
from recordhound.jobs import runners, states
from recordhound.jobs.config import WorkerConfig
from recordhound.jobs.store import Job
from tests.faultproxy import FaultProxy
from tests.integration.review_env import open_env, review_env
from tests.integration.test_apply_outage import _frozen, _stop, _wait_for
from tests.integration.test_file_import_broken_lines import CSV, CSV_ERRORS, CSV_STORED, _assert_errors, _outcome
from tests.integration.truthcheck import assert_ids_consecutive
from tests.services import PostgresDatabase

WAITING = "the product database or the review queue is unreachable"


def _profile(folder: Path) -> Path:
    profile = folder / "feed.yaml"
    profile.write_text(yaml.safe_dump({"name": "feed", "kind": "csv", "fields": {
        "external_id": "sku", "title": "title", "artists": "artists", "price": "price"},
        "price": {"default_currency": "EUR"}}))
    return profile


def test_an_import_waits_out_a_database_outage_and_lands_each_row_once(tmp_path: Path) -> None:
    with PostgresDatabase(own_role=True) as database, open_env(database.url, tmp_path) as env:
        feed = tmp_path / "catalog.csv"
        feed.write_bytes(CSV)
        profile = _profile(tmp_path)
        command = [sys.executable, "-m", "recordhound", "import", str(profile), "--file", str(feed), "--batch-size",
                   "2", "-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true", "-s", "RECORDHOUND_FRONTIER_RETRY_MAX_SECONDS=1"]
        for setting in env.settings():
            command += ["-s", setting]
        log = tmp_path / "import.log"
        with open(log, "w") as out:
            process = subprocess.Popen(command, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env={
                **os.environ, "DATABASE_URL": env.database_url, "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
                "RECORDHOUND_FAILPOINTS": "import.after_commit=stop@2"})
        try:
            _wait_for(lambda: _frozen(process.pid), "the import did not stop after its second batch", log)
            database.lock_out()
            process.send_signal(signal.SIGCONT)
            _wait_for(lambda: log.read_text().count(WAITING) >= 2, "the import did not wait for the database", log)
            assert process.poll() is None, log.read_text()[-3000:]
            database.let_in()
            assert process.wait(120) == 0, log.read_text()[-3000:]
        finally:
            database.let_in()
            _stop(process)
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
        skus, meta = _outcome(env)
        assert skus == sorted(CSV_STORED) and meta["status"] == "completed" and meta["last_parsed_line"] == 8, meta
        _assert_errors(meta, CSV_ERRORS)
        assert meta["counts"]["stored"] == len(CSV_STORED), meta["counts"]
        assert_ids_consecutive(database.url)


def test_an_import_job_waiting_for_its_review_queue_beats_and_hears_a_stop(tmp_path: Path) -> None:
    """An import job (the runner ``recordhound worker`` calls) whose review queue's Redis goes away after its
    first batch: while it waits it keeps beating (its job is not taken over by another worker), a stop asked
    then ends it ``stopped`` at once; the next run, Redis back, resumes after the last batch recorded and every
    row lands once. Before (review 3), no beat and no stop while it waited: after 30 s another worker took the
    job over and two imports of the file ran at once."""
    with review_env("redis", tmp_path) as env, FaultProxy(int(env.redis_url.rsplit(":", 1)[1].split("/")[0])) as proxy:
        feed = tmp_path / "catalog.csv"
        feed.write_bytes(CSV)
        _profile(tmp_path)
        settings = Settings()
        settings.setmodule(project_settings)
        settings.setdict({"RECORDHOUND_DATABASE_URL": env.database_url, "RECORDHOUND_REDIS_PREFIX": env.prefix,
                          "RECORDHOUND_REDIS_URL": proxy.url(db=int(env.redis_url.rsplit("/", 1)[1] or 0)),
                          "RECORDHOUND_REVIEW_PATH": env.queue_path, "RECORDHOUND_FRONTIER_RETRY_MAX_SECONDS": 1,
                          "RECORDHOUND_JOB_IMPORT_BATCH": 2, "RECORDHOUND_PROFILES_DIRS": [str(tmp_path)],
                          "RECORDHOUND_TRUST_NEW_ENTITIES": True})
        job = Job(1, "feed", {"profile": "feed", "file": str(feed)})
        beats: list[float] = []
        stop = threading.Event()

        def beat(changes: dict[str, Any]) -> str:
            beats.append(time.monotonic())
            if len(beats) == 2:  # the first batch recorded: the review queue goes away
                proxy.cut(600)
            return states.STOPPING if stop.is_set() else states.RUNNING

        outcome: dict[str, Any] = {}
        running = threading.Thread(target=lambda: outcome.update(
            run=runners.run_import(job, settings, WorkerConfig.from_settings(settings), beat)))
        running.start()
        try:
            deadline = time.monotonic() + 30
            while len(beats) < 6 and running.is_alive() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(beats) >= 6 and running.is_alive(), f"{len(beats)} beats while it waited: {outcome}"
            stop.set()
            running.join(15)
            assert not running.is_alive() and outcome["run"] == states.STOPPED, outcome
        finally:
            proxy.heal()
            stop.set()
            running.join(60)
        _, meta = _outcome(env)
        assert meta["status"] == "stopped" and meta["last_parsed_line"] == 2, meta
        assert runners.run_import(job, settings, WorkerConfig.from_settings(settings),
                                  lambda changes: states.RUNNING) == states.DONE
        skus, meta = _outcome(env)
        assert skus == sorted(CSV_STORED) and meta["status"] == "completed", meta
        _assert_errors(meta, CSV_ERRORS)
        assert meta["counts"]["stored"] == len(CSV_STORED), meta["counts"]
        assert_ids_consecutive(env.database_url)
