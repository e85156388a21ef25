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
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    """An immutable result. ``_same_as`` lists ``(ours, AutoRubric's, required)`` field names
    that hold one value under two names (issue 53): either name is accepted, the other is
    filled from it, both given must agree, and a required pair needs one of them."""

    model_config = ConfigDict(frozen=True)
    _same_as: ClassVar[tuple[tuple[str, str, bool], ...]] = ()
    _nested_method: ClassVar[dict[str, str]] = {}
    """``field -> method``: the ``method`` a nested interval/correlation read without one had
    (results stored before AutoRubric's ``method`` field existed)."""

    @model_validator(mode="before")
    @classmethod
    def _one_value_two_names(cls, data: Any) -> Any:
        if not (cls._same_as or cls._nested_method) or not isinstance(data, dict):
            return data
        data = dict(data)
        for name, method in cls._nested_method.items():
            if isinstance(data.get(name), dict) and "method" not in data[name]:
                data[name] = {**data[name], "method": method}
        for ours, theirs, required in cls._same_as:
            if ours in data and theirs in data:
                if data[ours] != data[theirs]:
                    raise ValueError(f"{cls.__name__}: {ours}={data[ours]!r} and {theirs}={data[theirs]!r} "
                                     f"differ ({theirs} is AutoRubric's name of {ours})")
            elif ours in data:
                data[theirs] = data[ours]
            elif theirs in data:
                data[ours] = data[theirs]
            elif required:
                raise ValueError(f"{cls.__name__}: {ours} (or AutoRubric's name {theirs}) is required")
        return data


def interpret_kappa(kappa: float | None) -> str:
    """Landis and Koch's (1977) verbal band of a kappa, with AutoRubric's cut points.

    ``< 0`` "poor (worse than chance)", ``< 0.21`` "slight", ``< 0.41`` "fair", ``< 0.61``
    "moderate", ``< 0.81`` "substantial", else "almost perfect"; ``"undefined"`` for ``None``.

    References
    ----------
    Landis, J. R. and Koch, G. G. (1977). The measurement of observer agreement for
    categorical data. Biometrics 33(1), 159-174.
    """
    if kappa is None:
        return "undefined"
    for bound, band in ((0.0, "poor (worse than chance)"), (0.21, "slight"), (0.41, "fair"),
                        (0.61, "moderate"), (0.81, "substantial")):
        if kappa < bound:
            return band
    return "almost perfect"


def interpret_correlation(r: float) -> str:
    """AutoRubric's wording of a correlation (``CorrelationResult.interpret_correlation``):
    strength by ``|r|`` (``"very strong"`` >= 0.9, ``"strong"`` >= 0.7, ``"moderate"`` >= 0.5,
    ``"weak"`` >= 0.3, else ``"very weak"``), then ``"positive"`` (r >= 0) or ``"negative"``."""
    strength = next((band for bound, band in ((0.9, "very strong"), (0.7, "strong"), (0.5, "moderate"),
                                              (0.3, "weak")) if abs(r) >= bound), "very weak")
    return f"{strength} {'positive' if r >= 0 else 'negative'}"


def interpret_emd(emd: float) -> str:
    """AutoRubric's wording of an earth mover's distance (``EMDResult.interpret_emd``):
    ``"very similar"`` < 0.05, ``"minor differences"`` < 0.10, ``"moderate differences"`` < 0.20,
    else ``"substantial differences"`` (thresholds meant for scores normalised to [0, 1])."""
    for bound, band in ((0.05, "very similar"), (0.10, "minor differences"), (0.20, "moderate differences")):
        if emd < bound:
            return band
    return "substantial differences"


class ConfidenceInterval(_Frozen):
    """A two-sided interval ``[lower, upper]`` at ``confidence_level`` (in (0, 1)).

    ``confidence`` is AutoRubric's name of ``confidence_level`` (the same number; either may
    be given; default 0.95 as in AutoRubric). ``method`` (AutoRubric's field): how the
    interval was made: ``"t"`` (Student t, :func:`~.distribution.systematic_bias`) or
    ``"percentile"`` (bootstrap); AutoRubric's default ``"normal"`` when not given (a stored
    result read back gets its real method from the enclosing result).
    """

    _same_as = (("confidence_level", "confidence", False),)

    lower: float
    upper: float
    confidence_level: float = 0.95
    confidence: float = 0.95
    method: str = "normal"


class CorrelationResult(_Frozen):
    """A correlation coefficient in [-1, 1] with its two-sided p-value and sample size.

    ``p_value`` is ``None`` when the library gives none (n < 3 for some tests).

    AutoRubric's fields: ``n_samples`` is AutoRubric's name of ``n`` (the number of pairs;
    either may be given); ``method`` is ``"spearman"``, ``"kendall"`` or ``"pearson"``
    (AutoRubric's default ``"spearman"`` when not given; a stored result read back gets its
    real method from the field that holds it); ``interpretation`` is AutoRubric's wording
    of the coefficient (:func:`interpret_correlation`), derived when not given; ``ci`` is
    always ``None`` here (no interval is computed for a correlation).
    """

    _same_as = (("n", "n_samples", True),)

    coefficient: float
    p_value: float | None = None
    n: int = Field(None)  # filled from n_samples (_same_as)
    n_samples: int = Field(None)  # filled from n
    method: str = "spearman"
    interpretation: str = ""
    ci: ConfidenceInterval | None = None

    @model_validator(mode="before")
    @classmethod
    def _interpretation(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("interpretation") and data.get("coefficient") is not None:
            data = {**data, "interpretation": interpret_correlation(float(data["coefficient"]))}
        return data


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
        ``p_value < 1 - confidence_level``; ``None`` when there is no p-value (or when the
        result was built from AutoRubric's fields only).
    n : int
        Number of paired items (of judge scores when ``paired=False``).
    is_significant : bool or None
        AutoRubric's field: ``p_value < 0.05`` (AutoRubric's fixed level, whatever the
        confidence level); ``False`` when there is no p-value. ``None`` in results stored
        before it existed.
    direction : {"positive", "negative", "none"} or None
        AutoRubric's field: ``"positive"`` when ``mean_bias > 0.001`` (the judge scores
        higher), ``"negative"`` when ``< -0.001``, else ``"none"`` (threshold in score units,
        AutoRubric's). ``None`` in results stored before it existed.
    n_samples : int
        AutoRubric's name of ``n`` (the same number; either may be given).
    """

    _same_as = (("n", "n_samples", True),)
    _nested_method = {"ci": "t"}

    mean_bias: float
    std_bias: float | None
    ci: ConfidenceInterval | None = None
    t_statistic: float | None = None
    p_value: float | None = None
    effect_size: float | None = None
    significant: bool | None = None
    n: int = Field(None)  # filled from n_samples (_same_as)
    n_samples: int = Field(None)  # filled from n
    is_significant: bool | None = None
    direction: Literal["positive", "negative", "none"] | None = None


class EMDResult(_Frozen):
    """Earth mover's (1-Wasserstein) distance between two score samples.

    Attributes
    ----------
    distance : float or None
        In score units, never normalised (0 = identical distributions; at most 1 for scores
        in [0, 1]). ``None`` only when the result was built from AutoRubric's fields alone.
    n_judge, n_human : int or None
        Sample sizes (``None`` likewise).
    emd : float or None
        AutoRubric's field: the distance between the compared values, which are min-max
        normalised over both samples together when ``normalize=True`` (then in [0, 1]);
        equal to ``distance`` when ``normalize=False``. ``None`` in results stored before
        it existed.
    mean_diff : float or None
        AutoRubric's field: ``mean(judge) - mean(human)`` of the compared values.
    std_diff : float or None
        AutoRubric's field: ``std(judge) - std(human)``, population std (ddof=0), of the
        compared values.
    bias_direction : {"higher", "lower", "none"} or None
        AutoRubric's field: ``"higher"`` when ``mean_diff > 0.01`` (the judge scores higher),
        ``"lower"`` when ``< -0.01``, else ``"none"``.
    bias_magnitude : float or None
        AutoRubric's field: ``|mean_diff|``.
    interpretation : str or None
        AutoRubric's wording of ``emd`` (:func:`interpret_emd`).
    """

    distance: float | None = None
    n_judge: int | None = None
    n_human: int | None = None
    emd: float | None = None
    mean_diff: float | None = None
    std_diff: float | None = None
    bias_direction: Literal["higher", "lower", "none"] | None = None
    bias_magnitude: float | None = None
    interpretation: str | None = None


class KSTestResult(_Frozen):
    """Kolmogorov-Smirnov test: statistic in [0, 1] and p-value.

    ``n_judge``/``n_human`` are the sample sizes (``n_human`` is ``None`` for the one-sample
    test against a normal distribution, and both are ``None`` when built from AutoRubric's
    fields alone). ``is_significant`` (AutoRubric's field): ``p_value < 0.05``, AutoRubric's
    fixed level; derived from ``p_value`` when not given.
    """

    statistic: float
    p_value: float
    n_judge: int | None = None
    n_human: int | None = None
    is_significant: bool = Field(None)  # derived from p_value when not given

    @model_validator(mode="before")
    @classmethod
    def _significance(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("is_significant") is None and data.get("p_value") is not None:
            data = {**data, "is_significant": float(data["p_value"]) < 0.05}
        return data


class DistributionResult(_Frozen):
    """Summary of one score sample: moments, quartiles and a histogram.

    ``histogram[k]`` counts scores in ``[bin_edges[k], bin_edges[k+1])`` (the last bin is
    closed); both are ``None`` when ``include_histogram=False``. (AutoRubric's ``histogram``
    is the pair ``(counts, edges)``; here the counts and the edges are two fields.) ``std`` is
    the sample standard deviation (``None`` when n < 2).

    AutoRubric's fields (``None`` in results stored before they existed): ``variance``, the
    sample variance (ddof=1, squared score units; ``None`` when n < 2); ``iqr`` =
    ``q75 - q25`` (score units); ``skewness``, the Fisher-Pearson coefficient
    (``scipy.stats.skew``, biased; ``None`` when n < 3); ``kurtosis``, the excess (Fisher)
    kurtosis (``scipy.stats.kurtosis``, biased, 0 for a normal distribution; ``None`` when
    n < 4). Skewness and kurtosis are ``None`` for constant scores too (0/0).
    """

    n: int
    mean: float
    std: float | None
    min: float
    q25: float
    median: float
    q75: float
    max: float
    histogram: list[int] | None = None
    bin_edges: list[float] | None = None
    variance: float | None = None
    iqr: float | None = None
    skewness: float | None = None
    kurtosis: float | None = None


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
    ``autorubric.metrics.OptionMetrics``); ``None`` in metrics stored before they existed,
    except ``support_true``, filled from ``support`` (either may be given).
    """

    _same_as = (("support", "support_true", True),)

    precision: float | None
    recall: float | None
    f1: float | None
    support: int = Field(None)  # filled from support_true (_same_as)
    label: str | None = None
    index: int | None = None
    support_true: int = Field(None)  # filled from support
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
    confusion_matrix : list of list of int, shape (n_labels, n_labels), or None
        Rows: human label; columns: judge label. Always given by ``compute_metrics``
        (``None`` only when built from AutoRubric's fields alone).
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

    AutoRubric's fields (AutoRubric 1.6.1, ``autorubric.metrics.CriterionMetrics``; those
    not given are derived from the fields above, so stored results get them too):

    criterion_type : {"binary", "ordinal", "nominal"}
        AutoRubric's name of ``scale`` (either may be given; default ``"binary"``).
    n_samples : int
        AutoRubric's name of ``support`` (either may be given).
    kappa_interpretation : str
        Landis & Koch band of the headline kappa (``weighted_kappa`` for ordinal, else
        ``kappa``), :func:`interpret_kappa`; ``"undefined"`` when it is ``None``.
    is_degenerate : bool
        ``support > 0`` but the headline kappa is ``None`` (the data collapsed onto one class).
    support_true, support_pred : int or None
        Binary only: human and judge MET counts in the pairs used (``None`` otherwise).
    fpr, fnr : float in [0, 1] or None
        Binary only, MET positive, every other label negative (as for precision):
        ``fp / (fp + tn)`` and ``fn / (fn + tp)``; ``None`` when the denominator is 0.
    phi : float in [-1, 1] or None
        Binary only: Matthews correlation (phi) of MET vs not MET,
        ``(tp tn - fp fn) / sqrt((tp + fp)(tp + fn)(tn + fp)(tn + fn))`` (Matthews, 1975);
        ``None`` when a margin is 0.
    krippendorff_alpha, fleiss_kappa : float or None
        Inter-judge agreement on this criterion (``InterJudgeCriterion.alpha`` and
        ``.fleiss_kappa`` of ``MetricsResult.inter_judge``); ``None`` without an ensemble
        of two or more judges, or in :class:`JudgeMetrics`.
    """

    _same_as = (("scale", "criterion_type", False), ("support", "n_samples", True))
    _nested_method = {"spearman": "spearman", "kendall": "kendall"}

    name: str
    index: int
    scale: Scale = "binary"
    criterion_type: Scale = "binary"
    support: int = Field(None)  # filled from n_samples (_same_as)
    n_samples: int = Field(None)  # filled from support
    n_excluded: int = 0
    labels: list[str] = Field(default_factory=list)
    confusion_matrix: list[list[int]] | None = None
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
    kappa_interpretation: str = ""
    is_degenerate: bool = False
    support_true: int | None = None
    support_pred: int | None = None
    fpr: float | None = None
    fnr: float | None = None
    phi: float | None = None
    krippendorff_alpha: float | None = None
    fleiss_kappa: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _derived(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        scale = data.get("scale", data.get("criterion_type", "binary"))
        headline = data.get("weighted_kappa" if scale == "ordinal" else "kappa")
        support = data.get("support", data.get("n_samples")) or 0
        data.setdefault("kappa_interpretation", interpret_kappa(headline))
        data.setdefault("is_degenerate", support > 0 and headline is None)
        labels, cm = data.get("labels") or [], data.get("confusion_matrix") or []
        if scale == "binary" and "MET" in labels and cm:
            for name, value in binary_rates(cm, labels.index("MET")).items():
                data.setdefault(name, value)
        return data


def binary_rates(cm: Sequence[Sequence[int]], met: int) -> dict[str, Any]:
    """MET-vs-rest counts and rates of a confusion matrix (rows human, columns judge):
    ``support_true``/``support_pred`` (MET counts), ``fpr``, ``fnr`` and ``phi`` as in
    :class:`CriterionMetrics`, each rate ``None`` when its denominator is 0."""
    (tp, fn), (fp, tn) = met_vs_rest(cm, met)
    support_true, support_pred = tp + fn, tp + fp
    margins = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return {"support_true": support_true, "support_pred": support_pred,
            "fpr": fp / (fp + tn) if fp + tn else None, "fnr": fn / (fn + tp) if fn + tp else None,
            "phi": (tp * tn - fp * fn) / margins**0.5 if margins else None}


def met_vs_rest(cm: Sequence[Sequence[int]], met: int) -> list[list[int]]:
    """``[[tp, fn], [fp, tn]]`` of a confusion matrix (rows human, columns judge) with label
    ``met`` positive and every other label negative."""
    total = sum(sum(row) for row in cm)
    tp = cm[met][met]
    fn, fp = sum(cm[met]) - tp, sum(row[met] for row in cm) - tp
    return [[tp, fn], [fp, total - tp - fn - fp]]


class BootstrapResult(_Frozen):
    """Percentile bootstrap interval of one metric.

    ``estimate`` is the metric on the full data; ``std_error`` the standard deviation of the
    resampled values; ``n_valid`` how many resamples gave a defined value (the interval uses
    only those; ``None`` when built from AutoRubric's fields alone).

    AutoRubric's fields: ``standard_error`` is its name of ``std_error`` (the same number;
    either may be given); ``n_bootstrap`` the number of resamples drawn (``None`` in results
    stored before it existed); ``bootstrap_distribution`` the resampled values, never kept
    here (always ``None``).
    """

    _same_as = (("std_error", "standard_error", True),)
    _nested_method = {"ci": "percentile"}

    estimate: float | None
    ci: ConfidenceInterval
    std_error: float = Field(None)  # filled from standard_error (_same_as)
    standard_error: float = Field(None)  # filled from std_error
    n_valid: int | None = None
    n_bootstrap: int | None = None
    bootstrap_distribution: list[float] | None = None


def _ci_pair(result: Any) -> tuple[float, float] | None:
    """``(lower, upper)`` of a :class:`BootstrapResult` or its dict, or ``None``."""
    if result is None:
        return None
    ci = result.ci if isinstance(result, BootstrapResult) else result["ci"]
    return (ci.lower, ci.upper) if isinstance(ci, ConfidenceInterval) else (ci["lower"], ci["upper"])


class BootstrapResults(_Frozen):
    """Bootstrap intervals (items resampled with replacement) for the headline metrics.

    ``metrics`` is keyed by headline field name (``criterion_accuracy``, ``mean_kappa``,
    ``score_rmse``, ``score_spearman``, ``bias``...); ``per_criterion[name]`` by the
    criterion's metric name (``accuracy``, ``kappa``, ``weighted_kappa``...). A metric
    undefined in every resample is left out (and named in the warnings).

    AutoRubric's fields ``accuracy_ci``, ``kappa_ci`` and ``rmse_ci`` are the ``(lower,
    upper)`` intervals of ``metrics["criterion_accuracy"]``, ``metrics["mean_kappa"]`` and
    ``metrics["score_rmse"]`` (derived from ``metrics`` when not given; ``None`` when the
    metric is left out). Unlike AutoRubric's, all three come from one item resample.
    """

    n_bootstrap: int
    confidence_level: float = 0.95
    seed: int | None = None
    metrics: dict[str, BootstrapResult] = Field(default_factory=dict)
    per_criterion: dict[str, dict[str, BootstrapResult]] = Field(default_factory=dict)
    accuracy_ci: tuple[float, float] | None = None
    kappa_ci: tuple[float, float] | None = None
    rmse_ci: tuple[float, float] | None = None

    @model_validator(mode="before")
    @classmethod
    def _headline_intervals(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("metrics"), dict):
            data = dict(data)
            for name, key in (("accuracy_ci", "criterion_accuracy"), ("kappa_ci", "mean_kappa"),
                              ("rmse_ci", "score_rmse")):
                if data.get(name) is None:
                    data[name] = _ci_pair(data["metrics"].get(key))
        return data

    def get(self, name: str) -> BootstrapResult | None:
        """The interval of headline metric ``name``, or ``None``."""
        return self.metrics.get(name)


class JudgeMetrics(_Frozen):
    """Agreement of one ensemble judge with the humans (its own votes and ``judge_scores``).

    Fields mean what they mean in :class:`MetricsResult`; votes from failed calls are left
    out. ``n_items`` and ``per_criterion`` are ``None``/empty only when built from
    AutoRubric's fields alone.

    AutoRubric's fields (``None`` in results stored before they existed): ``bias``, the
    :class:`BiasResult` of this judge's item scores against the human ones (the items of
    ``score_rmse``); ``phi``, the Matthews correlation of MET vs not MET over this judge's
    binary pairs pooled across criteria (``None`` when a margin is 0 or there are none).
    """

    _nested_method = {"score_spearman": "spearman", "score_kendall": "kendall", "score_pearson": "pearson"}

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
    n_items: int | None = None
    per_criterion: list[CriterionMetrics] = Field(default_factory=list)
    bias: BiasResult | None = None
    phi: float | None = None


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
