"""The ``metrics`` table of a run's SQLite file (migration 4 of :mod:`autorubric_local.store`).

Columns: ``id`` (autoincrement), ``run_id``, ``computed_utc`` (ISO 8601, UTC), ``options_json``
(the options ``compute_metrics`` was called with), ``metrics_json`` (the
:class:`~autorubric_local.metrics.types.MetricsResult` as JSON). Each computation is a new row;
:func:`load_metrics` reads the latest. This module imports neither scipy nor pandas, so the
store can import its migration cheaply.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import sqlite_utils

    from autorubric_local.metrics.types import MetricsResult

__all__ = ["load_metrics", "migration_4_metrics", "save_metrics"]


def migration_4_metrics(db: sqlite_utils.Database) -> None:
    """Create the ``metrics`` table (index on ``run_id``)."""
    db["metrics"].create(
        {"id": int, "run_id": str, "computed_utc": str, "options_json": str, "metrics_json": str},
        pk="id",
        not_null={"run_id", "computed_utc", "metrics_json"},
    )
    db["metrics"].create_index(["run_id"])


def save_metrics(
    db: sqlite_utils.Database, run_id: str, metrics: MetricsResult,
    options: dict[str, Any] | None = None,
) -> int:
    """Store ``metrics`` for ``run_id`` in one transaction; return the new row id.

    ``db`` comes from :func:`autorubric_local.store.open_db` (which creates the table).
    ``options`` defaults to the modes recorded in ``metrics``.
    """
    opts = options if options is not None else {
        "cannot_assess": metrics.cannot_assess_mode, "na_mode": metrics.na_mode,
        "bootstrap": metrics.bootstrap is not None,
        "per_judge": metrics.per_judge is not None,
    }
    with db.atomic():
        table = db["metrics"].insert({
            "run_id": run_id,
            "computed_utc": datetime.now(UTC).isoformat(timespec="seconds"),
            "options_json": json.dumps(opts, sort_keys=True),
            "metrics_json": metrics.model_dump_json(),
        })
    return int(table.last_pk)  # type: ignore[arg-type]


def load_metrics(db: sqlite_utils.Database, run_id: str) -> MetricsResult | None:
    """The latest metrics stored for ``run_id``, or ``None``."""
    from autorubric_local.metrics.types import MetricsResult

    rows = list(db["metrics"].rows_where("run_id = ?", [run_id], order_by="id desc", limit=1))
    return MetricsResult.model_validate_json(rows[0]["metrics_json"]) if rows else None
