"""Position-bias sweeps and the Grade Score (Iourovitski, "Grade Score: Quantifying
LLM Performance in Option Selection", 2024).

- :mod:`.grade_score`: LLM, Choice and Grade Scores of one rotation sweep (pure).
- :mod:`.sweep`: plan every cyclic rotation, run it in chunks of whole items per judge, score.
- :mod:`.stored`: the same sweep committed chunk by chunk to the store, resumable, one writer.
- :mod:`.checkpoint`: a sweep's plan and content hash, and whether a stored sweep may resume.
- :mod:`.aggregate`: per judge and criterion: means, bootstrap intervals, histograms.
- :mod:`.selection`: selection tasks (a prompt and candidate responses).
- :mod:`.unrelated`: seeded unrelated options ("rand option").
- :mod:`.cells`: settings, variants and per-judge cells of a sweep.
- :mod:`.records`: a sweep as the store's rows. :mod:`.plots` (matplotlib) is imported on use.
"""

from autorubric_local.bias.aggregate import (
    Estimate,
    SweepAggregate,
    aggregate_cells,
    bootstrap_mean,
)
from autorubric_local.bias.cells import SweepCell, SweepKind, SweepSettings, Variant
from autorubric_local.bias.grade_score import (
    GradeScores,
    RotationOutcome,
    grade_scores,
    harmonic_mean,
    normalized_entropy,
)
from autorubric_local.bias.selection import (
    SelectionTask,
    load_selection_tasks,
    plan_selection_tasks,
)
from autorubric_local.bias.stored import StoredSweep, SweepChunkReport, run_stored_sweep
from autorubric_local.bias.sweep import SweepResult, plan_sweep, run_sweep
from autorubric_local.bias.unrelated import (
    UnrelatedOption,
    sample_unrelated_options,
    with_unrelated_option,
)

__all__ = [
    "Estimate",
    "GradeScores",
    "RotationOutcome",
    "SelectionTask",
    "StoredSweep",
    "SweepAggregate",
    "SweepCell",
    "SweepChunkReport",
    "SweepKind",
    "SweepResult",
    "SweepSettings",
    "UnrelatedOption",
    "Variant",
    "aggregate_cells",
    "bootstrap_mean",
    "grade_scores",
    "harmonic_mean",
    "load_selection_tasks",
    "normalized_entropy",
    "plan_selection_tasks",
    "plan_sweep",
    "run_stored_sweep",
    "run_sweep",
    "sample_unrelated_options",
    "with_unrelated_option",
]
