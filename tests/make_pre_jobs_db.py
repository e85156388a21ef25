"""Write ``tests/data/pre_jobs_v14.sql``: a results database as this package left it before runs
and sweeps shared one resumable-job driver (issue 32), with a run and a sweep each stopped part
way and a stale lease of a killed writer on each.

Run once, at the commit named in the dump's header, from the repository root:
``python tests/make_pre_jobs_db.py``. ``tests/test_job_upgrade.py`` resumes both with today's
code, so a change of either content-hash scheme, of the lease tables or of the migrations shows
up there. Regenerate the dump only for a deliberate, documented change of one of those.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import crash_worker  # noqa: E402
import sweep_crash_worker  # noqa: E402

from autorubric_local.runner import EvalConfig, EvalInterruptedError, EvalRunner  # noqa: E402

RUN_NAME, SWEEP_NAME = "old-run", "old-sweep"
RUN_ITEMS = 6
STALE = ("old-host:4242:deadbeef", 4242, "old-host", "2000-01-01T00:00:00+00:00")
"""The lease a killed writer on another host left: owner, pid, host, heartbeat (and acquired)."""


def write(db_path: Path) -> None:
    runner = EvalRunner(crash_worker.build_dataset(RUN_ITEMS), crash_worker.build_grader(),
                        EvalConfig(db_path=db_path, experiment_name=RUN_NAME, chunk_judgments=3, chunk_seconds=None,
                                   show_progress=False))
    chunks = []

    def stop_after_two(report: object) -> None:
        chunks.append(report)
        if len(chunks) == 2:
            runner.stop()

    runner.on_chunk = stop_after_two
    try:
        runner.run_sync()
    except EvalInterruptedError:
        pass
    committed = []

    def interrupt_after_one(report: object) -> None:
        committed.append(report)
        raise KeyboardInterrupt

    try:
        sweep_crash_worker.sweep(str(db_path), SWEEP_NAME, on_chunk=interrupt_after_one)
    except KeyboardInterrupt:
        pass
    db = sqlite3.connect(db_path)
    with db:  # as a writer killed mid-run leaves them: still running, with its lease
        owner, pid, host, beat = STALE
        (run_id,) = db.execute("select id from runs where name = ?", [RUN_NAME]).fetchone()
        (sweep_id,) = db.execute("select id from sweeps where name = ?", [SWEEP_NAME]).fetchone()
        db.execute("update runs set status = 'running', finished_utc = null where id = ?", [run_id])
        db.execute("update sweeps set status = 'running', finished_utc = null where id = ?", [sweep_id])
        db.execute("insert into run_leases values (?, ?, ?, ?, ?, ?)", [run_id, owner, pid, host, beat, beat])
        db.execute("insert into sweep_leases values (?, ?, ?, ?, ?, ?)", [sweep_id, owner, pid, host, beat, beat])
    db.close()


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "old.sqlite"
        write(db_path)
        db = sqlite3.connect(db_path)
        db.execute("pragma wal_checkpoint(truncate)")
        dump = "\n".join(db.iterdump())
        db.close()
    out = HERE / "data" / "pre_jobs_v14.sql"
    out.write_text(f"-- written by tests/make_pre_jobs_db.py at {commit}; see its docstring\n{dump}\n", encoding="utf-8")
    print(out, len(dump), "characters")


if __name__ == "__main__":
    main()
