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

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from autorubric_local.core.errors import InputError

from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.types import CaseInsensitiveEnum
from autorubric_local.data.dataset import DataItem

__all__ = [
    "BiasResult",
    "BootstrapResult",
    "BootstrapResults",
    "CalibrationResult",
    "CannotAssessMode",
    "CannotAssessStats",
    "ConfidenceInterval",
    "ConfusionMatrix",
    "CorrelationResult",
    "CoverageStats",
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
    "NAStats",
    "OptionMetrics",
    "PooledScaleMetrics",
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


# ---- confusion matrix and abstention diagnostics (AutoRubric's types; views in :mod:`.typed`) ------------------------------------------------------------------------


class ConfusionMatrix(_Frozen):
    """Counts of (ground truth, prediction) label pairs, with the labels of its axes.

    Attributes
    ----------
    matrix : list of list of int, shape (n_classes, n_classes)
        ``matrix[i][j]``: pairs whose ground truth is ``labels[i]`` and prediction
        ``labels[j]`` (rows truth, columns prediction, as ``sklearn.metrics.confusion_matrix``).
    labels : list of str, length n_classes
        Binary criteria: ``["MET", "UNMET"]`` (MET, the positive class, first).

    Raises
    ------
    pydantic.ValidationError
        The matrix is not square, its size differs from ``len(labels)``, or a count is
        negative.

    Notes
    -----
    ``tp``, ``fn``, ``fp``, ``tn`` and the rates built from them are defined only for a 2x2
    matrix with ``labels[0] == "MET"``; on any other matrix they raise :class:`InputError`. A
    rate with a zero denominator is ``None``.
    """

    matrix: list[list[int]]
    labels: list[str]

    @model_validator(mode="after")
    def _check_shape(self) -> ConfusionMatrix:
        n = len(self.labels)
        if len(self.matrix) != n or any(len(row) != n for row in self.matrix):
            raise ValueError(f"matrix must be {n}x{n} to match labels {self.labels}")
        if any(c < 0 for row in self.matrix for c in row):
            raise ValueError("counts must be >= 0")
        return self

    @classmethod
    def from_pairs(cls, y_true: list[str], y_pred: list[str], labels: list[str]) -> ConfusionMatrix:
        """The matrix of paired labels (``sklearn.metrics.confusion_matrix`` with ``labels``).

        Parameters
        ----------
        y_true, y_pred : list of str, shape (n_pairs,)
        labels : list of str
            The classes, in axis order; pairs with a label outside them are not counted.
        """
        from sklearn.metrics import confusion_matrix

        if len(y_true) != len(y_pred):
            raise InputError(f"y_true and y_pred differ in length: {len(y_true)} != {len(y_pred)}")
        if not y_true:
            return cls(matrix=[[0] * len(labels) for _ in labels], labels=list(labels))
        return cls(matrix=confusion_matrix(y_true, y_pred, labels=labels).tolist(), labels=list(labels))

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return len(self.labels)

    @property
    def total(self) -> int:
        """Number of pairs counted."""
        return sum(sum(row) for row in self.matrix)

    def _binary(self) -> tuple[int, int, int, int]:
        if len(self.labels) != 2 or self.labels[0] != "MET":
            raise InputError("tp/fn/fp/tn and their rates need a 2x2 matrix with labels[0] == 'MET' "
                             f"(MET positive, UNMET negative); got labels {self.labels}")
        (tp, fn), (fp, tn) = self.matrix
        return tp, fn, fp, tn

    @property
    def tp(self) -> int:
        """Ground truth MET, predicted MET (binary only)."""
        return self._binary()[0]

    @property
    def fn(self) -> int:
        """Ground truth MET, predicted UNMET (binary only)."""
        return self._binary()[1]

    @property
    def fp(self) -> int:
        """Ground truth UNMET, predicted MET (binary only)."""
        return self._binary()[2]

    @property
    def tn(self) -> int:
        """Ground truth UNMET, predicted UNMET (binary only)."""
        return self._binary()[3]

    @property
    def fpr(self) -> float | None:
        """False-positive rate ``fp / (fp + tn)`` in [0, 1]; ``None`` without true UNMET."""
        _, _, fp, tn = self._binary()
        return fp / (fp + tn) if fp + tn else None

    @property
    def fnr(self) -> float | None:
        """False-negative rate ``fn / (fn + tp)`` in [0, 1]; ``None`` without true MET."""
        tp, fn, _, _ = self._binary()
        return fn / (fn + tp) if fn + tp else None

    @property
    def precision(self) -> float | None:
        """``tp / (tp + fp)`` in [0, 1]; ``None`` when nothing was predicted MET."""
        tp, _, fp, _ = self._binary()
        return tp / (tp + fp) if tp + fp else None

    @property
    def recall(self) -> float | None:
        """``tp / (tp + fn)`` in [0, 1]; ``None`` without true MET."""
        tp, fn, _, _ = self._binary()
        return tp / (tp + fn) if tp + fn else None


# ---- abstention and coverage diagnostics ------------------------------------------------------


class CoverageStats(_Frozen):
    """How much of the paired sample is left once abstentions and failed judgments are left
    out, as under the ``exclude`` modes (AutoRubric's ``CoverageStats``).

    Attributes
    ----------
    n_total : int
        (item, criterion) pairs with ground truth before anything is left out, the pairs of
        failed items included.
    n_covered : int
        Pairs left: judged, with no CANNOT_ASSESS / NA on either side (the ``support`` of the
        criterion under the exclude modes).
    coverage : float in [0, 1] or None
        ``n_covered / n_total``.
    judge_abstain_rate, gt_abstain_rate : float in [0, 1] or None
        Share of ``n_total`` where the judge (the ground truth) abstained, among judged pairs.
    union_exclusion_rate : float in [0, 1] or None
        ``1 - coverage``: left out for any reason.
    n_errored : int
        Pairs without a verdict: the criterion's judgment failed, or its whole item did.
    error_rate : float in [0, 1] or None
        ``n_errored / n_total``.

    Every rate is ``None`` when ``n_total == 0``.
    """

    n_total: int
    n_covered: int
    coverage: float | None = None
    judge_abstain_rate: float | None = None
    gt_abstain_rate: float | None = None
    union_exclusion_rate: float | None = None
    n_errored: int = 0
    error_rate: float | None = None

    @classmethod
    def from_counts(cls, n_total: int, n_covered: int, judge_abstain: int, gt_abstain: int,
                    n_errored: int) -> CoverageStats:
        """The statistics of these counts (every count >= 0, ``n_covered <= n_total``)."""
        if min(n_total, n_covered, judge_abstain, gt_abstain, n_errored) < 0 or n_covered > n_total:
            raise InputError(f"coverage counts out of range: n_total={n_total}, n_covered={n_covered}, "
                             f"judge_abstain={judge_abstain}, gt_abstain={gt_abstain}, n_errored={n_errored}")
        if n_total == 0:
            return cls(n_total=0, n_covered=0, n_errored=n_errored)
        coverage = n_covered / n_total
        return cls(n_total=n_total, n_covered=n_covered, coverage=coverage,
                   judge_abstain_rate=judge_abstain / n_total, gt_abstain_rate=gt_abstain / n_total,
                   union_exclusion_rate=1.0 - coverage, n_errored=n_errored,
                   error_rate=n_errored / n_total)


def _dichotomy(truth: np.ndarray, pred: np.ndarray) -> tuple[int, int, int, int, float | None]:
    """Counts and Cohen's kappa of a yes/no decision: ``(n_true, n_pred, false_pos, false_neg,
    kappa)``.

    Kappa is Cohen's (1960) ``(p_o - p_e) / (1 - p_e)`` of the 2x2 table, the figure
    :func:`~.agreement.kappa_from_confusion` gives (computed here in closed form because
    :mod:`.agreement` imports this module); ``None`` when there are no pairs or ``p_e == 1``
    (both sides make the same one decision only). Tested against
    ``sklearn.metrics.cohen_kappa_score``.
    """
    n = int(truth.size)
    n_true, n_pred = int(truth.sum()), int(pred.sum())
    false_pos, false_neg = int(np.sum(pred & ~truth)), int(np.sum(truth & ~pred))
    if n == 0:
        return n_true, n_pred, false_pos, false_neg, None
    p_o = (n - false_pos - false_neg) / n
    p_e = (n_true * n_pred + (n - n_true) * (n - n_pred)) / n**2
    kappa = (p_o - p_e) / (1.0 - p_e) if 1.0 - p_e > 1e-12 else None
    return n_true, n_pred, false_pos, false_neg, kappa


class NAStats(_Frozen):
    """Agreement on the NA (not applicable) decision of multi-choice criteria: judge vs ground
    truth on {NA, not NA}, over every judged pair of every multi-choice criterion
    (AutoRubric's ``NAStats``). Counts do not depend on the NA mode; failed judgments are in
    none of them.

    Attributes
    ----------
    na_count_true, na_count_pred : int
        Pairs where the ground truth (the judge) is NA.
    na_kappa : float in [-1, 1] or None
        Cohen's kappa on the dichotomy; ``None`` when both sides make one decision only.
    na_kappa_interpretation : str or None
        :func:`interpret_kappa` of ``na_kappa``; ``None`` with it.
    na_false_positive : int
        The judge said NA, the ground truth did not.
    na_false_negative : int
        The ground truth is NA, the judge said otherwise.
    """

    na_count_true: int
    na_count_pred: int
    na_kappa: float | None = None
    na_kappa_interpretation: str | None = None
    na_false_positive: int
    na_false_negative: int

    @classmethod
    def from_decisions(cls, truth_na: list[bool], pred_na: list[bool]) -> NAStats:
        """The statistics of paired NA decisions (``truth_na[k]``: the ground truth of pair
        ``k`` is NA), two lists of the same length."""
        n_true, n_pred, fp, fn, kappa = _dichotomy(*_bool_pair(truth_na, pred_na))
        return cls(na_count_true=n_true, na_count_pred=n_pred, na_kappa=kappa,
                   na_kappa_interpretation=None if kappa is None else interpret_kappa(kappa),
                   na_false_positive=fp, na_false_negative=fn)


class CannotAssessStats(_Frozen):
    """Agreement on CANNOT_ASSESS of binary criteria: judge vs ground truth on
    {CANNOT_ASSESS, not CANNOT_ASSESS}, over every judged pair of every binary criterion
    (AutoRubric's ``CannotAssessStats``, the binary parallel of :class:`NAStats`).

    Attributes
    ----------
    ca_count_true, ca_count_pred : int
        Pairs where the ground truth (the judge) is CANNOT_ASSESS.
    ca_kappa : float in [-1, 1] or None
        Cohen's kappa on the dichotomy; ``None`` when both sides make one decision only.
    ca_kappa_interpretation : str or None
        :func:`interpret_kappa` of ``ca_kappa``; ``None`` with it.
    ca_false_positive : int
        The judge said CANNOT_ASSESS, the ground truth did not.
    ca_false_negative : int
        The ground truth is CANNOT_ASSESS, the judge gave a verdict.
    """

    ca_count_true: int
    ca_count_pred: int
    ca_kappa: float | None = None
    ca_kappa_interpretation: str | None = None
    ca_false_positive: int
    ca_false_negative: int

    @classmethod
    def from_decisions(cls, truth_ca: list[bool], pred_ca: list[bool]) -> CannotAssessStats:
        """The statistics of paired CANNOT_ASSESS decisions, as :meth:`NAStats.from_decisions`."""
        n_true, n_pred, fp, fn, kappa = _dichotomy(*_bool_pair(truth_ca, pred_ca))
        return cls(ca_count_true=n_true, ca_count_pred=n_pred, ca_kappa=kappa,
                   ca_kappa_interpretation=None if kappa is None else interpret_kappa(kappa),
                   ca_false_positive=fp, ca_false_negative=fn)


def _bool_pair(truth: list[bool], pred: list[bool]) -> tuple[np.ndarray, np.ndarray]:
    if len(truth) != len(pred):
        raise InputError(f"truth and pred differ in length: {len(truth)} != {len(pred)}")
    return np.asarray(truth, dtype=bool), np.asarray(pred, dtype=bool)

class PooledScaleMetrics(_Frozen):
    """Agreement pooled over the rubric points of one scale type, for datasets whose items
    have different rubrics (AutoRubric's ``PooledScaleMetrics``; see
    :func:`pooled_scale_metrics`).

    Every (item, criterion) pair is reduced to a value in [0, 1] (binary MET = 1, UNMET = 0;
    multi-choice: the option's ``value``) and an exact-match flag. Figures that need one
    shared option set (kappa of options, per option, an NxN matrix) are not given; MET/UNMET
    is shared by every binary criterion, so binary points also get kappa, phi, precision,
    recall, F1 and a 2x2 matrix.

    Attributes
    ----------
    scale_type : {"binary", "ordinal", "nominal"}
    n_points : int
        Points compared (neither side abstained, the judgment did not fail).
    exact_accuracy : float in [0, 1] or None
    value_rmse, value_mae : float >= 0 or None
        Errors of the judge's values against the ground truth's.
    value_spearman, value_pearson : float in [-1, 1] or None
        Correlations of the values; ``None`` with fewer than two points or a constant side.
    kappa, phi, precision, recall, f1 : float or None
        Binary only: Cohen's kappa, Matthews correlation, MET-positive precision, recall, F1.
    confusion_matrix : ConfusionMatrix or None
        Binary only: 2x2, labels ``["MET", "UNMET"]``.
    n_abstain : int
        Points the judge abstained on (CANNOT_ASSESS / NA), left out.
    n_gt_abstain : int
        Extension: points whose ground truth abstained (and the judge did not), left out
        (AutoRubric scores such a ground truth as 0).
    """

    scale_type: CriterionType
    n_points: int
    exact_accuracy: float | None
    value_rmse: float | None
    value_mae: float | None
    value_spearman: float | None
    value_pearson: float | None
    kappa: float | None = None
    phi: float | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    confusion_matrix: ConfusionMatrix | None = None
    n_abstain: int = 0
    n_gt_abstain: int = 0


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
    coverage_stats : CoverageStats or None
        How much of the criterion's paired sample is left once abstentions and failed
        judgments are left out (:class:`CoverageStats`; ``n_covered`` equals ``support``).
        Set by ``compute_metrics`` only when both modes are ``"exclude"`` (under the other
        modes no abstention is dropped), as AutoRubric sets it; ``None`` otherwise, in
        :class:`JudgeMetrics`, and in results stored before it existed.
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
    coverage_stats: CoverageStats | None = None

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

    AutoRubric's fields (``None`` in results stored before they existed, unless said):

    bias : BiasResult or None
        This judge's item scores against the human ones (the items of ``score_rmse``).
    phi : float in [-1, 1] or None
        Matthews correlation of MET vs not MET over this judge's binary pairs pooled across
        criteria (``None`` when a margin is 0 or there are none).
    confusion_matrix : ConfusionMatrix or None
        This judge's binary verdicts against the ground truth, pooled over every binary
        criterion, **before** the CANNOT_ASSESS mode: 3x3, labels ``["MET", "UNMET",
        "CANNOT_ASSESS"]`` (rows ground truth, columns judge), so the judge's abstentions show
        whatever the mode; its failed votes are left out. ``None`` when the judge has no
        binary pair.
    coverage : {"full", "partial"}, default "full"
        ``"partial"`` when the judge has no vote at all (not even a failed one) on some
        criterion of a compared item: an escalation judge of a confidence cascade, which
        judges only the escalated criteria, or a judge that joined a run late; its figures
        are then over the pairs it judged only. ``"full"`` otherwise. A result stored before
        this field existed reads back ``"full"``.
    n_pairs : int or None
        (human, judge) criterion pairs this judge's criterion figures are over: the sum of
        ``per_criterion[*].support`` (as ``MetricsResult.n_samples``), derived from
        ``per_criterion`` when not given (so stored results get it); ``None`` when built
        from AutoRubric's fields alone without ``per_criterion``.
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
    confusion_matrix: ConfusionMatrix | None = None
    coverage: Literal["full", "partial"] = "full"
    n_pairs: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _pairs(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("n_pairs") is None and isinstance(data.get("per_criterion"), list):
            per = [c if isinstance(c, CriterionMetrics) else CriterionMetrics.model_validate(c)
                   for c in data["per_criterion"]]
            data = {**data, "per_criterion": per, "n_pairs": sum(c.support for c in per)}
        return data


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
