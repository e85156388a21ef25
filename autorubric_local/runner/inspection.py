"""A stored run's results as flat rows, for ``show``, ``export`` and reports.

Three shapes, each a list of plain dicts (JSON-able values):

- :func:`criterion_rows`: one row per item and criterion (the ``criterion_results`` view of
  migration 11: final verdict, ``probability`` of that verdict, ``passed``, ``contribution``,
  explanation, error). For runs recorded before migration 11 the same rows are rebuilt from
  the items' stored reports with the run's own scoring settings, so every run can be shown.
- :func:`judgment_rows`: one row per judgment (the ``judge_votes`` view): each judge's vote in
  each option order, its label probabilities, explanation and error.
- :func:`item_rows`: one row per item: score, error, the submission, and per criterion its
  verdict and contribution as columns ``verdict[<criterion>]`` / ``contribution[<criterion>]``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.types import CannotAssessConfig
from autorubric_local.graders.result_records import criterion_result_records
from autorubric_local.store import Store

__all__ = ["criterion_rows", "item_rows", "judgment_rows"]


def criterion_rows(store: Store, run: Mapping[str, Any], item_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per item and criterion of ``run`` (a ``runs`` row), by item index and criterion;
    only ``item_ids`` when given. Items still pending have none.

    Columns: those of the ``criterion_results`` view (:data:`autorubric_local.store.schema.VIEWS`)
    plus ``probability``, the final verdict's share of the ensemble's label distribution (None
    when the verdict is missing or the judge gave no distribution).
    """
    rows = store.criterion_results(run["id"])
    if not rows and store.db.execute(
        "select count(*) from items where run_id = ? and report_json is not null", [run["id"]]
    ).fetchone()[0]:
        rows = _rebuilt_rows(store, run)
    if item_ids is not None:
        wanted = set(item_ids)
        rows = [row for row in rows if row["item_id"] in wanted]
    for row in rows:
        probabilities = json.loads(row.get("label_probabilities_json") or "{}")
        row["probability"] = probabilities.get(row["verdict"]) if row["verdict"] is not None else None
    return rows


_RECORD_COLUMNS = ("item_id", "criterion_index", "criterion_name", "requirement", "weight", "scale_type")
_SCORE_COLUMNS = ("selected_index", "score_value", "is_na", "passed", "contribution", "agreement",
                  "label_probabilities_json")


def _rebuilt_rows(store: Store, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``criterion_results`` rows of a run recorded before migration 11, from its reports."""
    grader = json.loads(run.get("grader_json") or "{}")
    cannot_assess = CannotAssessConfig.model_validate(grader.get("cannot_assess_config") or {})
    rows: list[dict[str, Any]] = []
    for item in store.item_rows(run["id"]):
        if item.get("report_json") is None:
            continue
        report = EnsembleEvaluationReport.model_validate_json(item["report_json"])
        for record in criterion_result_records([report], [item["item_id"]], cannot_assess):
            rows.append({
                "run_name": run["name"], "run_id": run["id"], "item_index": item["item_index"],
                **{column: record[column] for column in _RECORD_COLUMNS},
                "verdict": record["verdict"] if record["verdict"] is not None else record["selected_label"],
                **{column: record[column] for column in _SCORE_COLUMNS},
                "explanation": record["final_reason"], "error": record["error"], "item_score": item["score"],
            })
    return rows


def judgment_rows(store: Store, run_id: str, item_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per judgment of the run (the ``judge_votes`` view), by item index, criterion,
    judge and option order; only ``item_ids`` when given."""
    rows = list(store.db.query(
        "select * from judge_votes where run_id = ? order by item_index, criterion_index, judge_id, permutation_index",
        [run_id],
    ))
    if item_ids is not None:
        wanted = set(item_ids)
        rows = [row for row in rows if row["item_id"] in wanted]
    return rows


def item_rows(store: Store, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per graded item of ``run``: ``run_name``, ``item_index``, ``item_id``, ``score``,
    ``raw_score``, ``cannot_assess_count``, ``error``, ``submission``, then per criterion
    ``verdict[<name>]``, ``passed[<name>]`` and ``contribution[<name>]`` (a criterion without a
    name is ``criterion <n>``, 1-based). Pending items are left out."""
    by_item: dict[str, list[dict[str, Any]]] = {}
    for row in criterion_rows(store, run):
        by_item.setdefault(row["item_id"], []).append(row)
    out = []
    for item in store.item_rows(run["id"]):
        if item.get("report_json") is None:
            continue
        row = {
            "run_name": run["name"], "item_index": item["item_index"], "item_id": item["item_id"],
            "score": item["score"], "raw_score": item["raw_score"],
            "cannot_assess_count": item["cannot_assess_count"], "error": item["error"],
            "submission": item["submission"],
        }
        for criterion in by_item.get(item["item_id"], []):
            name = criterion["criterion_name"] or f"criterion {criterion['criterion_index'] + 1}"
            row[f"verdict[{name}]"] = criterion["verdict"]
            row[f"passed[{name}]"] = criterion["passed"]
            row[f"contribution[{name}]"] = criterion["contribution"]
        out.append(row)
    return out
