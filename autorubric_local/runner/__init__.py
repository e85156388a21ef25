"""Batch evaluation: ``EvalRunner`` / ``evaluate`` with SQLite checkpoints and resume, stored
results (``load_result``, ``EvalResult.from_experiment``; ``open_graded_run`` reads one a page at a
time) and ``fill_ground_truth``. One writer per
run: a second one is refused with ``RunLockedError``."""

from autorubric_local.core.errors import RunLockedError
from autorubric_local.runner.config import DistributedConfig, EvalConfig
from autorubric_local.runner.ground_truth import fill_ground_truth
from autorubric_local.runner.results import (
    EvalResult,
    EvalTimingStats,
    ExperimentManifest,
    ItemResult,
    load_manifest,
    load_result,
)
from autorubric_local.runner.runner import (
    ChunkReport,
    EvalAbortedError,
    EvalInterruptedError,
    EvalRunner,
    evaluate,
)
from autorubric_local.runner.results import StoredGradedRun, graded_run, open_graded_run

__all__ = [
    "ChunkReport",
    "DistributedConfig",
    "EvalAbortedError",
    "EvalConfig",
    "EvalInterruptedError",
    "EvalResult",
    "EvalRunner",
    "EvalTimingStats",
    "ExperimentManifest",
    "ItemResult",
    "RunLockedError",
    "StoredGradedRun",
    "evaluate",
    "fill_ground_truth",
    "graded_run",
    "load_manifest",
    "load_result",
    "open_graded_run",
]
