"""Position-bias sweeps: writes of a sweep's rotations, cell scores and aggregates, and its lease.

Tables (created by migration 3, :mod:`.schema`):

- ``sweeps``: ``id`` (``sweep-<utc>-<hex>``), ``name``, ``kind`` (rubric / selection),
  ``started_utc``, ``finished_utc``, ``status`` (``running``, ``finished``, ``failed``,
  ``interrupted``), ``config_json``, ``judges_json``, ``rubric_json``, ``data_path``,
  ``package_version``; from migration 12 ``content_hash``, ``plan_json``, ``total_items`` and
  ``wall_seconds`` (a resumable sweep, :mod:`autorubric_local.bias.stored`).
- ``sweep_judgments``: one row per rotation: ``sweep_id``, ``item_id``, ``item_index``,
  ``criterion_index``, ``criterion_name``, ``judge_id``, ``variant``, ``rotation``,
  ``option_order_json`` (shown position -> original index), ``chosen_position``,
  ``chosen_option``, ``probabilities_json`` (a JSON list in *shown-position* order), token
  counts, ``duration_ms``, ``error``; from migration 7 ``label_probabilities_json`` (the same
  distribution as a JSON object keyed by original option label, in original option order, as
  ``judgments.label_probabilities_json``), ``label_logprobs_json`` (raw label log-probabilities,
  keyed the same way) and ``off_label_mass`` (NULL when unknown). A failed rotation has
  ``error`` set (category-prefixed, e.g. ``infrastructure: ...``) and no choice; rows written
  before migration 7 have NULL in its columns.
- ``sweep_scores``: one row per (item, criterion, judge, variant) with the Grade Score fields,
  histograms and profiles as JSON, the unrelated option and the human preference.
- ``sweep_aggregates``: one row per (judge, criterion, variant): headline means and
  ``summary_json``.
- ``sweep_leases`` (migration 12): the writer of a sweep, with the rules of ``run_leases``
  (:mod:`.leases`): one writer per sweep; a stale lease (old heartbeat, or a holder on this
  host whose process has ended) may be taken over.

Rows come finished from :mod:`autorubric_local.bias.records`; this module knows no sweep logic.
Every write is one ``BEGIN IMMEDIATE`` transaction (:func:`~.transaction.write_transaction`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlite_utils

from autorubric_local.core.errors import RunLockedError
from autorubric_local.store.leases import (
    DEFAULT_LEASE_TIMEOUT_SECONDS,
    SWEEP_LEASES,
    LeaseHolder,
    LeaseOwner,
    Takeover,
)
from autorubric_local.store.jobs import JOB_STATUSES, SWEEPS, JobRows
from autorubric_local.store.provenance import package_version, timestamped_id, utc_now
from autorubric_local.store.transaction import write_transaction

SWEEP_STATUSES = JOB_STATUSES
"""Values of ``sweeps.status``."""


class SweepTables(JobRows):
    """Sweep rows and sweep leases (part of :class:`autorubric_local.store.Store`)."""

    db: sqlite_utils.Database

    # ---------------------------------------------------------------------------- sweeps

    def start_sweep(
        self,
        *,
        name: str | None,
        kind: str,
        config: dict[str, Any],
        judges: Sequence[dict[str, Any]],
        rubric: Any,
        data_path: str | None,
        content_hash: str | None = None,
        plan: dict[str, Any] | None = None,
        total_items: int | None = None,
        lease: LeaseOwner | None = None,
        unique_name: bool = False,
    ) -> str:
        """Insert a sweep row (status ``running``) and return its id (``sweep-<utc>-<hex>``).

        ``lease`` takes the new sweep's lease in the same transaction.

        Raises
        ------
        RunLockedError
            ``unique_name`` and a sweep named ``name`` exists (another writer started it since
            the caller looked).
        """
        sweep_id = timestamped_id("sweep")
        with write_transaction(self.db):
            if unique_name and name is not None and self.find_sweep(name) is not None:
                raise RunLockedError(f"sweep {name!r} was started by another process while this one was opening it; "
                                     "run again to resume it")
            self.db["sweeps"].insert(
                {
                    "id": sweep_id, "name": name or sweep_id, "kind": kind, "started_utc": utc_now(),
                    "finished_utc": None, "status": "running", "config_json": json.dumps(config),
                    "judges_json": json.dumps(list(judges)), "rubric_json": json.dumps(rubric),
                    "data_path": data_path, "package_version": package_version(),
                    "content_hash": content_hash, "plan_json": None if plan is None else json.dumps(plan),
                    "total_items": total_items, "wall_seconds": 0.0,
                }
            )
            if lease is not None:
                SWEEP_LEASES.write(self.db, sweep_id, lease)
        return sweep_id

    def find_sweep(self, sweep: str) -> dict[str, Any] | None:
        """The sweep whose id or name is ``sweep`` (the latest of that name), or None."""
        return self._find_job(SWEEPS, sweep)

    def sweep_names(self) -> list[str]:
        """Names of the sweeps (comparisons included) in the database, oldest first."""
        if not self.db["sweeps"].exists():
            return []
        return [row["name"] for row in self.db["sweeps"].rows_where(order_by="started_utc, rowid")]

    def sweep_summaries(self) -> list[dict[str, Any]]:
        """One row per sweep (comparisons included), newest first, as ``runs`` lists them.

        Returns
        -------
        list of dict
            ``sweep_id``, ``sweep_name``, ``kind`` (rubric / selection / comparison), ``status``,
            ``started_utc``, ``finished_utc``, ``total_items`` (None before migration 12),
            ``items_done`` (items with results of every judge), ``rotations`` and
            ``rotations_failed`` (stored rotation rows, and those with an error),
            ``wall_seconds``, ``judges_json``, ``config_json`` and ``grade_scores`` (the
            ``base`` variant's ``sweep_aggregates``: ``judge_id``, ``criterion``, ``n_items``,
            ``grade_score``; empty until the sweep has finished).
        """
        if not self.db["sweeps"].exists():
            return []
        rows = []
        for sweep in self.db["sweeps"].rows_where(order_by="started_utc desc, rowid desc"):
            sweep_id = sweep["id"]
            judges = len(json.loads(sweep["judges_json"] or "[]"))
            done = self.db.execute(
                "select count(*) from (select item_id from sweep_scores where sweep_id = ? group by item_id "
                "having count(distinct judge_id) >= ?)", [sweep_id, max(judges, 1)]).fetchone()[0]
            rotations, failed = self.db.execute(
                "select count(*), count(error) from sweep_judgments where sweep_id = ?", [sweep_id]).fetchone()
            scores = [
                {"judge_id": r["judge_id"], "criterion": r["criterion_name"], "n_items": r["n_items"],
                 "grade_score": r["grade_score"]}
                for r in self.db["sweep_aggregates"].rows_where("sweep_id = ? and variant = 'base'", [sweep_id],
                                                               order_by="rowid")
            ]
            rows.append({
                "sweep_id": sweep_id, "sweep_name": sweep["name"], "kind": sweep["kind"], "status": sweep["status"],
                "started_utc": sweep["started_utc"], "finished_utc": sweep["finished_utc"],
                "total_items": sweep.get("total_items"), "items_done": done, "rotations": rotations,
                "rotations_failed": failed, "wall_seconds": sweep.get("wall_seconds"),
                "judges_json": sweep["judges_json"], "config_json": sweep["config_json"], "grade_scores": scores,
            })
        return rows

    def sweep_aggregates(self, sweep_id: str) -> list[dict[str, Any]]:
        """The ``sweep_aggregates`` rows of a sweep, in the order the sweep wrote them (by judge
        as the sweep lists its judges, criterion, then ``base`` before ``unrelated``)."""
        return list(self.db["sweep_aggregates"].rows_where("sweep_id = ?", [sweep_id], order_by="rowid"))

    def reopen_sweep(self, sweep_id: str, judges: Sequence[dict[str, Any]]) -> None:
        """Mark a resumed sweep ``running`` again (its end time cleared, its judges refreshed)."""
        with write_transaction(self.db):
            self.db["sweeps"].update(sweep_id, {"status": "running", "finished_utc": None,
                                                "judges_json": json.dumps(list(judges))})

    def record_sweep(
        self,
        sweep_id: str,
        judgments: Sequence[dict[str, Any]],
        scores: Sequence[dict[str, Any]],
        aggregates: Sequence[dict[str, Any]],
    ) -> None:
        """Write rotation, cell-score and aggregate rows (without ``sweep_id``) in one transaction."""
        with write_transaction(self.db):
            for table, rows in (("sweep_judgments", judgments), ("sweep_scores", scores),
                                ("sweep_aggregates", aggregates)):
                self.db[table].insert_all([{"sweep_id": sweep_id, **row} for row in rows], replace=True)

    def record_sweep_chunk(
        self,
        sweep_id: str,
        judgments: Sequence[dict[str, Any]],
        scores: Sequence[dict[str, Any]],
        *,
        lease: LeaseOwner | None = None,
    ) -> None:
        """Write one chunk's rotation and cell-score rows in one transaction.

        Every (item, judge) of the chunk loses the rows it had first, so a re-swept item never
        keeps stale rotations. With ``lease``, the same transaction renews that writer's
        heartbeat, and writes nothing if the writer no longer holds the sweep's lease.

        Raises
        ------
        RunLockedError
            ``lease`` was given and another writer has taken the sweep's lease over.
        """
        pairs = sorted({(row["item_id"], row["judge_id"]) for row in judgments})
        with write_transaction(self.db):
            if lease is not None and not SWEEP_LEASES.touch(self.db, sweep_id, lease):
                raise RunLockedError(_lost_message(sweep_id, lease))
            for table in ("sweep_judgments", "sweep_scores"):
                for item_id, judge_id in pairs:
                    self.db.execute(f"delete from {table} where sweep_id = ? and item_id = ? and judge_id = ?",
                                    [sweep_id, item_id, judge_id])
            self.db["sweep_judgments"].insert_all([{"sweep_id": sweep_id, **row} for row in judgments])
            self.db["sweep_scores"].insert_all([{"sweep_id": sweep_id, **row} for row in scores])

    def replace_sweep_results(
        self,
        sweep_id: str,
        scores: Sequence[dict[str, Any]],
        aggregates: Sequence[dict[str, Any]],
        *,
        lease: LeaseOwner | None = None,
    ) -> None:
        """Replace every cell-score and aggregate row of a sweep (one transaction; with ``lease``,
        as :meth:`record_sweep_chunk`).

        Raises
        ------
        RunLockedError
            ``lease`` was given and another writer has taken the sweep's lease over.
        """
        with write_transaction(self.db):
            if lease is not None and not SWEEP_LEASES.touch(self.db, sweep_id, lease):
                raise RunLockedError(_lost_message(sweep_id, lease))
            for table, rows in (("sweep_scores", scores), ("sweep_aggregates", aggregates)):
                self.db.execute(f"delete from {table} where sweep_id = ?", [sweep_id])
                self.db[table].insert_all([{"sweep_id": sweep_id, **row} for row in rows])

    def sweep_judgments(self, sweep_id: str, judge_id: str | None = None) -> list[dict[str, Any]]:
        """Rotation rows of a sweep (of one judge), by item index, criterion, variant and rotation."""
        where, args = ("sweep_id = ?", [sweep_id]) if judge_id is None else (
            "sweep_id = ? and judge_id = ?", [sweep_id, judge_id])
        return list(self.db["sweep_judgments"].rows_where(
            where, args, order_by="judge_id, item_index, criterion_index, variant, rotation"))

    def finish_sweep(
        self, sweep_id: str, status: str = "finished", *, wall_seconds: float = 0.0, lease: LeaseOwner | None = None
    ) -> bool:
        """Mark a sweep ``finished`` (or ``failed`` / ``interrupted``) with its end time.

        ``wall_seconds`` (this session's) is added to the sweep's total. With ``lease``, the
        writer's lease is released in the same transaction; a writer whose lease was taken over
        leaves the sweep to its new holder (nothing is written). Returns whether it was marked.

        Raises
        ------
        InputError
            If ``status`` is not one of :data:`SWEEP_STATUSES`.
        """
        return self._finish_job(SWEEPS, sweep_id, status, wall_seconds, lease)

    # ---------------------------------------------------------------------------- leases

    def acquire_sweep_lease(
        self, sweep_id: str, owner: LeaseOwner, *, timeout_seconds: float = DEFAULT_LEASE_TIMEOUT_SECONDS
    ) -> Takeover | None:
        """Take the lease of ``sweep_id`` for ``owner`` (compare-and-set under the write lock),
        as :meth:`~.runs.RunTables.acquire_run_lease` does for a run.

        Raises
        ------
        RunLockedError
            Another writer holds a live lease; names the sweep, its pid, host and last heartbeat.
        """
        def refusal(holder: LeaseHolder) -> RunLockedError:
            sweep = self.find_sweep(sweep_id) or {"name": sweep_id}
            return RunLockedError(
                f"sweep {sweep['name']!r} ({sweep_id}) is being written by another process: "
                f"{holder.describe()}. Wait for it to finish, or sweep under another name (--run); its "
                f"lease is taken over once its heartbeat is older than {timeout_seconds:g} s or its "
                "process has ended"
            )

        return self._take_job_lease(SWEEPS, sweep_id, owner, timeout_seconds, refusal)

    def renew_sweep_lease(self, sweep_id: str, owner: LeaseOwner) -> bool:
        """Set the heartbeat of ``owner``'s lease to now; ``False`` if ``owner`` no longer holds it."""
        return self._renew_job_lease(SWEEPS, sweep_id, owner)

    def release_sweep_lease(self, sweep_id: str, owner: LeaseOwner) -> bool:
        """Give back ``owner``'s lease of ``sweep_id``; ``False`` if it did not hold it."""
        return self._release_job_lease(SWEEPS, sweep_id, owner)

    def sweep_lease_holder(self, sweep_id: str) -> LeaseHolder | None:
        """The current lease of ``sweep_id`` (live or stale), or ``None``."""
        return SWEEP_LEASES.holder(self.db, sweep_id)

def _lost_message(sweep_id: str, lease: LeaseOwner) -> str:
    return (f"sweep {sweep_id}: this writer (pid {lease.pid} on host {lease.host}) lost the sweep's lease to another "
            "process, most likely after missing heartbeats for longer than the lease timeout; nothing was committed")
