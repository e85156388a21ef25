"""Databases a command cannot use (issue 52).

- One written by a newer version (a migration this one does not know) is refused before anything
  is written to it, with both versions named. Before the mend `grade` exited 0, wrote a new run
  into it and switched it to WAL mode.
- A file that is not a database gets the same clean message from every command that reads one;
  `report`, `metrics`, `estimate` and `calibrate` printed sqlite3 tracebacks.
- One in a folder this process cannot write is read by the commands that only read."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_cli import invoke

from autorubric_local.cli import main

from autorubric_local.core.errors import SchemaVersionError
from autorubric_local.store.schema import SCHEMA_VERSION, open_db

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


@pytest.fixture
def newer(tmp_path: Path) -> Path:
    """A database in rollback-journal mode whose ``_migrations`` records migration 99."""
    path = tmp_path / "newer.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("create table _migrations (number integer primary key, name text, applied_utc text)")
        db.execute("insert into _migrations values (99, 'from the future', '2030-01-01T00:00:00')")
    return path


def _untouched(path: Path) -> None:
    with sqlite3.connect(path) as db:
        assert db.execute("pragma journal_mode").fetchone()[0] == "delete"  # not switched to WAL
        assert [r[0] for r in db.execute("select name from sqlite_master where type = 'table'")] == ["_migrations"]


def test_open_db_refuses_a_newer_schema_naming_both_versions(newer: Path) -> None:
    with pytest.raises(SchemaVersionError) as info:
        open_db(newer)
    message = str(info.value)
    assert f"at migration 99; this version knows migrations up to {SCHEMA_VERSION}" in message
    assert message.startswith(f"{newer}: written by a newer autorubric-local")
    _untouched(newer)


def test_grade_refuses_it_before_any_judge_loads_and_reads_say_so_once(newer: Path) -> None:
    result = invoke(CliRunner(), "grade", EXAMPLES / "battery_rubric.yaml", EXAMPLES / "battery_submissions.jsonl",
                    "--model", "no-such-judge", "--db", newer)
    assert result.exit_code == 2  # refused at --db, so the unknown judge is never looked up
    assert "written by a newer autorubric-local" in result.output
    runs = invoke(CliRunner(), "runs", "--db", newer)
    assert runs.exit_code == 1
    assert runs.output.count(str(newer)) == 1, runs.output  # the path once, not twice
    _untouched(newer)


@pytest.mark.parametrize("command", [["report", "r"], ["metrics", "{db}"], ["estimate", "r"], ["calibrate", "{db}"],
                                     ["runs"], ["show", "r"], ["export", "r"], ["metrics", "r"], ["calibrate", "r"],
                                     ["indeterminacy", "{db}"], ["indeterminacy", "r"]])
def test_every_command_that_reads_a_database_says_a_file_is_not_one(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_bytes(b'{"this": "is JSON, not SQLite"}' * 100)
    args = [a.format(db=path) for a in command]
    if "{db}" not in command:
        args += ["--db", str(path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception  # no traceback
    assert "not an SQLite" in result.output, result.output


def _graded_database(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled example graded (scripted judge) into ``folder / r.sqlite``, run ``r``, with a fixed
    seed: grade's own seed is random, and the option shuffles it draws change the scripted verdicts."""
    from test_report import policy

    from autorubric_local.engine import ScriptedEngine
    from autorubric_local.graders import criterion_grader

    engine = ScriptedEngine(policy=policy)
    monkeypatch.setattr(criterion_grader, "load_engine", lambda config: engine)
    path = folder / "r.sqlite"
    done = invoke(CliRunner(), "grade", EXAMPLES / "battery_rubric.yaml", EXAMPLES / "battery_submissions.jsonl",
                  "--db", path, "--run", "r", "--seed", "11", "--no-progress")
    assert done.exit_code == 0, done.output
    return path


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to read as another user")
def test_read_commands_work_on_a_database_in_a_read_only_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """`runs`, `show`, `export` and `ranking` run as an unprivileged user (uid 65534) on a database in a
    folder and a file it cannot write (a shared folder, an archive, a read-only mount): they
    read it, and nothing in the folder changes. Before the mend all three refused it ("not
    writable", exit 1)."""
    folder = Path(tempfile.mkdtemp(prefix="read-only-db-", dir="/tmp"))
    try:
        path = _graded_database(folder, monkeypatch)
        from test_compare import config as comparison_config
        from test_compare import judge, quality_policy

        from autorubric_local.comparisons.data import load_comparisons
        from autorubric_local.comparisons.judging import run_comparison
        from autorubric_local.engine import ScriptedEngine as Scripted

        run_comparison(load_comparisons(EXAMPLES / "compare_responses.jsonl"),
                       [judge(Scripted("s", policy=quality_policy()))], config=comparison_config(path, "pairs"))
        with sqlite3.connect(path) as db:  # labels that agree with the judge, for the analyses that need some
            verdicts: dict[str, list[str]] = {}
            for item, verdict in db.execute("select item_id, coalesce(verdict, selected_label) from item_criteria "
                                            "order by item_id, criterion_index"):
                verdicts.setdefault(item, []).append("UNMET" if verdict == "CANNOT_ASSESS" else verdict)
        labels = folder / "labels.jsonl"
        labels.write_text("".join(json.dumps({"id": k, "ground_truth": v}) + "\n" for k, v in verdicts.items()),
                          encoding="utf-8")
        folder.chmod(0o755)
        for file in folder.iterdir():
            file.chmod(0o644)
        before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
        env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(folder / "no-home")}
        out = Path(tempfile.mkdtemp(prefix="report-", dir="/tmp"))
        os.chown(out, 65534, 65534)
        expected = {"runs": "finished", "show": "score", "export": "item_id", "ranking": "Ranking, judge s",
                    "report": "index.html", "metrics": "Per criterion", "estimate": "Estimates for r",
                    "calibrate": "safety_error", "indeterminacy": "Forced-choice agreement"}
        by_label = ["--labels", str(labels)]
        for command in (["runs"], ["show", "r"], ["export", "r", "--format", "jsonl"], ["ranking", "pairs"],
                        ["report", "r", "--out", str(out)], ["estimate", "r", *by_label],
                        ["metrics", str(path), "--run", "r", *by_label], ["calibrate", str(path), "--run", "r",
                                                                          *by_label],
                        ["indeterminacy", str(path), *by_label],  # the deprecated order above, the new one here
                        ["metrics", "r", *by_label], ["calibrate", "r", *by_label], ["indeterminacy", "r", *by_label]):
            db_option = [] if str(path) in command else ["--db", str(path)]
            done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                                   "autorubric_local.cli", *command, *db_option],
                                  capture_output=True, text=True, env=env, cwd="/tmp", timeout=300)
            assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
            assert expected[command[0]] in done.stdout + done.stderr, (command, done.stdout[-1000:])
            if command[0] in ("metrics", "calibrate", "indeterminacy", "estimate"):  # said, not silently dropped
                assert f"{path} is read-only here; not stored: the labels" in done.stderr, done.stderr
        assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()} == before
        assert (out / "index.html").is_file()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def test_a_run_another_process_is_grading_is_refused_before_the_judge_loads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the mend the refusal came after the judge had loaded (18.4 s for the default)."""
    from autorubric_local.graders import criterion_grader
    from autorubric_local.store import Store
    from autorubric_local.store.leases import LeaseOwner

    db = tmp_path / "r.sqlite"
    store = Store.open(db)
    holder = LeaseOwner.for_this_process()  # a live writer: this process, another owner token
    store.start_run(name="busy", judges=[], grader={}, rubric=None, data_path=None, lease=holder)
    store.close()

    def no_judge(config: object) -> object:
        raise AssertionError("the judge was loaded")

    monkeypatch.setattr(criterion_grader, "load_engine", no_judge)
    done = CliRunner().invoke(main, ["grade", str(EXAMPLES / "battery_rubric.yaml"),
                                     str(EXAMPLES / "battery_submissions.jsonl"), "--db", str(db), "--run", "busy",
                                     "--no-progress"])
    assert done.exit_code == 1, done.output
    assert "run 'busy'" in done.output and f"is being graded by another process: pid {os.getpid()}" in done.output
    store = Store.open(db)
    assert store.lease_holder(store.find_run("busy")["id"]).owner == holder.owner  # type: ignore[index,union-attr]
    store.close()


def test_backup_copies_commits_still_in_the_wal_into_one_file(tmp_path: Path) -> None:
    """`backup` (issue 52: "offer one"): the copy holds a commit that is only in the -wal file
    (a plain copy of the .sqlite file misses it), is one file in rollback-journal mode that
    `runs` reads on its own, and an existing DEST is refused untouched."""
    from autorubric_local.store import Store

    source = tmp_path / "r.sqlite"
    store = Store.open(source)
    store.start_run(name="before", judges=[], grader={}, rubric=None, data_path=None)
    writer = sqlite3.connect(source)
    writer.execute("pragma wal_autocheckpoint = 0")  # the next commit stays in r.sqlite-wal
    writer.execute("update runs set name = 'after'")
    writer.commit()
    plain = tmp_path / "plain.sqlite"
    shutil.copyfile(source, plain)
    with sqlite3.connect(plain) as db:  # every commit is still in the -wal: the file alone has no tables
        assert db.execute("select count(*) from sqlite_master where name = 'runs'").fetchone()[0] == 0
    copy = tmp_path / "archive" / "copy.sqlite"
    copy.parent.mkdir()
    done = CliRunner().invoke(main, ["backup", str(copy), "--db", str(source)])
    assert done.exit_code == 0, done.output
    writer.close()
    store.close()
    assert sorted(p.name for p in copy.parent.iterdir()) == ["copy.sqlite"]
    with sqlite3.connect(copy) as db:
        assert db.execute("select name from runs").fetchall() == [("after",)]
        assert db.execute("pragma journal_mode").fetchone()[0] == "delete"
        assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
    listed = CliRunner().invoke(main, ["runs", "--db", str(copy)])
    assert listed.exit_code == 0 and "after" in listed.output, listed.output
    copy.write_bytes(b"keep me")
    again = CliRunner().invoke(main, ["backup", str(copy), "--db", str(source)])
    assert again.exit_code == 1 and "exists" in again.output
    assert copy.read_bytes() == b"keep me"
