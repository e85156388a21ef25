"""Agreement metrics: judge vs humans, judge vs judge, calibration (AutoRubric's README, \"Evaluation Metrics\").

Entry point: :func:`compute_metrics` (also ``EvalResult.compute_metrics``), returning a
:class:`MetricsResult`. Modules:

- :mod:`.types`: the parts of a result (abstention and coverage statistics included) and the
  CANNOT_ASSESS / NA modes;
- :mod:`.result`: :class:`MetricsResult`, its summary text, DataFrame and JSON, and its
  storage in a run's database (``save_metrics`` / ``load_metrics``, through the store);
- :mod:`.extract`: aligning judge verdicts with ground truth (alignment rules live there), and
  AutoRubric's helpers over criteria and reports (``classify_criterion``,
  ``resolve_ground_truth``, ``filter_na_multi_choice``...);
- :mod:`.agreement`: per-criterion metrics (binary, ordinal, nominal);
- :mod:`.typed`: AutoRubric's per-type shapes (``BinaryCriterionMetrics``,
  ``OrdinalCriterionMetrics``, ``NominalCriterionMetrics``, ``ConfusionMatrix``...) as views
  of :class:`CriterionMetrics`, and its abstention, coverage and pooled diagnostics;
- :mod:`.scores`: score-level errors and correlations;
- :mod:`.distribution`: EMD / Wasserstein, KS test, score distribution, systematic bias;
- :mod:`.calibration`: Brier, log loss, ECE, reliability bins, AUROC of P(MET);
- :mod:`.interjudge`: Krippendorff's alpha and Fleiss' kappa among ensemble judges;
- :mod:`.bootstrap`: percentile bootstrap over items;
- :mod:`.plots`: PNG plots.

Names are resolved lazily (PEP 562), so importing this package does not import scipy or
scikit-learn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "compute_metrics": "compute",
    "BiasResult": "types",
    "BootstrapResult": "types",
    "BootstrapResults": "types",
    "CalibrationResult": "types",
    "CannotAssessMode": "types",
    "ConfidenceInterval": "types",
    "CorrelationResult": "types",
    "CriterionMetrics": "types",
    "DistributionResult": "types",
    "EMDResult": "types",
    "InterJudgeCriterion": "types",
    "InterJudgeResult": "types",
    "JudgeMetrics": "types",
    "KSTestResult": "types",
    "MetricsResult": "result",
    "NAMode": "types",
    "OptionMetrics": "types",
    "ReliabilityBin": "types",
    "earth_movers_distance": "distribution",
    "wasserstein_distance": "distribution",
    "ks_test": "distribution",
    "score_distribution": "distribution",
    "systematic_bias": "distribution",
    "calibration": "calibration",
    "expected_calibration_error": "calibration",
    "fleiss_kappa": "interjudge",
    "inter_judge_agreement": "interjudge",
    "extract_verdicts_from_report": "extract",
    "filter_cannot_assess": "extract",
    "verdict_to_binary": "extract",
    "verdict_to_string": "extract",
    "save_metrics": "result",
    "load_metrics": "result",
    "write_plots": "plots",
    "CriterionType": "types",
    "classify_criteria": "extract",
    "classify_criterion": "extract",
    "extract_all_verdicts_from_report": "extract",
    "filter_na_multi_choice": "extract",
    "get_option_value": "extract",
    "is_na_option": "extract",
    "resolve_ground_truth": "extract",
    "AbstentionStats": "typed",
    "BinaryCriterionMetrics": "typed",
    "CannotAssessStats": "types",
    "ConfusionMatrix": "types",
    "CoverageStats": "types",
    "CriterionMetricsUnion": "typed",
    "NAStats": "types",
    "NominalCriterionMetrics": "typed",
    "OrdinalCriterionMetrics": "typed",
    "PooledScaleMetrics": "types",
    "abstention_stats": "typed",
    "as_typed": "typed",
    "pooled_scale_metrics": "typed",
    "typed_per_criterion": "typed",
}

__all__ = sorted(_EXPORTS)  # one list of the public names: _EXPORTS (the TYPE_CHECKING block mirrors it, tested)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.metrics.calibration import (
        calibration,
        expected_calibration_error,
    )
    from autorubric_local.metrics.compute import compute_metrics
    from autorubric_local.metrics.distribution import (
        earth_movers_distance,
        ks_test,
        score_distribution,
        systematic_bias,
        wasserstein_distance,
    )
    from autorubric_local.metrics.extract import (
        classify_criteria,
        classify_criterion,
        extract_all_verdicts_from_report,
        extract_verdicts_from_report,
        filter_cannot_assess,
        filter_na_multi_choice,
        get_option_value,
        is_na_option,
        resolve_ground_truth,
        verdict_to_binary,
        verdict_to_string,
    )
    from autorubric_local.metrics.interjudge import fleiss_kappa, inter_judge_agreement
    from autorubric_local.metrics.plots import write_plots
    from autorubric_local.metrics.result import (
        MetricsResult,
        load_metrics,
        save_metrics,
    )
    from autorubric_local.metrics.types import (
        BiasResult,
        BootstrapResult,
        BootstrapResults,
        CalibrationResult,
        CannotAssessMode,
        CannotAssessStats,
        ConfidenceInterval,
        ConfusionMatrix,
        CorrelationResult,
        CoverageStats,
        CriterionMetrics,
        CriterionType,
        DistributionResult,
        EMDResult,
        InterJudgeCriterion,
        InterJudgeResult,
        JudgeMetrics,
        KSTestResult,
        NAMode,
        NAStats,
        OptionMetrics,
        PooledScaleMetrics,
        ReliabilityBin,
    )
    from autorubric_local.metrics.typed import (
        AbstentionStats,
        BinaryCriterionMetrics,
        CriterionMetricsUnion,
        NominalCriterionMetrics,
        OrdinalCriterionMetrics,
        abstention_stats,
        as_typed,
        pooled_scale_metrics,
        typed_per_criterion,
    )
