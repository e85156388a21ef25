"""AutoRubric's per-type metric shapes, as views of what this package computes (AutoRubric 1.6.1,
``autorubric.metrics``: ``BinaryCriterionMetrics``, ``OrdinalCriterionMetrics``,
``NominalCriterionMetrics``, ``ConfusionMatrix``, ``CoverageStats``, ``NAStats``,
``CannotAssessStats``, ``PooledScaleMetrics``; its API reference, docs/api/metrics.md in
github.com/delip/autorubric, describes the per-criterion types and the abstention statistics).

:func:`~.compute.compute_metrics` gives one :class:`~.types.CriterionMetrics` per criterion,
whatever its scale. Code written for AutoRubric reads ``per_criterion`` as a union of three
types told apart by ``criterion_type``; :func:`typed_per_criterion` (a whole result) and
:func:`as_typed` (one criterion) give that view, field for field, from the figures already
computed: nothing here recomputes an accuracy or a kappa of a criterion. What the view adds
is read off the confusion matrix (support counts, the MET-vs-rest 2x2 and its rates, the
phi coefficient, one-vs-rest metrics per ordinal option).

AutoRubric also reports abstention diagnostics: :func:`abstention_stats` computes them from a
run (CANNOT_ASSESS and NA agreement, coverage per criterion), and :func:`pooled_scale_metrics`
the pooled rubric-point metrics AutoRubric gives for datasets whose items have different
rubrics; ``compute_metrics`` puts both in its result (``cannot_assess_stats``, ``na_stats``,
``coverage_stats``, ``pooled_by_scale``). The result types (``ConfusionMatrix``,
``CoverageStats``, ``NAStats``, ``CannotAssessStats``, ``PooledScaleMetrics``) are defined in
:mod:`.types` and named here too.

Conventions are this package's (:mod:`.types`): an undefined figure is ``None``, never NaN
and never a made-up 0.0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field, model_validator

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import CriterionVerdict
from autorubric_local.metrics.agreement import kappa_from_confusion, prf_from_confusion
from autorubric_local.metrics.extract import (
    CANNOT_ASSESS,
    _check_item,
    align,
    classify_criterion,
    criterion_key,
    extract_all_verdicts_from_report,
    resolve_ground_truth,
)
from autorubric_local.metrics.scores import correlation, rmse_mae
from autorubric_local.metrics.types import (  # the result types live in .types; named here too
    CannotAssessMode,
    CannotAssessStats,
    ConfusionMatrix,
    CorrelationResult,
    CoverageStats,
    CriterionMetrics,
    CriterionType,
    GradedRun,
    InterJudgeCriterion,
    NAMode,
    NAStats,
    OptionMetrics,
    PooledScaleMetrics,
    _Frozen,
    interpret_kappa,
)

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.metrics.result import MetricsResult

__all__ = [
    "AbstentionStats",
    "BinaryCriterionMetrics",
    "CannotAssessStats",
    "ConfusionMatrix",
    "CoverageStats",
    "CriterionMetricsUnion",
    "NAStats",
    "NominalCriterionMetrics",
    "OrdinalCriterionMetrics",
    "PooledScaleMetrics",
    "abstention_stats",
    "as_typed",
    "interpret_kappa",
    "pooled_scale_metrics",
    "typed_per_criterion",
]


def _phi(cm: ConfusionMatrix) -> float | None:
    """Matthews correlation (the phi coefficient) of a binary 2x2 matrix, in [-1, 1], by
    ``sklearn.metrics.matthews_corrcoef``; ``None`` when either side has one class only
    (scikit-learn would give 0.0 for that 0/0)."""
    from sklearn.metrics import matthews_corrcoef

    tp, fn, fp, tn = cm.tp, cm.fn, cm.fp, cm.tn
    if 0 in (tp + fn, fp + tn, tp + fp, fn + tn):
        return None
    truth, pred = [1, 1, 0, 0], [1, 0, 1, 0]
    return float(matthews_corrcoef(truth, pred, sample_weight=[tp, fn, fp, tn]))


def _met_vs_rest(cm: CriterionMetrics) -> ConfusionMatrix:
    """The 2x2 MET / not-MET matrix of a binary criterion (CANNOT_ASSESS, a class under
    ``cannot_assess="as_category"``, counts as not MET, as AutoRubric's binary matrix has it)."""
    counts = np.asarray(cm.confusion_matrix, dtype=int)
    met = cm.labels.index(CriterionVerdict.MET.value)
    rest = [k for k in range(len(cm.labels)) if k != met]
    tp = int(counts[met, met])
    fn = int(counts[met, rest].sum())
    fp = int(counts[rest, met].sum())
    tn = int(counts[np.ix_(rest, rest)].sum())
    return ConfusionMatrix(matrix=[[tp, fn], [fp, tn]], labels=["MET", "UNMET"])



class AbstentionStats(_Frozen):
    """Extension: AutoRubric's abstention diagnostics of a run (``MetricsResult.na_stats``,
    ``cannot_assess_stats``, ``coverage_stats`` and each criterion's ``coverage_stats``
    there), as :func:`~.compute.compute_metrics` puts them in its result; see
    :func:`abstention_stats`.

    Attributes
    ----------
    cannot_assess_stats : CannotAssessStats or None
        ``None`` when no criterion is binary.
    na_stats : NAStats or None
        ``None`` when no criterion is multi-choice.
    coverage_stats : CoverageStats
        Over all criteria: the sums of the per-criterion counts (pairs, not items).
    per_criterion : dict of str to CoverageStats
        By criterion key (:func:`~.extract.criterion_key`), in rubric order.
    """

    cannot_assess_stats: CannotAssessStats | None
    na_stats: NAStats | None
    coverage_stats: CoverageStats
    per_criterion: dict[str, CoverageStats] = Field(default_factory=dict)


def abstention_stats(eval_result: GradedRun, dataset: RubricDataset,
                     judge: str | None = None) -> AbstentionStats:
    """CANNOT_ASSESS and NA agreement and coverage of a run against its ground truth.

    Pairs are aligned as for :func:`~.compute.compute_metrics` (:mod:`.extract`), with nothing
    remapped: the counts do not depend on the CANNOT_ASSESS / NA modes. A failed judgment, or
    a failed item, is an errored pair; it is never counted as an abstention.

    Parameters
    ----------
    eval_result : GradedRun
        A graded run, e.g. ``EvalResult``.
    dataset : RubricDataset
        The dataset it graded, with ground truth.
    judge : str or None
        ``None``: the final (ensemble) verdicts; a judge id: that judge's own votes.

    Returns
    -------
    AbstentionStats

    Raises
    ------
    InputError
        As :func:`~.extract.align`: the run and the dataset do not match.
    """
    data = align(eval_result, dataset, judge, CannotAssessMode.AS_CATEGORY, NAMode.AS_CATEGORY)
    failed_by_key: dict[str, int] = {}
    for r in eval_result.item_results:
        report = r.report
        if dataset[r.item_idx].ground_truth is None or (report.score is not None and report.report is not None):
            continue
        for index, criterion in enumerate(dataset.get_item_rubric(r.item_idx)):
            key = criterion_key(criterion, index)
            failed_by_key[key] = failed_by_key.get(key, 0) + 1
    ca_truth: list[bool] = []
    ca_pred: list[bool] = []
    na_truth: list[bool] = []
    na_pred: list[bool] = []
    has_binary = has_choice = False
    per: dict[str, CoverageStats] = {}
    totals = np.zeros(5, dtype=int)
    for pairs in data.criteria:
        _, h, j = pairs.arrays()
        abstain = CANNOT_ASSESS if pairs.scale == "binary" else pairs.criterion.na_option_index
        h_abs, j_abs = h == abstain, j == abstain
        if pairs.scale == "binary":
            has_binary = True
            ca_truth.extend(h_abs.tolist())
            ca_pred.extend(j_abs.tolist())
        else:
            has_choice = True
            na_truth.extend(h_abs.tolist())
            na_pred.extend(j_abs.tolist())
        errored = pairs.n_excluded + failed_by_key.get(pairs.key, 0)
        counts = np.array([h.size + errored, int(np.sum(~h_abs & ~j_abs)), int(j_abs.sum()),
                           int(h_abs.sum()), errored])
        totals += counts
        per[pairs.key] = CoverageStats.from_counts(*(int(c) for c in counts))
    return AbstentionStats(
        cannot_assess_stats=CannotAssessStats.from_decisions(ca_truth, ca_pred) if has_binary else None,
        na_stats=NAStats.from_decisions(na_truth, na_pred) if has_choice else None,
        coverage_stats=CoverageStats.from_counts(*(int(c) for c in totals)),
        per_criterion=per,
    )


# ---- per-criterion views ---------------------------------------------------------------------


class BinaryCriterionMetrics(_Frozen):
    """Agreement on one binary criterion, in AutoRubric's fields (its ``CriterionMetrics``,
    alias ``BinaryCriterionMetrics``). Built by :meth:`from_criterion_metrics`.

    Attributes
    ----------
    name : str
        The criterion key (:func:`~.extract.criterion_key`).
    index : int
        Position of the criterion in the rubric.
    criterion_type : "binary"
    n_samples : int
        Pairs compared (``CriterionMetrics.support``).
    accuracy : float in [0, 1] or None
        Exact agreement (CANNOT_ASSESS a class of its own under ``as_category``).
    precision, recall, f1 : float in [0, 1] or None
        MET positive; ``None`` on a zero denominator (AutoRubric gives 0.0 there).
    kappa : float in [-1, 1] or None
        Cohen's kappa; ``None`` when both sides use one label only.
    kappa_interpretation : str
        :func:`interpret_kappa` of ``kappa``.
    krippendorff_alpha, fleiss_kappa : float or None
        Among the ensemble's judges (:class:`~.types.InterJudgeCriterion`); ``None`` with fewer
        than two judges or when undefined.
    support_true, support_pred : int
        Pairs where the ground truth (the judge) is MET.
    confusion_matrix : ConfusionMatrix or None
        2x2, labels ``["MET", "UNMET"]``, CANNOT_ASSESS counted as UNMET; ``None`` without pairs.
    fpr, fnr : float in [0, 1] or None
        :attr:`ConfusionMatrix.fpr`, :attr:`ConfusionMatrix.fnr`.
    phi : float in [-1, 1] or None
        Matthews correlation of MET vs not MET; ``None`` when a side is constant.
    is_degenerate : bool
        Pairs exist but kappa is undefined.
    coverage_stats : CoverageStats or None
        Under the exclude modes, when :func:`abstention_stats` was given; else ``None``.
    """

    name: str
    index: int
    criterion_type: Literal["binary"] = "binary"
    n_samples: int
    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    kappa: float | None
    kappa_interpretation: str
    krippendorff_alpha: float | None = None
    fleiss_kappa: float | None = None
    support_true: int
    support_pred: int
    confusion_matrix: ConfusionMatrix | None = None
    fpr: float | None = None
    fnr: float | None = None
    phi: float | None = None
    is_degenerate: bool = False
    coverage_stats: CoverageStats | None = None

    @classmethod
    def from_criterion_metrics(cls, cm: CriterionMetrics, inter_judge: InterJudgeCriterion | None = None,
                               coverage: CoverageStats | None = None) -> BinaryCriterionMetrics:
        """The view of a binary :class:`~.types.CriterionMetrics`.

        Raises
        ------
        InputError
            ``cm`` is not binary.
        """
        _require_scale(cm, "binary")
        two = _met_vs_rest(cm)
        empty = cm.support == 0
        return cls(
            name=cm.name, index=cm.index, n_samples=cm.support, accuracy=cm.accuracy,
            precision=cm.precision, recall=cm.recall, f1=cm.f1, kappa=cm.kappa,
            kappa_interpretation=interpret_kappa(cm.kappa), **_inter(inter_judge),
            support_true=two.tp + two.fn, support_pred=two.tp + two.fp,
            confusion_matrix=None if empty else two, fpr=None if empty else two.fpr,
            fnr=None if empty else two.fnr, phi=None if empty else _phi(two),
            is_degenerate=not empty and cm.kappa is None, coverage_stats=coverage,
        )


class OrdinalCriterionMetrics(_Frozen):
    """Agreement on one ordinal multi-choice criterion, in AutoRubric's fields. Built by
    :meth:`from_criterion_metrics`.

    Attributes
    ----------
    name, index, criterion_type, n_samples
        As :class:`BinaryCriterionMetrics` (``criterion_type`` ``"ordinal"``).
    n_options : int
        Classes compared: the scored options, and NA under ``na_mode="as_category"``
        (``len(confusion_matrix.labels)``).
    exact_accuracy : float in [0, 1] or None
    adjacent_accuracy : float in [0, 1] or None
        Pairs at most one scale position apart (positions: scored options by value).
    weighted_kappa : float in [-1, 1] or None
        Quadratic-weighted kappa over scale positions.
    kappa_interpretation : str
        :func:`interpret_kappa` of ``weighted_kappa``.
    krippendorff_alpha, fleiss_kappa : float or None
        Among the ensemble's judges (alpha at the ordinal level).
    spearman, kendall : CorrelationResult or None
        Rank correlations of option values; ``None`` when undefined (AutoRubric gives a
        result whose coefficient is ``None``).
    rmse, mae : float or None
        Errors of option values (the judge's continuous ensemble value when it has one).
    per_option : list of OptionMetrics
        One-vs-rest figures of each class, from the confusion matrix; empty without pairs.
    confusion_matrix : ConfusionMatrix
        Rows ground truth, columns judge, labels the classes compared.
    is_degenerate : bool
        Pairs exist but the weighted kappa is undefined.
    coverage_stats : CoverageStats or None
        As :class:`BinaryCriterionMetrics`.
    """

    name: str
    index: int
    criterion_type: Literal["ordinal"] = "ordinal"
    n_samples: int
    n_options: int
    exact_accuracy: float | None
    adjacent_accuracy: float | None
    weighted_kappa: float | None
    kappa_interpretation: str
    krippendorff_alpha: float | None = None
    fleiss_kappa: float | None = None
    spearman: CorrelationResult | None
    kendall: CorrelationResult | None
    rmse: float | None
    mae: float | None
    per_option: list[OptionMetrics]
    confusion_matrix: ConfusionMatrix
    is_degenerate: bool = False
    coverage_stats: CoverageStats | None = None

    @classmethod
    def from_criterion_metrics(cls, cm: CriterionMetrics, inter_judge: InterJudgeCriterion | None = None,
                               coverage: CoverageStats | None = None) -> OrdinalCriterionMetrics:
        """The view of an ordinal :class:`~.types.CriterionMetrics`.

        Raises
        ------
        InputError
            ``cm`` is not ordinal.
        """
        _require_scale(cm, "ordinal")
        return cls(
            name=cm.name, index=cm.index, n_samples=cm.support, n_options=len(cm.labels),
            exact_accuracy=cm.accuracy, adjacent_accuracy=cm.adjacent_accuracy,
            weighted_kappa=cm.weighted_kappa, kappa_interpretation=interpret_kappa(cm.weighted_kappa),
            **_inter(inter_judge), spearman=cm.spearman, kendall=cm.kendall, rmse=cm.rmse, mae=cm.mae,
            per_option=_options_from_confusion(cm) if cm.support else [],
            confusion_matrix=ConfusionMatrix(matrix=cm.confusion_matrix, labels=cm.labels),
            is_degenerate=cm.support > 0 and cm.weighted_kappa is None, coverage_stats=coverage,
        )


class NominalCriterionMetrics(_Frozen):
    """Agreement on one nominal multi-choice criterion, in AutoRubric's fields. Built by
    :meth:`from_criterion_metrics`.

    Attributes
    ----------
    name, index, criterion_type, n_samples, n_options
        As :class:`OrdinalCriterionMetrics` (``criterion_type`` ``"nominal"``).
    exact_accuracy : float in [0, 1] or None
    kappa : float in [-1, 1] or None
        Unweighted Cohen's kappa.
    kappa_interpretation : str
    krippendorff_alpha, fleiss_kappa : float or None
    per_option : list of OptionMetrics
        ``CriterionMetrics.per_option`` in confusion-matrix order; empty without pairs.
    confusion_matrix : ConfusionMatrix
    is_degenerate : bool
    coverage_stats : CoverageStats or None
    """

    name: str
    index: int
    criterion_type: Literal["nominal"] = "nominal"
    n_samples: int
    n_options: int
    exact_accuracy: float | None
    kappa: float | None
    kappa_interpretation: str
    krippendorff_alpha: float | None = None
    fleiss_kappa: float | None = None
    per_option: list[OptionMetrics]
    confusion_matrix: ConfusionMatrix
    is_degenerate: bool = False
    coverage_stats: CoverageStats | None = None

    @classmethod
    def from_criterion_metrics(cls, cm: CriterionMetrics, inter_judge: InterJudgeCriterion | None = None,
                               coverage: CoverageStats | None = None) -> NominalCriterionMetrics:
        """The view of a nominal :class:`~.types.CriterionMetrics`.

        Raises
        ------
        InputError
            ``cm`` is not nominal.
        """
        _require_scale(cm, "nominal")
        options = [cm.per_option[label] for label in cm.labels] if cm.per_option and cm.support else []
        return cls(
            name=cm.name, index=cm.index, n_samples=cm.support, n_options=len(cm.labels),
            exact_accuracy=cm.accuracy, kappa=cm.kappa, kappa_interpretation=interpret_kappa(cm.kappa),
            **_inter(inter_judge), per_option=options,
            confusion_matrix=ConfusionMatrix(matrix=cm.confusion_matrix, labels=cm.labels),
            is_degenerate=cm.support > 0 and cm.kappa is None, coverage_stats=coverage,
        )


CriterionMetricsUnion = BinaryCriterionMetrics | OrdinalCriterionMetrics | NominalCriterionMetrics
"""One criterion's metrics in AutoRubric's shape; ``criterion_type`` says which (its
``CriterionMetricsUnion``)."""

_VIEWS: dict[str, type[BinaryCriterionMetrics] | type[OrdinalCriterionMetrics] | type[NominalCriterionMetrics]] = {
    "binary": BinaryCriterionMetrics, "ordinal": OrdinalCriterionMetrics, "nominal": NominalCriterionMetrics,
}


def _require_scale(cm: CriterionMetrics, scale: CriterionType) -> None:
    if cm.scale != scale:
        raise InputError(f"criterion {cm.name!r} is {cm.scale}, not {scale}")


def _inter(inter_judge: InterJudgeCriterion | None) -> dict[str, float | None]:
    if inter_judge is None:
        return {"krippendorff_alpha": None, "fleiss_kappa": None}
    return {"krippendorff_alpha": inter_judge.alpha, "fleiss_kappa": inter_judge.fleiss_kappa}


def _options_from_confusion(cm: CriterionMetrics) -> list[OptionMetrics]:
    """One-vs-rest precision/recall/F1 of each class (:func:`~.agreement.prf_from_confusion`)."""
    counts = np.asarray(cm.confusion_matrix, dtype=float)
    out = []
    for k, label in enumerate(cm.labels):
        precision, recall, f1 = prf_from_confusion(counts, k)
        actual = int(counts[k, :].sum())
        out.append(OptionMetrics(precision=precision, recall=recall, f1=f1, support=actual, label=label,
                                 index=k, support_true=actual, support_pred=int(counts[:, k].sum())))
    return out


def as_typed(cm: CriterionMetrics, *, inter_judge: InterJudgeCriterion | None = None,
             coverage: CoverageStats | None = None) -> CriterionMetricsUnion:
    """One criterion's metrics as the AutoRubric type of its scale.

    Parameters
    ----------
    cm : CriterionMetrics
        From :func:`~.compute.compute_metrics` (``MetricsResult.per_criterion``).
    inter_judge : InterJudgeCriterion, optional
        The criterion's entry of ``MetricsResult.inter_judge`` (fills ``krippendorff_alpha``
        and ``fleiss_kappa``).
    coverage : CoverageStats, optional
        The criterion's entry of :attr:`AbstentionStats.per_criterion`; by default
        ``cm.coverage_stats`` (set by ``compute_metrics`` under the exclude modes).

    Returns
    -------
    BinaryCriterionMetrics, OrdinalCriterionMetrics or NominalCriterionMetrics
    """
    return _VIEWS[cm.scale].from_criterion_metrics(cm, inter_judge, coverage if coverage is not None
                                                   else cm.coverage_stats)


def typed_per_criterion(result: MetricsResult,
                        abstentions: AbstentionStats | None = None) -> list[CriterionMetricsUnion]:
    """``result.per_criterion`` as AutoRubric's per-type metrics, in the same order.

    Parameters
    ----------
    result : MetricsResult
    abstentions : AbstentionStats, optional
        :func:`abstention_stats` of the same run; each criterion's ``coverage_stats`` is set
        from it when ``result`` was computed with both modes ``"exclude"`` (as AutoRubric sets
        it only there). Without it (or for a criterion it lacks), the criterion's own
        ``coverage_stats``, which ``compute_metrics`` sets under the same condition.

    Returns
    -------
    list of CriterionMetricsUnion, length ``len(result.per_criterion)``
    """
    inter = {c.name: c for c in result.inter_judge.per_criterion} if result.inter_judge else {}
    excluding = (result.cannot_assess_mode == CannotAssessMode.EXCLUDE.value
                 and result.na_mode == NAMode.EXCLUDE.value)
    coverage = abstentions.per_criterion if abstentions is not None and excluding else {}
    return [as_typed(cm, inter_judge=inter.get(cm.name), coverage=coverage.get(cm.name))
            for cm in result.per_criterion]


# ---- pooled rubric points ---------------------------------------------------------------------


def pooled_scale_metrics(eval_result: GradedRun, dataset: RubricDataset) -> list[PooledScaleMetrics]:
    """Agreement pooled by scale type over every rubric point of a run.

    Each item is read against its own rubric (``dataset.get_item_rubric``), so items need not
    share criteria (AutoRubric reports these in ``MetricsResult.pooled_by_scale`` for datasets
    with per-item rubrics). Items without ground truth and failed items are left out, as are
    failed judgments.

    Parameters
    ----------
    eval_result : GradedRun
    dataset : RubricDataset
        The dataset the run graded.

    Returns
    -------
    list of PooledScaleMetrics
        In the order binary, ordinal, nominal; a scale with neither points nor abstentions is
        left out.

    Raises
    ------
    InputError
        The run and the dataset do not match (an item out of range or repeated, another
        submission, a ground truth or report of another length).
    """
    scales: tuple[CriterionType, ...] = ("binary", "ordinal", "nominal")
    values: dict[str, tuple[list[float], list[float]]] = {s: ([], []) for s in scales}
    hits = dict.fromkeys(scales, 0)
    abstained = dict.fromkeys(scales, 0)
    truth_abstained = dict.fromkeys(scales, 0)
    seen: set[int] = set()
    for r in eval_result.item_results:
        _check_item(r, dataset, seen)
        seen.add(r.item_idx)
        truth = dataset[r.item_idx].ground_truth
        if truth is None or r.report.score is None or r.report.report is None:
            continue
        criteria = list(dataset.get_item_rubric(r.item_idx))
        human = resolve_ground_truth(list(truth), criteria)
        judged = extract_all_verdicts_from_report(r.report, criteria)
        for criterion, h, j in zip(criteria, human, judged, strict=True):
            if j is None:
                continue
            scale = classify_criterion(criterion)
            if criterion.options is None:
                j_value, h_value = _binary_value(j), _binary_value(h)
            else:
                effective = criterion.with_guaranteed_na_option()
                assert effective.options is not None and isinstance(h, int) and isinstance(j, int)
                j_value = None if effective.options[j].na else effective.options[j].value
                h_value = None if effective.options[h].na else effective.options[h].value
            if j_value is None:
                abstained[scale] += 1
            elif h_value is None:
                truth_abstained[scale] += 1
            else:
                values[scale][0].append(h_value)
                values[scale][1].append(j_value)
                hits[scale] += int(h == j)
    out = []
    for scale in scales:
        truth_v, judge_v = (np.asarray(v, dtype=float) for v in values[scale])
        n = int(truth_v.size)
        if n == 0 and abstained[scale] == 0 and truth_abstained[scale] == 0:
            continue
        value_rmse, value_mae = rmse_mae(judge_v, truth_v)
        spearman = correlation(judge_v, truth_v, "spearman")
        pearson = correlation(judge_v, truth_v, "pearson")
        binary: dict[str, object] = {}
        if scale == "binary" and n:
            cm = ConfusionMatrix(matrix=[[int(np.sum((truth_v == 1) & (judge_v == 1))),
                                          int(np.sum((truth_v == 1) & (judge_v == 0)))],
                                         [int(np.sum((truth_v == 0) & (judge_v == 1))),
                                          int(np.sum((truth_v == 0) & (judge_v == 0)))]],
                                 labels=["MET", "UNMET"])
            counts = np.asarray(cm.matrix, dtype=float)
            _, _, f1 = prf_from_confusion(counts, 0)
            binary = {"kappa": kappa_from_confusion(counts), "phi": _phi(cm), "precision": cm.precision,
                      "recall": cm.recall, "f1": f1, "confusion_matrix": cm}
        out.append(PooledScaleMetrics(
            scale_type=scale, n_points=n, exact_accuracy=hits[scale] / n if n else None,
            value_rmse=value_rmse, value_mae=value_mae,
            value_spearman=None if spearman is None else spearman.coefficient,
            value_pearson=None if pearson is None else pearson.coefficient,
            n_abstain=abstained[scale], n_gt_abstain=truth_abstained[scale], **binary,  # type: ignore[arg-type]
        ))
    return out


def _binary_value(verdict: CriterionVerdict | int | None) -> float | None:
    """MET 1.0, UNMET 0.0, CANNOT_ASSESS ``None``."""
    return {CriterionVerdict.MET: 1.0, CriterionVerdict.UNMET: 0.0}.get(verdict)  # type: ignore[arg-type]
