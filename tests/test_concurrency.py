"""Two writers on one database: concurrent opens of a new file (each migration applied exactly
once, nobody fails with "database is locked"). Processes are started all at once through a
``go`` file barrier."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sqlite_utils

from autorubric_local.store import MIGRATIONS

SAFETY_S = 120  # a limit against hangs, never a measured time

OPEN_DB_WORKER = """
import sys, time
from pathlib import Path
import autorubric_local.store.schema as schema

db_path, log, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])

def logged(number, migrate):
    def apply(db):
        migrate(db)
        with open(log, "a") as handle:  # one short append per call: atomic with O_APPEND
            handle.write(f"{number}\\n")
    return apply

schema.MIGRATIONS = tuple((n, name, logged(n, m)) for n, name, m in schema.MIGRATIONS)
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
schema.open_db(db_path).close()
print("opened", flush=True)
"""


def start_together(commands: list[list[str]], go: Path, env: dict[str, str] | None = None) -> list[subprocess.Popen[str]]:
    """Start every command, wait until each printed ``ready``, then let them all go at once."""
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
        for command in commands
    ]
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", process.stderr.read() if process.stderr else ""
    go.touch()
    return processes


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=SAFETY_S)
    return process.returncode, out, err


def test_concurrent_opens_of_a_new_file_apply_each_migration_once(tmp_path: Path) -> None:
    db_path, log, go = tmp_path / "results.sqlite", tmp_path / "applied.log", tmp_path / "go"
    command = [sys.executable, "-c", OPEN_DB_WORKER, str(db_path), str(log), str(go)]
    outcomes = [finish(p) for p in start_together([command] * 4, go)]
    assert all(rc == 0 and out.strip() == "opened" for rc, out, _ in outcomes), [err for _, _, err in outcomes]
    numbers = [number for number, _, _ in MIGRATIONS]
    assert sorted(int(line) for line in log.read_text().split()) == numbers  # each applied exactly once
    db = sqlite_utils.Database(db_path)
    assert [row["number"] for row in db["_migrations"].rows] == numbers
    assert db.journal_mode == "wal"
