"""`recordhound import` meets a PostgreSQL outage (its role locked out, its sessions killed) between a batch's
commit and its progress: it waits, one warning per try, and goes on once the database is back; every readable
row lands once, the broken lines are line errors, the counts are the file's, IDs consecutive. Before, the
import ended at the outage (exit 75, its status left ``in_progress``), and an import job failed with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from tests.integration.review_env import open_env
from tests.integration.test_apply_outage import _frozen, _stop, _wait_for
from tests.integration.test_file_import_broken_lines import CSV, CSV_ERRORS, CSV_STORED, _assert_errors, _outcome
from tests.integration.truthcheck import assert_ids_consecutive
from tests.services import PostgresDatabase

WAITING = "the product database or the review queue is unreachable"


def test_an_import_waits_out_a_database_outage_and_lands_each_row_once(tmp_path: Path) -> None:
    with PostgresDatabase(own_role=True) as database, open_env(database.url, tmp_path) as env:
        feed = tmp_path / "catalog.csv"
        feed.write_bytes(CSV)
        profile = tmp_path / "feed.yaml"
        profile.write_text(yaml.safe_dump({"name": "feed", "kind": "csv", "fields": {
            "external_id": "sku", "title": "title", "artists": "artists", "price": "price"},
            "price": {"default_currency": "EUR"}}))
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
