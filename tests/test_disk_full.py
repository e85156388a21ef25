"""A results database that fills up mid-run (issue 52): SQLite's own SQLITE_FULL, made by
``PRAGMA max_page_count`` on the run's connection before its second chunk commits. `grade`
says what failed, what is kept and how to resume, exits 4, leaves the run `interrupted` with
its lease given back and the file intact, and a second `grade` resumes it to the end. Before the
mend it exited 1 with three chained `sqlite3.OperationalError` tracebacks, the run left
`running` with its lease held."""

from __future__ import annotations

import errno
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_report import policy

from autorubric_local.cli import common, main
from autorubric_local.engine import ScriptedEngine
from autorubric_local.graders import criterion_grader
from autorubric_local.store import Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ARGS = [str(EXAMPLES / "battery_rubric.yaml"), str(EXAMPLES / "battery_submissions.jsonl"), "--run", "r",
        "--chunk-judgments", "8", "--no-progress", "--seed", "1"]


def test_a_full_database_stops_the_run_cleanly_and_it_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = ScriptedEngine(policy=policy)
    monkeypatch.setattr(criterion_grader, "load_engine", lambda config: engine)
    original = Store.record_items
    calls = {"n": 0}

    def fill_up(self: Store, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:  # from now on the file cannot grow: the next commit meets SQLITE_FULL
            pages = self.db.execute("PRAGMA page_count").fetchone()[0]
            self.db.execute(f"PRAGMA max_page_count = {pages + 2}")  # room to mark the run, not for a chunk
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Store, "record_items", fill_up)
    db = tmp_path / "r.sqlite"
    done = CliRunner().invoke(main, ["grade", *ARGS, "--db", str(db)])
    assert done.exit_code == 4, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)  # no traceback
    message = done.output
    assert "the results database could not be written (database or disk is full)" in message
    assert "after 1 of 8 items were committed; they are kept" in message and "run the same command again" in message
    with sqlite3.connect(db) as con:
        assert con.execute("pragma integrity_check").fetchone()[0] == "ok"
        assert con.execute("select status from runs").fetchone()[0] == "interrupted"
        assert con.execute("select count(*) from run_leases").fetchone()[0] == 0
        assert con.execute("select count(*) from items where report_json is not null").fetchone()[0] == 1
    monkeypatch.setattr(Store, "record_items", original)
    again = CliRunner().invoke(main, ["grade", *ARGS, "--db", str(db)])
    assert again.exit_code == 0, again.output
    with sqlite3.connect(db) as con:
        assert con.execute("select status from runs").fetchone()[0] == "finished"
        assert con.execute("select count(*) from items where report_json is not null").fetchone()[0] == 8


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs filled to the last byte (needs the right to mount: root in the suite's
    container; skipped where it is refused)."""
    mount = tmp_path / "full"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        try:
            with (mount / "filler").open("wb", buffering=0) as filler:
                while True:
                    filler.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def _no_judge(config: Any) -> Any:
    raise AssertionError("the judge was loaded")


def test_a_disk_full_at_start_is_refused_before_the_judge_loads(full_disk: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(criterion_grader, "load_engine", _no_judge)
    db = full_disk / "r.sqlite"
    done = CliRunner().invoke(main, ["grade", *ARGS, "--db", str(db)])
    assert done.exit_code == 2, done.output  # a usage error, said before the judge loads
    assert f"{db}: its disk is full (0 KiB free in {full_disk}" in " ".join(done.output.split())
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]  # nothing created


def test_a_database_that_cannot_be_created_leaves_nothing_behind(full_disk: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills between the check and the first write (the check let through: free space
    taken by another process meanwhile): exit 4 and SQLite's reason, no 4 KB file without
    tables and no -wal/-shm left (before: a traceback from open_db, and those files)."""
    monkeypatch.setattr(common, "MIN_FREE_BYTES", 0)
    monkeypatch.setattr(criterion_grader, "load_engine", lambda config: ScriptedEngine(policy=policy))
    db = full_disk / "r.sqlite"
    done = CliRunner().invoke(main, ["grade", *ARGS, "--db", str(db)])
    assert done.exit_code == 4, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)  # no traceback
    text = " ".join(done.output.split())
    assert "could not be written (database or disk is full); nothing was graded and the half-made file was removed" \
        in text
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]
