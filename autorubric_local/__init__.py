"""autorubric-local: AutoRubric's rubric grading, on local open-weights judges.

Change ``from autorubric import ...`` to ``from autorubric_local import ...`` and point
``LLMConfig(model=...)`` at a local model (a preset name, a Hugging Face folder or a GGUF file).
"""

from types import ModuleType as _ModuleType

from autorubric_local.core.errors import (
    AutorubricError,
    EngineError,
    InputError,
    ModelIntegrityError,
    ModelNotFoundError,
)
from autorubric_local.core.grading_errors import ErrorCategory, classify_grading_error
from autorubric_local.core.penalty import (
    CountFn,
    LengthPenalty,
    PenaltyType,
    ThinkingOutputDict,
    ToGradeInput,
    compute_length_penalty,
    normalize_to_grade_input,
    parse_thinking_output,
    word_count,
)
from autorubric_local.core.reports import (
    CriterionReport,
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    EvaluationReport,
    JudgeVote,
    MultiChoiceJudgeVote,
    TokenUsage,
)
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import (
    AggregatedMultiChoiceVerdict,
    AggregationStrategy,
    CannotAssessConfig,
    CannotAssessStrategy,
    Criterion,
    CriterionJudgment,
    CriterionOption,
    CriterionVerdict,
    LLMCalls,
    MultiChoiceJudgment,
    MultiChoiceVerdict,
    NominalAggregation,
    OrdinalAggregation,
    ScaleType,
)
from autorubric_local.core.usage import (
    aggregate_completion_cost,
    aggregate_evaluation_usage,
    aggregate_token_usage,
)
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.engine import Engine, ScriptedEngine
from autorubric_local.graders import CriterionGrader, Grader, JudgeSpec
from autorubric_local.graders.few_shot import FewShotConfig, FewShotExample
from autorubric_local.graders.panel_file import JudgesFile, load_judges_file
from autorubric_local.judges.config import (
    LLMConfig,
    ThinkingLevel,
    ThinkingLevelLiteral,
    ThinkingParam,
)

debug: bool = False
"""AutoRubric's ``debug`` flag: set ``autorubric_local.debug = True`` to print every prompt to
standard error just before it goes to a judge (:mod:`autorubric_local.core.debug`)."""

# Runner, metrics, position-bias, calibration and indeterminacy names load on first use (PEP 562): ``import
# autorubric_local`` stays light, and scipy/scikit-learn load only when metrics are computed.
_LAZY: dict[str, str] = {
    **{
        name: "autorubric_local.runner"
        for name in (
            "EvalAbortedError", "EvalConfig", "EvalInterruptedError", "EvalResult", "EvalRunner",
            "EvalTimingStats", "ExperimentManifest", "ItemResult", "RunLockedError", "evaluate", "fill_ground_truth",
            "load_manifest", "load_result",
        )
    },
    **{
        name: "autorubric_local.metrics"
        for name in (
            "BiasResult", "BootstrapResult", "BootstrapResults", "CalibrationResult", "CannotAssessMode",
            "ConfidenceInterval", "CorrelationResult", "CriterionMetrics", "DistributionResult",
            "EMDResult", "InterJudgeCriterion", "InterJudgeResult", "JudgeMetrics", "KSTestResult",
            "MetricsResult", "NAMode", "OptionMetrics", "ReliabilityBin", "compute_metrics",
            "earth_movers_distance", "extract_verdicts_from_report", "filter_cannot_assess",
            "fleiss_kappa", "ks_test", "load_metrics", "save_metrics", "score_distribution",
            "systematic_bias", "verdict_to_binary", "verdict_to_string", "wasserstein_distance",
        )
    },
    **{
        name: "autorubric_local.bias"
        for name in (
            "GradeScores", "RotationOutcome", "SelectionTask", "SweepAggregate", "SweepCell",
            "SweepKind", "SweepResult", "SweepSettings", "Variant", "grade_scores",
            "load_selection_tasks", "run_sweep",
        )
    },
    **{
        name: "autorubric_local.calibration"
        for name in (
            "ThresholdCalibration", "HeldOutReport", "apply_calibration", "calibrate_run", "evaluate_held_out",
            "fit_thresholds", "load_calibration", "save_calibration", "split_run",
        )
    },
    **{name: "autorubric_local.client" for name in ("GenerateResult", "LLMClient", "ThinkingConfig", "generate")},
    **{
        name: "autorubric_local.indeterminacy"
        for name in (
            "IndeterminacyReport", "IndeterminacySettings", "analyse_runs", "maybe_rubric",
        )
    },
    **{
        name: "autorubric_local.cascades"
        for name in (
            "EscalationCurve", "EscalationPoint", "calibrate_escalation", "escalation_stats", "replay_escalation",
        )
    },
    "EscalationConfig": "autorubric_local.graders.escalation",
    "DecisionModelConfig": "autorubric_local.judges.decision",
    **{name: "autorubric_local.analyses" for name in ("RunAnalyses", "open_run")},
    **{
        name: "autorubric_local.meta"
        for name in (
            "ImprovementConfig", "ImprovementResult", "ImprovementRunner", "IssueDetail", "IterationResult",
            "evaluate_rubric_in_context", "evaluate_rubric_standalone", "get_in_context_meta_rubric",
            "get_standalone_meta_rubric", "improve_rubric",
        )
    },
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'autorubric_local' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


# One list of public names: what this module binds (the imports above and ``debug``; not the
# subpackages those imports bind) and the lazy table.
__all__ = sorted(
    [name for name, value in globals().items() if not name.startswith("_") and not isinstance(value, _ModuleType)]
    + list(_LAZY)
)
