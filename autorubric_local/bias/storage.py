"""SQLite storage of position-bias sweeps (migration 3 of :mod:`autorubric_local.store`).

Tables (units in column names; opened through ``store.open_db``, which applies
:func:`_migration_3`):

- ``sweeps``: ``id`` (``sweep-<utc>-<hex>``), ``name``, ``kind`` (rubric / selection),
  ``started_utc``, ``finished_utc``, ``status``, ``config_json`` (:class:`SweepSettings`),
  ``judges_json``, ``rubric_json``, ``data_path``, ``package_version``.
- ``sweep_judgments``: one row per rotation: ``sweep_id``, ``item_id``, ``item_index``,
  ``criterion_index``, ``criterion_name``, ``judge_id``, ``variant``, ``rotation``,
  ``option_order_json`` (shown position -> original index), ``chosen_position``,
  ``chosen_option``, ``probabilities_json`` (shown-position order), token counts,
  ``duration_ms``, ``error``. A failed rotation has ``error`` set and no choice.
- ``sweep_scores``: one row per (item, criterion, judge, variant) with the Grade Score fields,
  histograms and profiles as JSON, the unrelated option and the human preference.
- ``sweep_aggregates``: one row per (judge, criterion, variant): headline means and
  ``summary_json`` (:meth:`SweepAggregate.to_dict`).

This module must not import :mod:`autorubric_local.store` at import time (store imports it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sqlite_utils

from autorubric_local.provenance import package_version, timestamped_id, utc_now

if TYPE_CHECKING:
    from autorubric_local.bias.sweep import SweepCell, SweepResult

__all__ = ["SweepStore"]

_KEY = ("sweep_id", "item_id", "criterion_index", "judge_id", "variant")


def _migration_3(db: sqlite_utils.Database) -> None:
    db["sweeps"].create(
        {
            "id": str, "name": str, "kind": str, "started_utc": str, "finished_utc": str,
            "status": str, "config_json": str, "judges_json": str, "rubric_json": str,
            "data_path": str, "package_version": str,
        },
        pk="id",
        not_null={"id", "kind", "started_utc", "status"},
    )
    db["sweep_judgments"].create(
        {
            "sweep_id": str, "item_id": str, "item_index": int, "criterion_index": int,
            "criterion_name": str, "judge_id": str, "variant": str, "rotation": int,
            "option_order_json": str, "chosen_position": int, "chosen_option": int,
            "probabilities_json": str, "prompt_tokens": int, "cached_tokens": int,
            "duration_ms": float, "error": str,
        },
        pk=(*_KEY, "rotation"),
        foreign_keys=[("sweep_id", "sweeps", "id")],
    )
    db["sweep_scores"].create(
        {
            "sweep_id": str, "item_id": str, "item_index": int, "criterion_index": int,
            "criterion_name": str, "judge_id": str, "variant": str, "n_options": int,
            "n_rotations": int, "n_dropped": int, "llm_score": float, "choice_score": float,
            "grade_score": float, "expected_llm_score": float, "expected_choice_score": float,
            "expected_grade_score": float, "mode_option": int, "position_counts_json": str,
            "option_counts_json": str, "position_profile_json": str, "option_profile_json": str,
            "unrelated_index": int, "unrelated_label": str, "unrelated_chosen": int,
            "preferred": int, "agreement": float, "expected_agreement": float,
        },
        pk=_KEY,
        foreign_keys=[("sweep_id", "sweeps", "id")],
    )
    db["sweep_aggregates"].create(
        {
            "sweep_id": str, "judge_id": str, "criterion_index": int, "criterion_name": str,
            "variant": str, "n_items": int, "n_dropped": int, "llm_score": float,
            "choice_score": float, "grade_score": float, "expected_grade_score": float,
            "summary_json": str,
        },
        pk=("sweep_id", "judge_id", "criterion_index", "variant"),
        foreign_keys=[("sweep_id", "sweeps", "id")],
    )


def _judgment_rows(sweep_id: str, cell: SweepCell) -> list[dict[str, Any]]:
    rows = []
    for result in cell.results:
        order = result.task.option_order or ()
        rows.append(
            {
                "sweep_id": sweep_id, "item_id": cell.item_id, "item_index": cell.item_index,
                "criterion_index": cell.criterion_index, "criterion_name": cell.criterion_name,
                "judge_id": cell.judge_id, "variant": cell.variant.value,
                "rotation": result.task.permutation_index, "option_order_json": json.dumps(list(order)),
                "chosen_position": result.chosen,
                "chosen_option": None if result.chosen is None else order[result.chosen],
                "probabilities_json": json.dumps(list(result.probabilities)) if result.probabilities else None,
                "prompt_tokens": result.usage.prompt_tokens, "cached_tokens": result.usage.cached_tokens,
                "duration_ms": round(result.usage.seconds * 1000.0, 3), "error": result.error,
            }
        )
    return rows


def _score_row(sweep_id: str, cell: SweepCell) -> dict[str, Any]:
    s = cell.scores
    return {
        "sweep_id": sweep_id, "item_id": cell.item_id, "item_index": cell.item_index,
        "criterion_index": cell.criterion_index, "criterion_name": cell.criterion_name,
        "judge_id": cell.judge_id, "variant": cell.variant.value, "n_options": s.n_options,
        "n_rotations": s.n_rotations, "n_dropped": s.n_dropped, "llm_score": s.llm_score,
        "choice_score": s.choice_score, "grade_score": s.grade_score,
        "expected_llm_score": s.expected_llm_score, "expected_choice_score": s.expected_choice_score,
        "expected_grade_score": s.expected_grade_score, "mode_option": s.mode_option,
        "position_counts_json": json.dumps(list(s.position_counts)),
        "option_counts_json": json.dumps(list(s.option_counts)),
        "position_profile_json": json.dumps(list(s.position_profile)),
        "option_profile_json": json.dumps(list(s.option_profile)),
        "unrelated_index": cell.unrelated_index,
        "unrelated_label": None if cell.unrelated is None else cell.unrelated.label,
        "unrelated_chosen": cell.unrelated_chosen, "preferred": cell.preferred,
        "agreement": cell.agreement, "expected_agreement": cell.expected_agreement,
    }


class SweepStore:
    """Writes sweeps to a database opened with ``autorubric_local.store.open_db``."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db

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
        with self.db.atomic():
            self.db["sweeps"].insert(
                {
                    "id": sweep_id, "name": name or sweep_id, "kind": kind, "started_utc": utc_now(),
                    "finished_utc": None, "status": "running", "config_json": json.dumps(config),
                    "judges_json": json.dumps(list(judges)), "rubric_json": json.dumps(rubric),
                    "data_path": data_path, "package_version": package_version(),
                }
            )
        return sweep_id

    def record(self, sweep_id: str, result: SweepResult) -> None:
        """Write every rotation, cell score and aggregate of ``result`` in one transaction."""
        judgments = [row for cell in result.cells for row in _judgment_rows(sweep_id, cell)]
        scores = [_score_row(sweep_id, cell) for cell in result.cells]
        aggregates = [
            {
                "sweep_id": sweep_id, "judge_id": a.judge_id, "criterion_index": a.criterion_index,
                "criterion_name": a.criterion_name, "variant": a.variant.value, "n_items": a.n_items,
                "n_dropped": a.n_dropped, "llm_score": a.llm_score.mean, "choice_score": a.choice_score.mean,
                "grade_score": a.grade_score.mean, "expected_grade_score": a.expected_grade_score.mean,
                "summary_json": json.dumps(a.to_dict()),
            }
            for a in result.aggregates
        ]
        with self.db.atomic():
            self.db["sweep_judgments"].insert_all(judgments, replace=True)
            self.db["sweep_scores"].insert_all(scores, replace=True)
            self.db["sweep_aggregates"].insert_all(aggregates, replace=True)

    def finish_sweep(self, sweep_id: str, status: str = "finished") -> None:
        """Mark a sweep finished (or ``failed``) with its end time."""
        with self.db.atomic():
            self.db["sweeps"].update(sweep_id, {"finished_utc": utc_now(), "status": status})
