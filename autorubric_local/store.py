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

Migration 2 (runner checkpoints) makes a run rebuildable from the database alone:

- ``runs``: ``content_hash`` (``sha256:v1:<hex>``, see :mod:`autorubric_local.runner.checkpoint`),
  ``dataset_json`` (the dataset header: name, prompt, rubric, reference submission),
  ``total_items`` and ``wall_seconds`` (summed over the sessions of a resumed run).
- ``items``: ``item_json`` (the item as in a dataset file, without ground truth),
  ``ground_truth_json``, ``item_hash``, ``report_json`` (the item's
  ``EnsembleEvaluationReport``; NULL while the item is pending), ``engine_seconds`` (sum of its
  judgments' engine time), ``judgment_count`` and ``graded_utc``. A checkpointed run inserts a
  row for every planned item when it starts; an item is done when ``report_json`` is set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import sqlite_utils

from autorubric_local.bias.storage import _migration_3
from autorubric_local.errors import InputError
from autorubric_local.graders.assembly import binary_vote, choice_vote
from autorubric_local.graders.criterion_grader import GradedItem
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.metrics.persist import migration_4_metrics
from autorubric_local.provenance import package_version, timestamped_id, utc_now
from autorubric_local.reports import EnsembleCriterionReport

RUN_STATUSES: tuple[str, ...] = ("running", "finished", "failed", "interrupted")
"""Values of ``runs.status``."""


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


def _migration_2(db: sqlite_utils.Database) -> None:
    runs = db.table("runs")
    for column, kind in (("content_hash", str), ("dataset_json", str), ("total_items", int),
                         ("wall_seconds", float)):
        runs.add_column(column, kind)
    items = db.table("items")
    for column, kind in (("item_json", str), ("ground_truth_json", str), ("item_hash", str),
                         ("report_json", str), ("engine_seconds", float), ("judgment_count", int),
                         ("graded_utc", str)):
        items.add_column(column, kind)
    runs.create_index(["name"])
    items.create_index(["run_id", "item_index"])


MIGRATIONS: tuple[tuple[int, str, Callable[[sqlite_utils.Database], None]], ...] = (
    (1, "runs, items, judgments", _migration_1),
    (2, "runner checkpoints (item reports, content hash)", _migration_2),
    (3, "position-bias sweeps", _migration_3),
    (4, "metrics", migration_4_metrics),
)

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""Number of the newest migration."""


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
            db["_migrations"].insert({"number": number, "name": name, "applied_utc": utc_now()})
    return db


class ResultStore:
    """Writes and reads grading results in one database.

    Parameters
    ----------
    db : sqlite_utils.Database
        From :func:`open_db`.
    """

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db

    # ------------------------------------------------------------------------------ runs

    def start_run(
        self,
        *,
        name: str | None,
        judges: Sequence[dict[str, Any]],
        grader: dict[str, Any],
        rubric: Any,
        data_path: str | None,
        content_hash: str | None = None,
        dataset: dict[str, Any] | None = None,
        items: Sequence[dict[str, Any]] = (),
    ) -> str:
        """Insert a run row (status ``running``) and return its id (``run-<utc>-<hex>``).

        ``items`` are planned item rows (see :meth:`plan_items`), inserted in the same
        transaction, so a checkpointed run never exists without its plan.
        """
        run_id = timestamped_id("run")
        with self.db.atomic():
            self.db["runs"].insert(
                {
                    "id": run_id,
                    "name": name or run_id,
                    "started_utc": utc_now(),
                    "finished_utc": None,
                    "status": "running",
                    "judges_json": json.dumps(list(judges)),
                    "grader_json": json.dumps(grader),
                    "rubric_json": json.dumps(rubric),
                    "data_path": data_path,
                    "package_version": package_version(),
                    "content_hash": content_hash,
                    "dataset_json": None if dataset is None else json.dumps(dataset),
                    "total_items": len(items) if items else None,
                    "wall_seconds": 0.0,
                }
            )
            self._upsert_items(run_id, items)
        return run_id

    def plan_items(self, run_id: str, items: Sequence[dict[str, Any]]) -> None:
        """Insert or refresh planned item rows in one transaction; stored reports are kept.

        Each row has ``item_id``, ``item_index``, ``submission``, ``query``,
        ``reference_submission``, ``item_json``, ``ground_truth_json`` and ``item_hash``.
        """
        with self.db.atomic():
            self._upsert_items(run_id, items)

    def _upsert_items(self, run_id: str, items: Sequence[dict[str, Any]]) -> None:
        if items:
            rows = [{"run_id": run_id, **row} for row in items]
            self.db["items"].upsert_all(rows, pk=("run_id", "item_id"))

    def find_run(self, run: str | None = None) -> dict[str, Any] | None:
        """The run whose id or name is ``run`` (the latest of that name), or the latest run."""
        where, args = ("id = ? or name = ?", [run, run]) if run is not None else (None, [])
        rows = self.db["runs"].rows_where(where, args, order_by="started_utc desc, rowid desc", limit=1)
        return next(iter(rows), None)

    def run_names(self) -> list[str]:
        """Names of the runs in the database, oldest first."""
        return [row["name"] for row in self.db["runs"].rows_where(order_by="started_utc, rowid")]

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Set columns of a run row (one transaction)."""
        with self.db.atomic():
            self.db["runs"].update(run_id, fields)

    def finish_run(self, run_id: str, status: str = "finished", *, wall_seconds: float = 0.0) -> None:
        """Mark a run ``finished`` (or ``failed`` / ``interrupted``) with its end time.

        ``wall_seconds`` (this session's) is added to the run's total.
        """
        if status not in RUN_STATUSES:
            raise InputError(f"status: expected one of {', '.join(RUN_STATUSES)}, got {status!r}")
        with self.db.atomic():
            self.db.execute(
                "update runs set finished_utc = ?, status = ?, "
                "wall_seconds = coalesce(wall_seconds, 0) + ? where id = ?",
                [utc_now(), status, wall_seconds, run_id],
            )

    # ----------------------------------------------------------------------------- items

    def record(
        self,
        run_id: str,
        graded: Sequence[GradedItem],
        model_ids: dict[str, str],
        *,
        first_index: int | None = None,
        judge_ids: Sequence[str] | None = None,
        item_extras: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """Write items and their judgments in one transaction.

        ``first_index`` is the run-wide index of ``graded[0]`` (items of a run are recorded in
        batches); an item without an id is stored as ``item-<run-wide index>``. ``judge_ids``
        maps ``task.judge_index`` to a judge id (default: the keys of ``model_ids`` in order).
        ``item_extras[i]`` adds columns to item ``i``'s row (the runner's ``report_json``,
        ``engine_seconds`` ...). Recording an item again replaces its row and judgments.

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
        judges = list(judge_ids) if judge_ids is not None else list(model_ids)
        item_rows: list[dict[str, Any]] = []
        judgment_rows: list[dict[str, Any]] = []
        for offset, entry in enumerate(graded):
            row = _item_row(run_id, entry, first_index + offset)
            if item_extras is not None:
                row.update(item_extras[offset])
            item_rows.append(row)
            for result in entry.results:
                criterion_report = (entry.report.report or [])[result.task.criterion_index]
                judge_id = _judge_id(result, criterion_report, judges)
                judgment_rows.append(
                    _judgment_row(run_id, row["item_id"], result, judge_id, model_ids.get(judge_id))
                )
        item_ids = [row["item_id"] for row in item_rows]
        with self.db.atomic():
            for begin in range(0, len(item_ids), 500):
                part = item_ids[begin : begin + 500]
                self.db.execute(
                    f"delete from judgments where run_id = ? and item_id in ({', '.join('?' * len(part))})",
                    [run_id, *part],
                )
            self.db["items"].upsert_all(item_rows, pk=("run_id", "item_id"))
            self.db["judgments"].insert_all(judgment_rows, replace=True)

    def item_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Item rows of a run, in item order."""
        return list(self.db["items"].rows_where("run_id = ?", [run_id], order_by="item_index"))

    def done_item_ids(self, run_id: str) -> set[str]:
        """Ids of the run's items graded successfully (a stored report without ``error``).

        Items that failed at run time are not done: a resumed run grades them again (their
        old judgment rows are replaced, never duplicated).
        """
        rows = self.db.execute(
            "select item_id from items where run_id = ? and report_json is not null"
            " and json_extract(report_json, '$.error') is null",
            [run_id],
        ).fetchall()
        return {row[0] for row in rows}

    def judgments(self, run_id: str) -> list[dict[str, Any]]:
        """Judgment rows of a run, ordered by item, criterion, judge and permutation."""
        return list(
            self.db["judgments"].rows_where(
                "run_id = ?",
                [run_id],
                order_by="item_id, criterion_index, judge_id, permutation_index",
            )
        )


def _item_row(run_id: str, entry: GradedItem, index: int) -> dict[str, Any]:
    report = entry.report
    usage = report.token_usage
    return {
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


def _judge_id(result: JudgmentResult, report: EnsembleCriterionReport, judges: Sequence[str]) -> str:
    index = result.task.judge_index
    if index < len(judges):
        return judges[index]
    votes = report.votes or report.multi_choice_votes
    return votes[min(index, len(votes) - 1)].judge_id


def _judgment_row(
    run_id: str,
    item_id: str,
    result: JudgmentResult,
    judge_id: str,
    model_id: str | None,
) -> dict[str, Any]:
    """One judgment as a row: this judge's vote in this option order (not the aggregate)."""
    task = result.task
    row: dict[str, Any] = {
        "run_id": run_id,
        "item_id": item_id,
        "criterion_index": task.criterion_index,
        "criterion_name": task.criterion.name,
        "judge_id": judge_id,
        "model_id": model_id,
        "permutation_index": getattr(task, "permutation_index", 0),
        "shuffle_order_json": json.dumps(list(task.option_order)) if task.option_order else None,
        "verdict": None,
        "selected_index": None,
        "selected_label": None,
        "label_probabilities_json": None,
        "explanation": result.explanation,
        "explanation_truncated": int(result.explanation_truncated),
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "cached_tokens": result.usage.cached_tokens,
        "duration_ms": round(result.usage.seconds * 1000.0, 3),
        "error": result.error,
    }
    if result.error is not None or result.chosen is None:
        return row
    if task.criterion.options is None:
        vote = binary_vote(result, judge_id, 1.0)
        row["verdict"] = vote.verdict.value
    else:
        choice = choice_vote(result, judge_id, 1.0)
        row["selected_index"] = choice.selected_index
        row["selected_label"] = choice.selected_label
        vote = choice  # type: ignore[assignment]
    if vote.label_probabilities:
        row["label_probabilities_json"] = json.dumps(vote.label_probabilities)
    return row
