"""Threshold calibrations of a run: one ``threshold_calibrations`` row per fit (table in :mod:`.schema`).

Columns: ``id`` (autoincrement), ``run_id``, ``fitted_utc`` (ISO 8601, UTC), ``method``,
``settings_json``, ``train_item_ids_json``, ``test_item_ids_json``, ``calibration_json``
(:class:`autorubric_local.calibration.ThresholdCalibration` as JSON) and ``held_out_json``
(:class:`autorubric_local.calibration.HeldOutReport` as JSON). This module stores and reads the
JSON; it does not interpret it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlite_utils

from autorubric_local.store.provenance import utc_now
from autorubric_local.store.transaction import write_transaction


class CalibrationTables:
    """Threshold-calibration rows (part of :class:`autorubric_local.store.Store`)."""

    db: sqlite_utils.Database

    def save_threshold_calibration(
        self,
        run_id: str,
        *,
        method: str,
        settings: Mapping[str, Any],
        train_item_ids: Sequence[str],
        test_item_ids: Sequence[str],
        calibration_json: str,
        held_out_json: str | None,
    ) -> int:
        """Store one fit of ``run_id`` in one transaction; return its row id."""
        with write_transaction(self.db):
            table = self.db["threshold_calibrations"].insert({
                "run_id": run_id,
                "fitted_utc": utc_now(),
                "method": method,
                "settings_json": json.dumps(dict(settings), sort_keys=True),
                "train_item_ids_json": json.dumps(list(train_item_ids)),
                "test_item_ids_json": json.dumps(list(test_item_ids)),
                "calibration_json": calibration_json,
                "held_out_json": held_out_json,
            })
        return int(table.last_pk)  # type: ignore[arg-type]

    def threshold_calibrations(self, run_id: str, method: str | None = None) -> list[dict[str, Any]]:
        """The run's calibration rows, newest first (only ``method``'s when given)."""
        where, args = ("run_id = ?", [run_id]) if method is None else ("run_id = ? and method = ?", [run_id, method])
        return list(self.db["threshold_calibrations"].rows_where(where, args, order_by="id desc"))
