"""Results of an evaluation run: per-item results, timing statistics, the run's totals.

Spec: README ``001_732b54dc4a0c7747.txt``, "Batch Evaluation with EvalRunner" ("EvalResult
Fields", "Timing Statistics"). Extensions: ``judgments_per_second`` and p50 latency in
:class:`EvalTimingStats`; ``total_judgments``, ``resumed_items`` and ``status`` in
:class:`EvalResult`. Rates are per wall-clock second of the run, summed over the sessions of a
resumed run; per-item durations are the engine's own time (its judgments' seconds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorubric_local.dataset import DataItem
from autorubric_local.reports import EnsembleEvaluationReport, TokenUsage

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.dataset import RubricDataset


@dataclass(frozen=True)
class ItemResult:
    """The result of grading one dataset item.

    Attributes
    ----------
    item_idx : int
        Index of the item in the dataset.
    item : DataItem
    report : EnsembleEvaluationReport
        The item's report; a failed item has ``report.score is None`` and ``report.error`` set.
    duration_seconds : float
        The item's share of engine time: the sum of its judgments' engine seconds.
    item_id : str
        The item's id (``DataItem.id``, or ``"item-<idx>"``).
    """

    item_idx: int
    item: DataItem
    report: EnsembleEvaluationReport
    duration_seconds: float
    item_id: str = ""

    @property
    def error(self) -> str | None:
        """The item's error message, or None when it was graded."""
        return self.report.error


@dataclass(frozen=True)
class EvalTimingStats:
    """Timing of a run (seconds; rates per wall-clock second of the run)."""

    total_duration_seconds: float
    mean_item_duration_seconds: float
    min_item_duration_seconds: float
    max_item_duration_seconds: float
    p50_item_duration_seconds: float
    p95_item_duration_seconds: float
    items_per_second: float
    judgments_per_second: float


@dataclass
class EvalResult:
    """Everything a run produced (spec: "EvalResult Fields").

    ``errors`` lists ``(item_idx, error_message)`` of the failed items.
    """

    item_results: list[ItemResult]
    total_items: int
    successful_items: int
    failed_items: int
    total_token_usage: TokenUsage | None
    total_completion_cost: float | None
    timing_stats: EvalTimingStats
    started_at: datetime
    completed_at: datetime
    errors: list[tuple[int, str]] = field(default_factory=list)
    experiment_name: str | None = None
    run_id: str | None = None
    db_path: str | None = None
    total_judgments: int = 0
    resumed_items: int = 0
    status: str | None = None
    grader_settings: dict[str, Any] | None = None
    """The grader's description as stored with the run (``CriterionGrader.describe()`` plus its
    scoring settings ``normalize``, ``cannot_assess_config``, ``length_penalty``); metrics
    score the ground truth with the same scoring settings."""

    @classmethod
    def from_experiment(cls, path: str | Path, run: str | None = None) -> EvalResult:
        """Load a stored run: ``path`` is an experiment folder (``<dir>/<name>``, holding
        ``results.sqlite``) or a database file; ``run`` a run name or id (default: the latest).

        Raises
        ------
        InputError
            No such database or run.
        """
        from autorubric_local.runner.load import load_result

        return load_result(path, run)[0]

    def compute_metrics(self, dataset: RubricDataset, **kwargs: Any) -> Any:
        """Agreement with the dataset's ground truth: :func:`autorubric_local.metrics.compute_metrics`."""
        from autorubric_local.metrics import compute_metrics

        return compute_metrics(self, dataset, **kwargs)
