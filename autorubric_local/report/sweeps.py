"""Position-bias sweeps stored in the report's database, with their plots.

A sweep is not tied to a run (``autorubric-local sweep`` writes its own rows), so a run's report
shows every sweep of the same database, whatever its status. Each aggregate is rebuilt from its
stored ``sweep_aggregates.summary_json`` (:meth:`SweepAggregate.to_dict`), which keeps means and
intervals but not the item count behind each estimate: ``Estimate.n`` is set to the
aggregate's ``n_items``. The plots only read means, intervals and the heat-map counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from autorubric_local.bias.aggregate import SCORE_FIELDS, Estimate, SweepAggregate
from autorubric_local.bias.cells import Variant
from autorubric_local.report.figures import sweep_figures
from autorubric_local.store import Store

__all__ = ["aggregate_from_dict", "sweep_sections"]

OPTIONAL_ESTIMATES: tuple[str, ...] = ("agreement", "expected_agreement", "mode_agreement")


def aggregate_from_dict(data: Mapping[str, Any]) -> SweepAggregate:
    """The :class:`SweepAggregate` whose :meth:`~SweepAggregate.to_dict` is ``data``.

    Raises
    ------
    KeyError, ValueError
        ``data`` lacks a field or has an unknown variant.
    """
    n = int(data["n_items"])

    def estimate(name: str) -> Estimate | None:
        if name not in data or (data[name] is None and data.get(f"{name}_ci") is None):
            return None
        low, high = data.get(f"{name}_ci") or (None, None)
        return Estimate(data[name], low, high, n if data[name] is not None else 0)

    scores = {name: estimate(name) or Estimate(None, None, None, 0) for name in SCORE_FIELDS}
    return SweepAggregate(
        judge_id=data["judge_id"],
        criterion_index=int(data["criterion_index"]),
        criterion_name=data["criterion"],
        variant=Variant(data["variant"]),
        n_items=n,
        n_rotations=int(data["n_rotations"]),
        n_dropped=int(data["n_dropped"]),
        position_histogram=tuple(data["position_histogram"]),
        option_histogram=tuple(data["option_histogram"]),
        position_profile=tuple(data["position_profile"]),
        shown_vs_chosen=tuple(tuple(row) for row in data["shown_vs_chosen"]),
        unrelated_rate=data.get("unrelated_rate"),
        **scores,  # type: ignore[arg-type]
        **{name: estimate(name) for name in OPTIONAL_ESTIMATES},  # type: ignore[arg-type]
    )


def sweep_sections(store: Store) -> list[dict[str, Any]]:
    """Every sweep of the database, oldest first: its identity, aggregate rows and figures.

    Returns
    -------
    list of dict
        ``name``, ``id``, ``kind``, ``status``, ``started_utc``, ``aggregates`` (one dict per
        judge, criterion and variant: ``judge_id``, ``criterion``, ``variant``, ``n_items``,
        ``grade_score``, ``llm_score``, ``choice_score``) and ``figures`` (``{"name", "src"}``).
    """
    db = store.db
    if not db["sweeps"].exists():
        return []
    sections = []
    for sweep in db["sweeps"].rows_where(order_by="started_utc, rowid"):
        rows = list(db["sweep_aggregates"].rows_where(
            "sweep_id = ?", [sweep["id"]], order_by="judge_id, criterion_index, variant"))
        aggregates = [aggregate_from_dict(json.loads(row["summary_json"])) for row in rows if row.get("summary_json")]
        sections.append({
            "name": sweep["name"],
            "id": sweep["id"],
            "kind": sweep["kind"],
            "status": sweep["status"],
            "started_utc": sweep["started_utc"],
            "aggregates": [
                {"judge_id": row["judge_id"], "criterion": row["criterion_name"], "variant": row["variant"],
                 "n_items": row["n_items"], "grade_score": row["grade_score"], "llm_score": row["llm_score"],
                 "choice_score": row["choice_score"]}
                for row in rows
            ],
            "figures": sweep_figures(aggregates, sweep["name"]),
        })
    return sections
