"""A results database written before runs and sweeps shared one resumable-job driver (issue 32)
still resumes with today's code: ``tests/data/pre_jobs_v14.sql`` (written by
``tests/make_pre_jobs_db.py``) holds a run stopped after 2 of 6 items and a sweep interrupted
after its first chunk, each still ``running`` with the stale lease of a writer killed on another
host. Both resume (their content hashes still match), are taken over from the dead writer, and
end with the rows of an uninterrupted run and sweep in a fresh file."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import crash_worker
import pytest
import sqlite_utils
import sweep_crash_worker
from make_pre_jobs_db import RUN_ITEMS, RUN_NAME, SWEEP_NAME

from autorubric_local.runner import EvalConfig, EvalRunner
from autorubric_local.store import Store
from autorubric_local.store.schema import MIGRATIONS

DUMP = Path(__file__).resolve().parent / "data" / "pre_jobs_v14.sql"


def old_database(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(DUMP.read_text(encoding="utf-8"))
    db.close()
    return path


def rows(db_path: Path, table: str, columns: str, order: str) -> list[tuple[object, ...]]:
    return sqlite_utils.Database(db_path).execute(f"select {columns} from {table} order by {order}").fetchall()


def run(db_path: Path) -> object:
    return EvalRunner(crash_worker.build_dataset(RUN_ITEMS), crash_worker.build_grader(),
                      EvalConfig(db_path=db_path, experiment_name=RUN_NAME, chunk_judgments=3, chunk_seconds=None,
                                 show_progress=False)).run_sync()


def test_a_database_made_before_jobs_resumes_its_run_and_its_sweep(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    old = old_database(tmp_path)
    before = sqlite_utils.Database(old)
    assert before["judgments"].count == 6 and before["sweep_judgments"].count == sweep_crash_worker.ROTATIONS_PER_ITEM
    store = Store.open(old)  # migrates to today's schema
    assert {row["number"] for row in store.db["_migrations"].rows} == {number for number, _, _ in MIGRATIONS}
    store.close()

    with caplog.at_level(logging.WARNING):
        resumed = run(old)
    assert resumed.resumed_items == 2 and resumed.successful_items == RUN_ITEMS  # type: ignore[attr-defined]
    assert any("old-host" in record.getMessage() for record in caplog.records)  # the dead writer's lease taken over
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        swept = sweep_crash_worker.sweep(str(old), SWEEP_NAME)
    assert swept.resumed_rotations == sweep_crash_worker.ROTATIONS_PER_ITEM
    assert any("old-host" in record.getMessage() for record in caplog.records)

    fresh = tmp_path / "fresh.sqlite"
    run(fresh)
    sweep_crash_worker.sweep(str(fresh), SWEEP_NAME)
    judgment = "item_id, criterion_index, judge_id, permutation_index, verdict, label_probabilities_json"
    order = "item_id, criterion_index, judge_id, permutation_index"
    assert rows(old, "judgments", judgment, order) == rows(fresh, "judgments", judgment, order)
    swept_columns = "judge_id, item_id, criterion_index, variant, rotation, chosen_position"
    sweep_order = "judge_id, item_id, criterion_index, variant, rotation"
    assert rows(old, "sweep_judgments", swept_columns, sweep_order) == rows(fresh, "sweep_judgments", swept_columns,
                                                                           sweep_order)
    score_columns = "item_id, criterion_index, variant, judge_id, n_rotations"
    assert rows(old, "sweep_scores", score_columns, score_columns) == rows(fresh, "sweep_scores", score_columns,
                                                                          score_columns)
    db = sqlite_utils.Database(old)
    assert [r["status"] for r in db["runs"].rows] == ["finished"] and [r["status"] for r in db["sweeps"].rows] == [
        "finished"]
    assert db["run_leases"].count == 0 and db["sweep_leases"].count == 0
