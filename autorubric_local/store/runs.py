"""Runs, items and judgments: writes and reads of a grading run (tables in :mod:`.schema`).

Writes take finished records (plain dicts whose keys are column names); this module knows
nothing of grading. Every write is one ``BEGIN IMMEDIATE`` transaction
(:func:`~.transaction.write_transaction`), so a crash loses at most the batch in flight and never
leaves half of one, and writers in several processes wait for each other instead of failing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlite_utils

from autorubric_local.core.errors import InputError
from autorubric_local.store.provenance import package_version, timestamped_id, utc_now
from autorubric_local.store.transaction import write_transaction

RUN_STATUSES: tuple[str, ...] = ("running", "finished", "failed", "interrupted")
"""Values of ``runs.status``."""


class RunTables:
    """Runs, their items and judgments (part of :class:`autorubric_local.store.Store`)."""

    db: sqlite_utils.Database

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
        with write_transaction(self.db):
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
        with write_transaction(self.db):
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
        with write_transaction(self.db):
            self.db["runs"].update(run_id, fields)

    def finish_run(self, run_id: str, status: str = "finished", *, wall_seconds: float = 0.0) -> None:
        """Mark a run ``finished`` (or ``failed`` / ``interrupted``) with its end time.

        ``wall_seconds`` (this session's) is added to the run's total.
        """
        if status not in RUN_STATUSES:
            raise InputError(f"status: expected one of {', '.join(RUN_STATUSES)}, got {status!r}")
        with write_transaction(self.db):
            self.db.execute(
                "update runs set finished_utc = ?, status = ?, "
                "wall_seconds = coalesce(wall_seconds, 0) + ? where id = ?",
                [utc_now(), status, wall_seconds, run_id],
            )

    # ----------------------------------------------------------------------------- items

    def record_items(
        self, run_id: str, items: Sequence[dict[str, Any]], judgments: Sequence[dict[str, Any]]
    ) -> None:
        """Write item rows and their judgment rows in one transaction.

        Rows are finished records (see :mod:`autorubric_local.graders.records`) without
        ``run_id``. Recording an item again replaces its row and every judgment it had, so a
        re-graded item never keeps stale judgments.
        """
        item_ids = [row["item_id"] for row in items]
        with write_transaction(self.db):
            for begin in range(0, len(item_ids), 500):
                part = item_ids[begin : begin + 500]
                self.db.execute(
                    f"delete from judgments where run_id = ? and item_id in ({', '.join('?' * len(part))})",
                    [run_id, *part],
                )
            self.db["items"].upsert_all([{"run_id": run_id, **row} for row in items], pk=("run_id", "item_id"))
            self.db["judgments"].insert_all([{"run_id": run_id, **row} for row in judgments], replace=True)

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

    def judgment_count(self, run_id: str) -> int:
        """Number of judgment rows of a run."""
        return int(self.db.execute("select count(*) from judgments where run_id = ?", [run_id]).fetchone()[0])
