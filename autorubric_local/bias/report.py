"""JSON form of a sweep result (built in this one place; used by the CLI's ``--json``): of a
sweep just run (``sweep --json``) and of a stored one (``show NAME --json``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from autorubric_local.bias.aggregate import SweepAggregate
from autorubric_local.bias.sweep import SweepCell, SweepResult

__all__ = ["cell_to_dict", "stored_sweep_to_dict", "sweep_to_dict"]


def cell_to_dict(cell: SweepCell) -> dict[str, Any]:
    """One (item, criterion, judge, variant): scores, histograms, dropped rotations, preference."""
    s = cell.scores
    return {
        "item_id": cell.item_id,
        "criterion_index": cell.criterion_index,
        "criterion": cell.criterion_name,
        "judge_id": cell.judge_id,
        "variant": cell.variant.value,
        "n_options": s.n_options,
        "n_rotations": s.n_rotations,
        "n_dropped": s.n_dropped,
        "llm_score": s.llm_score,
        "choice_score": s.choice_score,
        "grade_score": s.grade_score,
        "expected_llm_score": s.expected_llm_score,
        "expected_choice_score": s.expected_choice_score,
        "expected_grade_score": s.expected_grade_score,
        "position_counts": list(s.position_counts),
        "option_counts": list(s.option_counts),
        "position_profile": list(s.position_profile),
        "mode_option": s.mode_option,
        "unrelated_option": None if cell.unrelated is None else cell.unrelated.label,
        "unrelated_chosen": cell.unrelated_chosen,
        "preferred": cell.preferred,
        "agreement": cell.agreement,
        "errors": [r.error for r in cell.results if r.error is not None],
    }


def sweep_to_dict(result: SweepResult, sweep_id: str | None = None) -> dict[str, Any]:
    """``{"sweep_id", "settings", "judges", "results": [per judge and criterion], "items": [...]}``.

    Each entry of ``results`` has ``judge_id``, ``criterion``, ``variant``, ``llm_score``,
    ``choice_score``, ``grade_score`` (means over items), their ``*_ci`` intervals, the expected
    versions, histograms and the position-bias profile (:meth:`SweepAggregate.to_dict`).
    """
    return {
        "sweep_id": sweep_id,
        "settings": result.settings.to_dict(),
        "judges": list(result.judge_ids),
        "seconds": dict(result.seconds),
        "results": [aggregate.to_dict() for aggregate in result.aggregates],
        "items": [cell_to_dict(cell) for cell in result.cells],
    }


def stored_sweep_to_dict(sweep: Mapping[str, Any], aggregates: Sequence[SweepAggregate]) -> dict[str, Any]:
    """A stored sweep (its ``sweeps`` row and aggregates) in :func:`sweep_to_dict`'s shape, less
    ``items`` and ``seconds`` (the per-item cells are in ``sweep_scores``), with its ``name``,
    ``kind``, ``status``, ``started_utc`` and ``finished_utc``; ``judges`` are the judge ids.
    """
    return {
        "sweep_id": sweep["id"],
        "name": sweep["name"],
        "kind": sweep["kind"],
        "status": sweep["status"],
        "started_utc": sweep["started_utc"],
        "finished_utc": sweep["finished_utc"],
        "settings": json.loads(sweep["config_json"] or "{}"),
        "judges": [judge["judge_id"] for judge in json.loads(sweep["judges_json"] or "[]")],
        "results": [aggregate.to_dict() for aggregate in aggregates],
    }
