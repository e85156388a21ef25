"""Result types of the agreement metrics (AutoRubric's README (github.com/delip/autorubric),
"Evaluation Metrics" / "MetricsResult Fields"; extensions marked below).

Every result is an immutable pydantic model, so it serialises to JSON unchanged
(:meth:`~.result.MetricsResult.to_file`) and reloads with ``MetricsResult.model_validate_json``.

Conventions
-----------
- A figure that is undefined for the data (zero denominator, a constant rater, fewer than
  two items) is ``None``, never NaN, and the reason is appended to ``warnings`` of the
  enclosing :class:`MetricsResult`.
- ``*_score``/accuracy/kappa/correlation: higher is better. ``*_error``, RMSE, MAE, Brier,
  log loss, ECE: lower is better.
- "Judge" is the system under test (the ensemble's final verdict, or one judge in
  :class:`JudgeMetrics`); "human" is the dataset's ground truth. Bias is judge minus human.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.types import CaseInsensitiveEnum
from autorubric_local.data.dataset import DataItem

__all__ = [
    "BiasResult",
    "BootstrapResult",
    "BootstrapResults",
    "CalibrationResult",
    "CannotAssessMode",
    "ConfidenceInterval",
    "CorrelationResult",
    "CriterionMetrics",
    "CriterionType",
    "DistributionResult",
    "EMDResult",
    "GradedItemResult",
    "GradedRun",
    "InterJudgeCriterion",
    "InterJudgeResult",
    "JudgeMetrics",
    "KSTestResult",
    "NAMode",
    "OptionMetrics",
    "ReliabilityBin",
    "Scale",
]

Scale = Literal["binary", "ordinal", "nominal"]
"""Kind of a criterion for metrics: binary (MET/UNMET), or a multi-choice scale."""

CriterionType = Scale
"""AutoRubric's name for :data:`Scale` (AutoRubric 1.6.1, ``autorubric.metrics.CriterionType``):
``"binary"`` (MET/UNMET), ``"ordinal"`` (ordered options, e.g. a 1-4 rating) or ``"nominal"``
(unordered categories); what :func:`~.extract.classify_criterion` returns."""


class GradedItemResult(Protocol):
    """What metrics read of one graded item (``autorubric_local.runner.ItemResult`` is one)."""

    @property
    def item_idx(self) -> int: ...
    @property
    def item_id(self) -> str: ...
    @property
    def item(self) -> DataItem: ...
    @property
    def report(self) -> EnsembleEvaluationReport: ...


class GradedRun(Protocol):
    """What metrics read of a graded run (``autorubric_local.runner.EvalResult`` is one).

    ``grader_settings`` holds the run's scoring settings (``normalize``,
    ``cannot_assess_config``); ``None`` means the defaults.
    """

    @property
    def item_results(self) -> Sequence[GradedItemResult]: ...
    @property
    def grader_settings(self) -> Mapping[str, Any] | None: ...


class CannotAssessMode(CaseInsensitiveEnum):
    """How a binary CANNOT_ASSESS (on either side of a human/judge pair) is counted.

    - ``EXCLUDE`` (default): drop the pair. The number dropped is reported per criterion
      (``CriterionMetrics.n_excluded``).
    - ``AS_CATEGORY``: CANNOT_ASSESS is a third class: it counts in accuracy, kappa and the
      3x3 confusion matrix; for precision/recall/F1 (MET positive) it is a negative.
    - ``AS_UNMET``: CANNOT_ASSESS becomes UNMET on both sides (literal UNMET, whatever the
      criterion's weight sign).

    Lookup by value ignores case: ``CannotAssessMode("EXCLUDE")``.
    """

    EXCLUDE = "exclude"
    AS_CATEGORY = "as_category"
    AS_UNMET = "as_unmet"


class NAMode(CaseInsensitiveEnum):
    """How a multi-choice NA option (or an abstain with no option) is counted.

    - ``EXCLUDE`` (default): drop the pair when either side is NA.
    - ``AS_CATEGORY``: NA is one more class for accuracy, kappa, per-option metrics and the
      confusion matrix; ordinal-only figures (weighted kappa, adjacent accuracy, rank
      correlations, RMSE/MAE) still leave NA pairs out, as NA has no position on the scale.
    - ``AS_UNMET``: NA becomes the criterion's score-minimising scored option
      (:meth:`Criterion.worst_scored_option`, the same remap scoring uses), on both sides.
    """

    EXCLUDE = "exclude"
    AS_CATEGORY = "as_category"
    AS_UNMET = "as_unmet"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ConfidenceInterval(_Frozen):
    """A two-sided interval ``[lower, upper]`` at ``confidence_level`` (in (0, 1))."""

    lower: float
    upper: float
    confidence_level: float


class CorrelationResult(_Frozen):
    """A correlation coefficient in [-1, 1] with its two-sided p-value and sample size.

    ``p_value`` is ``None`` when the library gives none (n < 3 for some tests).
    """

    coefficient: float
    p_value: float | None
    n: int


class BiasResult(_Frozen):
    """Systematic bias of judge scores relative to human scores (paired, per item).

    Attributes
    ----------
    mean_bias : float
        ``mean(judge - human)``; positive means the judge is more lenient.
    std_bias : float or None
        Sample standard deviation (ddof=1) of the differences; ``None`` when n < 2.
    ci : ConfidenceInterval or None
        Student-t interval for the mean difference; ``None`` when n < 2.
    t_statistic, p_value : float or None
        Paired t-test (``scipy.stats.ttest_rel``); ``None`` when n < 2 or all
        differences are equal (zero variance).
    effect_size : float or None
        Cohen's d_z = mean / std of the differences; ``None`` when std is 0 or undefined.
    significant : bool or None
        ``p_value < 1 - confidence_level``; ``None`` when there is no p-value.
    n : int
        Number of paired items.
    """

    mean_bias: float
    std_bias: float | None
    ci: ConfidenceInterval | None
    t_statistic: float | None
    p_value: float | None
    effect_size: float | None
    significant: bool | None
    n: int


class EMDResult(_Frozen):
    """Earth mover's (1-Wasserstein) distance between two score samples, in score units
    (0 = identical distributions; at most 1 for normalised scores)."""

    distance: float
    n_judge: int
    n_human: int


class KSTestResult(_Frozen):
    """Two-sample Kolmogorov-Smirnov test: statistic in [0, 1] and p-value."""

    statistic: float
    p_value: float
    n_judge: int
    n_human: int


class DistributionResult(_Frozen):
    """Summary of one score sample: moments, quartiles and a histogram.

    ``histogram[k]`` counts scores in ``[bin_edges[k], bin_edges[k+1])`` (the last bin is
    closed); ``std`` is the sample standard deviation (``None`` when n < 2).
    """

    n: int
    mean: float
    std: float | None
    min: float
    q25: float
    median: float
    q75: float
    max: float
    histogram: list[int]
    bin_edges: list[float]


class ReliabilityBin(_Frozen):
    """One bin of a reliability diagram: predictions with P(MET) in ``[lower, upper)``
    (the last bin is closed). ``mean_confidence``/``fraction_positive`` are ``None`` for an
    empty bin."""

    lower: float
    upper: float
    count: int
    mean_confidence: float | None
    fraction_positive: float | None


class CalibrationResult(_Frozen):
    """Extension: calibration of the judge's P(MET) against human MET/UNMET labels.

    P(MET) is ``label_probabilities["MET"] / (label_probabilities["MET"] +
    label_probabilities["UNMET"])``: the probability renormalised over the two scored
    outcomes, so the CANNOT_ASSESS mass does not count. Pairs without probabilities are
    left out.

    Attributes
    ----------
    n : int
        Number of (P(MET), human label) pairs.
    base_rate : float
        Fraction of human MET labels.
    mean_confidence : float
        Mean P(MET).
    brier_score : float
        ``mean((p - y)^2)``, in [0, 1], lower is better.
    log_loss : float
        ``-mean(y log p + (1 - y) log(1 - p))`` with p clipped to [1e-15, 1 - 1e-15].
    ece : float
        Expected calibration error over ``bins``: ``sum_b (n_b / n) |frac_pos_b - conf_b|``
        (Naeini et al., 2015; Guo et al., 2017), in [0, 1].
    auroc : float or None
        Area under the ROC curve of P(MET) for human MET; ``None`` when the human labels
        have one class only.
    bins : list of ReliabilityBin
        Equal-width bins over [0, 1].
    """

    n: int
    base_rate: float
    mean_confidence: float
    brier_score: float
    log_loss: float
    ece: float
    auroc: float | None
    bins: list[ReliabilityBin]


class OptionMetrics(_Frozen):
    """One-vs-rest precision, recall and F1 of one option (``None`` when the denominator is
    0), and its support (number of human labels with this option).

    ``label``, ``index`` (the option's position in its criterion's ``labels``, the
    confusion-matrix order), ``support_true`` (= ``support``) and ``support_pred`` (judge
    labels with this option) are AutoRubric's fields (AutoRubric 1.6.1,
    ``autorubric.metrics.OptionMetrics``); ``None`` in metrics stored before they existed.
    """

    precision: float | None
    recall: float | None
    f1: float | None
    support: int
    label: str | None = None
    index: int | None = None
    support_true: int | None = None
    support_pred: int | None = None


class CriterionMetrics(_Frozen):
    """Agreement on one criterion (pairs aligned across items by criterion key).

    Attributes
    ----------
    name : str
        The criterion key: its name, or ``"criterion <i>"`` (0-based position) when unnamed.
    index : int
        Position of the criterion in the rubric where it first occurs.
    scale : {"binary", "ordinal", "nominal"}
    support : int
        Number of (human, judge) pairs used.
    n_excluded : int
        Pairs dropped by the CANNOT_ASSESS / NA mode, or because the judgment failed.
    labels : list of str
        Class labels, the row/column order of ``confusion_matrix``.
    confusion_matrix : list of list of int, shape (n_labels, n_labels)
        Rows: human label; columns: judge label.
    accuracy : float or None
        Exact agreement, in [0, 1].
    kappa : float or None
        Cohen's kappa (unweighted), in [-1, 1].
    precision, recall, f1 : float or None
        Binary only: MET is the positive class.
    weighted_kappa : float or None
        Ordinal only: quadratic-weighted kappa over scale positions.
    adjacent_accuracy : float or None
        Ordinal only: fraction of pairs at most one scale position apart.
    spearman, kendall : CorrelationResult or None
        Ordinal only: rank correlation of option values.
    rmse, mae : float or None
        Ordinal only: errors of option values (the judge's continuous ensemble value when
        it has one).
    per_option : dict of str to OptionMetrics or None
        Nominal only: one-vs-rest metrics per option label.
    calibration : CalibrationResult or None
        Binary only (extension): see :class:`CalibrationResult`.
    mean_off_label_mass : float in [0, 1] or None
        Extension: mean off-label mass of the criterion's judgments in the compared items
        (each vote's ``off_label_mass``: the probability the judge's first decision step put
        outside the allowed labels; lower is better), over the votes where the backend reported
        it. Every judge's vote counts once (in :class:`JudgeMetrics`, that judge's only); a
        vote over several option orders holds the mean of its orders. ``None`` when no
        judgment reported it. Counted before the CANNOT_ASSESS / NA modes drop any pair.
    n_off_label : int
        Number of votes ``mean_off_label_mass`` is over.
    """

    name: str
    index: int
    scale: Scale
    support: int
    n_excluded: int = 0
    labels: list[str]
    confusion_matrix: list[list[int]]
    accuracy: float | None = None
    kappa: float | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    weighted_kappa: float | None = None
    adjacent_accuracy: float | None = None
    spearman: CorrelationResult | None = None
    kendall: CorrelationResult | None = None
    rmse: float | None = None
    mae: float | None = None
    per_option: dict[str, OptionMetrics] | None = None
    calibration: CalibrationResult | None = None
    mean_off_label_mass: float | None = None
    n_off_label: int = 0


class BootstrapResult(_Frozen):
    """Percentile bootstrap interval of one metric.

    ``estimate`` is the metric on the full data; ``std_error`` the standard deviation of the
    resampled values; ``n_valid`` how many resamples gave a defined value (the interval uses
    only those).
    """

    estimate: float | None
    ci: ConfidenceInterval
    std_error: float
    n_valid: int


class BootstrapResults(_Frozen):
    """Bootstrap intervals (items resampled with replacement) for the headline metrics.

    ``metrics`` is keyed by headline field name (``criterion_accuracy``, ``mean_kappa``,
    ``score_rmse``, ``score_spearman``, ``bias``...); ``per_criterion[name]`` by the
    criterion's metric name (``accuracy``, ``kappa``, ``weighted_kappa``...). A metric
    undefined in every resample is left out (and named in the warnings).
    """

    n_bootstrap: int
    confidence_level: float
    seed: int | None
    metrics: dict[str, BootstrapResult] = Field(default_factory=dict)
    per_criterion: dict[str, dict[str, BootstrapResult]] = Field(default_factory=dict)

    def get(self, name: str) -> BootstrapResult | None:
        """The interval of headline metric ``name``, or ``None``."""
        return self.metrics.get(name)


class JudgeMetrics(_Frozen):
    """Agreement of one ensemble judge with the humans (its own votes and ``judge_scores``).

    Fields mean what they mean in :class:`MetricsResult`; votes from failed calls are left
    out.
    """

    judge_id: str
    criterion_accuracy: float | None
    criterion_precision: float | None
    criterion_recall: float | None
    criterion_f1: float | None
    mean_kappa: float | None
    score_rmse: float | None
    score_mae: float | None
    score_spearman: CorrelationResult | None
    score_kendall: CorrelationResult | None
    score_pearson: CorrelationResult | None
    n_items: int
    per_criterion: list[CriterionMetrics]


class InterJudgeCriterion(_Frozen):
    """Agreement among ensemble judges on one criterion (no human labels involved).

    ``alpha``: Krippendorff's alpha (``krippendorff`` package; nominal for binary/nominal,
    ordinal for ordinal criteria), in [-1, 1]. ``fleiss_kappa``: Fleiss' kappa over the
    items every judge rated. Each ``None`` when undefined (a single category observed, or
    fewer than 2 units).
    """

    name: str
    scale: Scale
    level_of_measurement: Literal["nominal", "ordinal"]
    alpha: float | None
    fleiss_kappa: float | None
    n_items: int
    n_judges: int


class InterJudgeResult(_Frozen):
    """Inter-judge reliability of an ensemble: per criterion and averaged over criteria
    where defined."""

    judges: list[str]
    per_criterion: list[InterJudgeCriterion]
    mean_alpha: float | None
    mean_fleiss_kappa: float | None
