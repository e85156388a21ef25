"""Position-bias sweeps: writes of a sweep's rotations, cell scores and aggregates.

Tables (created by migration 3, :mod:`.schema`):

- ``sweeps``: ``id`` (``sweep-<utc>-<hex>``), ``name``, ``kind`` (rubric / selection),
  ``started_utc``, ``finished_utc``, ``status``, ``config_json``, ``judges_json``,
  ``rubric_json``, ``data_path``, ``package_version``.
- ``sweep_judgments``: one row per rotation: ``sweep_id``, ``item_id``, ``item_index``,
  ``criterion_index``, ``criterion_name``, ``judge_id``, ``variant``, ``rotation``,
  ``option_order_json`` (shown position -> original index), ``chosen_position``,
  ``chosen_option``, ``probabilities_json`` (a JSON list in *shown-position* order), token
  counts, ``duration_ms``, ``error``; from migration 7 ``label_probabilities_json`` (the same
  distribution as a JSON object keyed by original option label, in original option order, as
  ``judgments.label_probabilities_json``), ``label_logprobs_json`` (raw label log-probabilities,
  keyed the same way) and ``off_label_mass`` (NULL when unknown). A failed rotation has
  ``error`` set and no choice; rows written before migration 7 have NULL in its columns.
- ``sweep_scores``: one row per (item, criterion, judge, variant) with the Grade Score fields,
  histograms and profiles as JSON, the unrelated option and the human preference.
- ``sweep_aggregates``: one row per (judge, criterion, variant): headline means and
  ``summary_json``.

Rows come finished from :mod:`autorubric_local.bias.records`; this module knows no sweep logic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlite_utils

from autorubric_local.store.provenance import package_version, timestamped_id, utc_now
from autorubric_local.store.transaction import write_transaction


class SweepTables:
    """Sweep rows (part of :class:`autorubric_local.store.Store`)."""

    db: sqlite_utils.Database

    def start_sweep(
        self,
        *,
        name: str | None,
        kind: str,
        config: dict[str, Any],
        judges: Sequence[dict[str, Any]],
        rubric: Any,
        data_path: str | None,
    ) -> str:
        """Insert a sweep row (status ``running``) and return its id (``sweep-<utc>-<hex>``)."""
        sweep_id = timestamped_id("sweep")
        with write_transaction(self.db):
            self.db["sweeps"].insert(
                {
                    "id": sweep_id, "name": name or sweep_id, "kind": kind, "started_utc": utc_now(),
                    "finished_utc": None, "status": "running", "config_json": json.dumps(config),
                    "judges_json": json.dumps(list(judges)), "rubric_json": json.dumps(rubric),
                    "data_path": data_path, "package_version": package_version(),
                }
            )
        return sweep_id

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

    def finish_sweep(self, sweep_id: str, status: str = "finished") -> None:
        """Mark a sweep finished (or ``failed``) with its end time."""
        with write_transaction(self.db):
            self.db["sweeps"].update(sweep_id, {"finished_utc": utc_now(), "status": status})
