"""Position-bias sweeps stored in the report's database, with their plots.

A sweep is not tied to a run (``autorubric-local sweep`` writes its own rows), so a run's report
shows every sweep of the same database, whatever its status. Each aggregate is rebuilt from its
stored ``sweep_aggregates.summary_json`` (:meth:`SweepAggregate.from_dict`). The plots only read
means, intervals and the heat-map counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from autorubric_local.bias.aggregate import SweepAggregate
from autorubric_local.core.errors import AutorubricError
from autorubric_local.report.figures import sweep_figures, win_rate_heatmap
from autorubric_local.store import Store

__all__ = ["aggregate_from_dict", "comparison_section", "sweep_sections"]


def aggregate_from_dict(data: Mapping[str, Any]) -> SweepAggregate:
    """The :class:`SweepAggregate` whose :meth:`~SweepAggregate.to_dict` is ``data``
    (:meth:`SweepAggregate.from_dict`, where ``show`` reads a stored sweep too).

    Raises
    ------
    KeyError, ValueError
        ``data`` lacks a field or has an unknown variant.
    """
    return SweepAggregate.from_dict(data)


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
            "comparison": comparison_section(store, sweep["id"]) if sweep["kind"] == "comparison" else None,
        })
    return sections


def comparison_section(store: Store, sweep_id: str) -> dict[str, Any]:
    """A stored comparison's rankings for the report: per judge, on the default question
    (:func:`~autorubric_local.comparisons.ranking.default_question`), the Bradley-Terry ranking
    with 90% intervals, the win-rate heat map and position consistency.

    Returns
    -------
    dict
        ``question``, ``judges`` (per judge: ``judge_id``, ``systems`` (rows of ``system``,
        ``score``, ``low``, ``high``, ``win_rate``, ``n``), ``n_prompts``, ``consistency``,
        ``consistency_low``, ``consistency_high``, ``conflict_rate``, ``primacy``, ``figure``
        (data URI), ``error`` (why there is no ranking, e.g. too few comparisons; else None)).
    """
    from autorubric_local.comparisons.judging import read_comparison
    from autorubric_local.comparisons.ranking import RUBRIC, default_question, position_bias, rank_systems

    comparison = read_comparison(store, sweep_id)
    question = default_question(comparison)
    judges = []
    for judge_id in comparison.judge_ids:
        entry: dict[str, Any] = {"judge_id": judge_id, "error": None}
        try:
            ranked = rank_systems(comparison, judge_id=judge_id, question=question, n_bootstrap=200)
            biased = question if question != RUBRIC else comparison.questions[0]["name"]
            bias = position_bias(comparison, judge_id=judge_id, question=biased, n_bootstrap=1000)
        except AutorubricError as exc:  # e.g. not yet judged, or systems not linked both ways
            entry["error"] = str(exc)
            judges.append(entry)
            continue
        entry.update(
            systems=[{"system": r.system, "score": r.score, "low": r.score_low, "high": r.score_high,
                      "win_rate": r.win_rate, "n": r.n_comparisons} for r in ranked.systems],
            n_prompts=ranked.n_prompts, bias_question=biased, consistency=bias.measures.consistency,
            consistency_low=bias.consistency_low, consistency_high=bias.consistency_high,
            conflict_rate=bias.measures.conflict_rate, primacy=bias.measures.primacy,
            figure=win_rate_heatmap([r.system for r in ranked.systems], ranked.win_matrix,
                                    f"{comparison.name}, judge {judge_id}: win rates ({question})"),
        )
        judges.append(entry)
    return {"question": question, "judges": judges}
