"""Batch evaluation: ``EvalRunner`` / ``evaluate`` with SQLite checkpoints and resume, stored
results (``load_result``, ``EvalResult.from_experiment``) and ``fill_ground_truth``. One writer per
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
    "evaluate",
    "fill_ground_truth",
    "load_manifest",
    "load_result",
]
