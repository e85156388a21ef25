"""SQLite results store (sqlite-utils): runs, items and one row per judgment.

``open_db(path)`` is the one way in: it opens the file (WAL mode) and applies the numbered
migrations in :data:`MIGRATIONS`, each in its own transaction, recording them in
``_migrations``. :class:`ResultStore` writes a batch of graded items in one transaction, so a
crash loses at most the batch in flight and never leaves half of one.

Tables (units in column names):

- ``runs``: ``id``, ``name``, ``started_utc``, ``finished_utc``, ``status``, ``judges_json``,
  ``grader_json``, ``rubric_json``, ``data_path``, ``package_version``.
- ``items``: per run and item: the graded text and context, ``score``, ``raw_score``,
  ``cannot_assess_count``, ``error``, token counts.
- ``judgments``: per run, item, criterion, judge and ``permutation_index``: ``verdict``
  (binary) or ``selected_index``/``selected_label`` (multi-choice), ``label_probabilities_json``
  (keyed as in ``CriterionReport.label_probabilities``), ``shuffle_order_json``, ``explanation``,
  token counts, ``duration_ms`` and ``error``. A failed judgment has ``error`` set and no
  verdict: nothing is made up.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import sqlite_utils

from autorubric_local.errors import InputError
from autorubric_local.graders.criterion_grader import GradedItem
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.reports import EnsembleCriterionReport

SCHEMA_VERSION = 1


def _migration_1(db: sqlite_utils.Database) -> None:
    db["runs"].create(
        {
            "id": str,
            "name": str,
            "started_utc": str,
            "finished_utc": str,
            "status": str,
            "judges_json": str,
            "grader_json": str,
            "rubric_json": str,
            "data_path": str,
            "package_version": str,
        },
        pk="id",
        not_null={"id", "started_utc", "status"},
    )
    db["items"].create(
        {
            "run_id": str,
            "item_id": str,
            "item_index": int,
            "submission": str,
            "query": str,
            "reference_submission": str,
            "score": float,
            "raw_score": float,
            "cannot_assess_count": int,
            "error": str,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cached_tokens": int,
        },
        pk=("run_id", "item_id"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["judgments"].create(
        {
            "run_id": str,
            "item_id": str,
            "criterion_index": int,
            "criterion_name": str,
            "judge_id": str,
            "model_id": str,
            "permutation_index": int,
            "shuffle_order_json": str,
            "verdict": str,
            "selected_index": int,
            "selected_label": str,
            "label_probabilities_json": str,
            "explanation": str,
            "explanation_truncated": int,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cached_tokens": int,
            "duration_ms": float,
            "error": str,
        },
        pk=("run_id", "item_id", "criterion_index", "judge_id", "permutation_index"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["judgments"].create_index(["run_id", "item_id"])


MIGRATIONS: tuple[tuple[int, str, Callable[[sqlite_utils.Database], None]], ...] = (
    (1, "runs, items, judgments", _migration_1),
    # 2: runner checkpoints (item reports, content hash)
    # 3: position-bias sweeps
)


def open_db(path: str | Path) -> sqlite_utils.Database:
    """Open (creating if needed) a results database and bring its schema up to date.

    Raises
    ------
    sqlite3.DatabaseError
        If the file is not an SQLite database.
    """
    db = sqlite_utils.Database(path)
    if str(path) != ":memory:":
        db.enable_wal()
    if "_migrations" not in db.table_names():
        db["_migrations"].create({"number": int, "name": str, "applied_utc": str}, pk="number")
    applied = {row["number"] for row in db["_migrations"].rows}
    for number, name, migrate in MIGRATIONS:
        if number in applied:
            continue
        with db.atomic():
            migrate(db)
            db["_migrations"].insert({"number": number, "name": name, "applied_utc": _now()})
    return db


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _package_version() -> str:
    try:
        return version("autorubric-local")
    except PackageNotFoundError:
        return "unknown"


class ResultStore:
    """Writes and reads grading results in one database.

    Parameters
    ----------
    db : sqlite_utils.Database
        From :func:`open_db`.
    """

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db

    def start_run(
        self,
        *,
        name: str | None,
        judges: Sequence[dict[str, Any]],
        grader: dict[str, Any],
        rubric: Any,
        data_path: str | None,
    ) -> str:
        """Insert a run row (status ``running``) and return its id (``run-<utc>-<hex>``)."""
        run_id = f"run-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"
        with self.db.atomic():
            self.db["runs"].insert(
                {
                    "id": run_id,
                    "name": name or run_id,
                    "started_utc": _now(),
                    "finished_utc": None,
                    "status": "running",
                    "judges_json": json.dumps(list(judges)),
                    "grader_json": json.dumps(grader),
                    "rubric_json": json.dumps(rubric),
                    "data_path": data_path,
                    "package_version": _package_version(),
                }
            )
        return run_id

    def record(
        self,
        run_id: str,
        graded: Sequence[GradedItem],
        model_ids: dict[str, str],
        *,
        first_index: int | None = None,
    ) -> None:
        """Write items and their judgments in one transaction.

        ``first_index`` is the run-wide index of ``graded[0]`` (items of a run are recorded in
        batches); an item without an id is stored as ``item-<run-wide index>``.

        Raises
        ------
        InputError
            If an item has no id and ``first_index`` is not given (its row could overwrite
            another batch's item).
        """
        if first_index is None:
            if any(not entry.item.item_id for entry in graded):
                raise InputError("items without an id need first_index, their index in the run")
            first_index = 0
        item_rows: list[dict[str, Any]] = []
        judgment_rows: list[dict[str, Any]] = []
        for index, entry in enumerate(graded, start=first_index):
            report = entry.report
            usage = report.token_usage
            item_rows.append(
                {
                    "run_id": run_id,
                    "item_id": entry.item.item_id or f"item-{index}",
                    "item_index": index,
                    "submission": entry.item.submission,
                    "query": entry.item.query,
                    "reference_submission": entry.item.reference_submission,
                    "score": report.score,
                    "raw_score": report.raw_score,
                    "cannot_assess_count": report.cannot_assess_count,
                    "error": report.error,
                    "prompt_tokens": usage.prompt_tokens if usage else None,
                    "completion_tokens": usage.completion_tokens if usage else None,
                    "cached_tokens": usage.cache_read_input_tokens if usage else None,
                }
            )
            for result, criterion_report in zip(entry.results, report.report or []):
                judgment_rows.append(
                    _judgment_row(run_id, item_rows[-1]["item_id"], result, criterion_report, model_ids)
                )
        with self.db.atomic():
            self.db["items"].insert_all(item_rows, replace=True)
            self.db["judgments"].insert_all(judgment_rows, replace=True)

    def finish_run(self, run_id: str, status: str = "finished") -> None:
        """Mark a run finished (or ``failed``) with its end time."""
        with self.db.atomic():
            self.db["runs"].update(run_id, {"finished_utc": _now(), "status": status})

    def judgments(self, run_id: str) -> list[dict[str, Any]]:
        """Judgment rows of a run, ordered by item, criterion, judge and permutation."""
        return list(
            self.db["judgments"].rows_where(
                "run_id = ?",
                [run_id],
                order_by="item_id, criterion_index, judge_id, permutation_index",
            )
        )


def _judgment_row(
    run_id: str,
    item_id: str,
    result: JudgmentResult,
    report: EnsembleCriterionReport,
    model_ids: dict[str, str],
) -> dict[str, Any]:
    criterion = result.task.criterion
    judge_id = (report.votes or report.multi_choice_votes)[0].judge_id
    row: dict[str, Any] = {
        "run_id": run_id,
        "item_id": item_id,
        "criterion_index": result.task.criterion_index,
        "criterion_name": criterion.name,
        "judge_id": judge_id,
        "model_id": model_ids.get(judge_id),
        "permutation_index": 0,
        "shuffle_order_json": json.dumps(list(result.task.option_order)) if result.task.option_order else None,
        "verdict": None,
        "selected_index": None,
        "selected_label": None,
        "label_probabilities_json": json.dumps(report.label_probabilities) if report.label_probabilities else None,
        "explanation": result.explanation,
        "explanation_truncated": int(result.explanation_truncated),
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "cached_tokens": result.usage.cached_tokens,
        "duration_ms": round(result.usage.seconds * 1000.0, 3),
        "error": result.error,
    }
    if result.error is None:
        if report.final_verdict is not None:
            row["verdict"] = report.final_verdict.value
        elif report.final_multi_choice_verdict is not None:
            row["selected_index"] = report.final_multi_choice_verdict.selected_index
            row["selected_label"] = report.final_multi_choice_verdict.selected_label
    return row
