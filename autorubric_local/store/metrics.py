"""Stored metrics of a run: one ``metrics`` row per computation (table in :mod:`.schema`).

Columns: ``id`` (autoincrement), ``run_id``, ``computed_utc`` (ISO 8601, UTC),
``options_json`` (the options the metrics were computed with), ``metrics_json`` (the
``MetricsResult`` as JSON). The latest row of a run is its current metrics.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import sqlite_utils

from autorubric_local.store.provenance import utc_now
from autorubric_local.store.transaction import write_transaction


class MetricsTables:
    """Metrics rows (part of :class:`autorubric_local.store.Store`)."""

    db: sqlite_utils.Database

    def save_metrics(self, run_id: str, metrics_json: str, options: Mapping[str, Any]) -> int:
        """Store one computation's JSON for ``run_id`` in one transaction; return the row id."""
        with write_transaction(self.db):
            table = self.db["metrics"].insert({
                "run_id": run_id,
                "computed_utc": utc_now(),
                "options_json": json.dumps(dict(options), sort_keys=True),
                "metrics_json": metrics_json,
            })
        return int(table.last_pk)  # type: ignore[arg-type]

    def latest_metrics_json(self, run_id: str) -> str | None:
        """The JSON of the latest computation stored for ``run_id``, or ``None``."""
        rows = list(self.db["metrics"].rows_where("run_id = ?", [run_id], order_by="id desc", limit=1))
        return rows[0]["metrics_json"] if rows else None
