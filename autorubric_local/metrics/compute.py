"""``compute_metrics``: judge-vs-human agreement of an evaluation run (AutoRubric's README, \"Evaluation
Metrics\")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

import numpy as np

from autorubric_local.core.errors import InputError
from autorubric_local.metrics._checks import check_confidence_level
from autorubric_local.metrics.agreement import criterion_metrics, prf_from_confusion
from autorubric_local.metrics.bootstrap import bootstrap_metrics
from autorubric_local.metrics.calibration import calibration
from autorubric_local.metrics.distribution import (
    earth_movers_distance,
    ks_test,
    score_distribution,
    systematic_bias,
)
from autorubric_local.metrics.extract import (
    CANNOT_ASSESS,
    MET,
    UNMET,
    AlignedData,
    _ca_mode,
    _na_mode,
    align,
    classify_criterion,
)
from autorubric_local.metrics.interjudge import inter_judge_agreement, judge_ids
from autorubric_local.metrics.result import MetricsResult, pooled_phi
from autorubric_local.metrics.scores import correlation, rmse_mae
from autorubric_local.metrics.typed import abstention_stats, pooled_scale_metrics
from autorubric_local.metrics.types import (
    CannotAssessMode,
    ConfusionMatrix,
    CriterionMetrics,
    GradedRun,
    JudgeMetrics,
    NAMode,
)

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.core.types import Criterion
    from autorubric_local.data.dataset import RubricDataset

__all__ = ["compute_metrics"]


def _headline(per: list[CriterionMetrics], warn: list[str]) -> dict[str, float | None]:
    """Pooled accuracy, pooled binary P/R/F1 (MET positive) and mean kappa."""
    correct = sum(int(np.trace(np.asarray(c.confusion_matrix))) for c in per if c.support)
    total = sum(c.support for c in per)
    out: dict[str, float | None] = {"criterion_accuracy": correct / total if total else None}
    if not total:
        warn.append("no (human, judge) criterion pairs to compare: accuracy undefined")
    binary = [c for c in per if c.scale == "binary" and c.support]
    out.update(criterion_precision=None, criterion_recall=None, criterion_f1=None)
    if binary:
        size = len(binary[0].labels)
        cm = sum((np.asarray(c.confusion_matrix, dtype=float) for c in binary),
                 np.zeros((size, size)))
        p, r, f1 = prf_from_confusion(cm, binary[0].labels.index("MET"))
        out.update(criterion_precision=p, criterion_recall=r, criterion_f1=f1)
        if p is None:
            warn.append("precision undefined: the judge never said MET")
        if r is None:
            warn.append("recall undefined: the humans never said MET")
        if f1 is None and p is not None and r is not None:  # pragma: no cover
            warn.append("F1 undefined")
    else:
        warn.append("no binary criterion pairs: precision/recall/F1 undefined")
    kappas = [c.kappa for c in per if c.kappa is not None]
    out["mean_kappa"] = float(np.mean(kappas)) if kappas else None
    if not kappas:
        warn.append("mean kappa undefined: no criterion has a defined kappa")
    return out


def _score_level(data: AlignedData, confidence_level: float, warn: list[str]) -> dict[str, object]:
    js = np.asarray(data.judge_score, dtype=float)
    hs = np.asarray(data.human_score, dtype=float)
    out: dict[str, object] = {}
    out["score_rmse"], out["score_mae"] = rmse_mae(js, hs)
    if js.size == 0:
        warn.append("no item scores to compare: score metrics undefined")
        out.update(score_spearman=None, score_kendall=None, score_pearson=None)
        return out
    for method in ("spearman", "kendall", "pearson"):
        out[f"score_{method}"] = correlation(js, hs, method, warn, "item scores")  # type: ignore[arg-type]
    out["bias"] = systematic_bias(js, hs, confidence_level)
    if js.size < 2:
        warn.append("bias: fewer than 2 items, only the mean difference is given")
    out["score_emd"] = earth_movers_distance(js, hs)
    out["score_ks"] = ks_test(js, hs)
    out["judge_score_distribution"] = score_distribution(js)
    out["human_score_distribution"] = score_distribution(hs)
    return out


def _calibration(data: AlignedData, warn: list[str]):  # type: ignore[no-untyped-def]
    y = [v for c in data.criteria for v in c.cal_y]
    p = [v for c in data.criteria for v in c.cal_p]
    return calibration(y, p, warn=warn) if y else None


_JUDGE_CM_LABELS = ["MET", "UNMET", "CANNOT_ASSESS"]  # AutoRubric's order, the abstain class last
_JUDGE_CM_AT = {MET: 0, UNMET: 1, CANNOT_ASSESS: 2}  # binary code -> row/column


def _raw_binary_confusion(data: AlignedData) -> ConfusionMatrix | None:
    """The judged binary pairs of every criterion pooled, before the CANNOT_ASSESS mode, as
    a 3x3 matrix (labels ``_JUDGE_CM_LABELS``, rows human, columns judge); ``None`` when
    there are none."""
    matrix = [[0, 0, 0] for _ in range(3)]
    for pairs in data.criteria:
        if pairs.scale == "binary":
            for (h, j), count in pairs.raw.items():
                matrix[_JUDGE_CM_AT[h]][_JUDGE_CM_AT[j]] += count
    if not any(map(any, matrix)):
        return None
    return ConfusionMatrix(matrix=matrix, labels=list(_JUDGE_CM_LABELS))


def _judge_metrics(judge_id: str, data: AlignedData, ca: CannotAssessMode, na: NAMode,
                   confidence_level: float, warn: list[str]) -> JudgeMetrics:
    sub: list[str] = []
    per = [criterion_metrics(c, ca, na, sub) for c in data.criteria]
    head = _headline(per, sub)
    scores = _score_level(data, confidence_level, sub)
    absent = sum(c.n_absent for c in data.criteria)
    if absent:
        sub.append(f"no vote on {absent} criterion judgment(s) of compared items (not consulted): "
                   "coverage 'partial', its figures are over the pairs it judged")
    warn.extend(f"judge {judge_id!r}: {m}" for m in sub)
    return JudgeMetrics(
        judge_id=judge_id, **head,  # type: ignore[arg-type]
        score_rmse=scores["score_rmse"], score_mae=scores["score_mae"],  # type: ignore[arg-type]
        score_spearman=scores["score_spearman"], score_kendall=scores["score_kendall"],  # type: ignore[arg-type]
        score_pearson=scores["score_pearson"], n_items=len(data.item_ids),  # type: ignore[arg-type]
        per_criterion=per, bias=scores.get("bias"), phi=pooled_phi(per),  # type: ignore[arg-type]
        confusion_matrix=_raw_binary_confusion(data),
        coverage="partial" if absent else "full",
    )


PerItemMetrics = Literal["auto", "pooled", "per_criterion"]
_PER_ITEM_METRICS = ("auto", "pooled", "per_criterion")


def _criteria_shape(criteria: Iterable[Criterion]) -> tuple[object, ...]:
    """What two rubrics must share for one per-criterion table (AutoRubric's test): each
    criterion's requirement, kind and option labels, in order."""
    return tuple((c.requirement, classify_criterion(c), tuple(o.label for o in c.options or ()))
                 for c in criteria)


def _rubrics_differ(eval_result: GradedRun, dataset: RubricDataset) -> bool:
    """Whether the dataset has no rubric of its own and the graded items' rubrics differ."""
    if dataset.rubric is not None:
        return False
    shapes = {_criteria_shape(dataset.get_item_rubric(r.item_idx)) for r in eval_result.item_results
              if 0 <= r.item_idx < len(dataset)}
    return len(shapes) > 1


def compute_metrics(
    eval_result: GradedRun,
    dataset: RubricDataset,
    bootstrap: bool = False,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    per_judge: bool = False,
    cannot_assess: CannotAssessMode | str = CannotAssessMode.EXCLUDE,
    na_mode: NAMode | str = NAMode.EXCLUDE,
    seed: int | None = None,
    per_item_metrics: PerItemMetrics = "auto",
) -> MetricsResult:
    """Agreement of a graded run with the dataset's ground truth.

    Parameters
    ----------
    eval_result : GradedRun
        A graded run, e.g. ``EvalResult``.
        The run; its ``item_results`` must cover exactly the dataset's items.
    dataset : RubricDataset
        The graded dataset with ``ground_truth`` (items without it are skipped).
    bootstrap : bool, default False
        Add percentile bootstrap intervals (items resampled with replacement).
    n_bootstrap : int, default 1000
        Number of resamples, >= 1.
    confidence_level : float, default 0.95
        In (0, 1); for the bootstrap and the bias interval.
    per_judge : bool, default False
        Add :class:`JudgeMetrics` for each judge of the ensemble (its own votes).
    cannot_assess : CannotAssessMode or str, default "exclude"
        Binary CANNOT_ASSESS handling; see :class:`CannotAssessMode`.
    na_mode : NAMode or str, default "exclude"
        Multi-choice NA handling; see :class:`NAMode`.
    seed : int or None
        Bootstrap seed.
    per_item_metrics : {"auto", "pooled", "per_criterion"}, default "auto"
        AutoRubric 1.6.1's choice for datasets whose items have their own rubrics: whether
        to add ``pooled_by_scale`` (:func:`~.typed.pooled_scale_metrics`, agreement pooled
        over every rubric point of each scale type). ``"auto"``: when the dataset has no
        rubric of its own and the graded items' rubrics differ (in a criterion's
        requirement, kind or option labels); ``"pooled"``: always; ``"per_criterion"``:
        never. Unlike AutoRubric's pooled path, the per-criterion table (criteria matched
        across items by key, :mod:`.extract`) and the headline figures are computed and
        keep their meaning in every case.

    Returns
    -------
    MetricsResult
        Undefined figures are ``None`` with the reason in ``warnings``. Inter-judge
        agreement is added when two or more judges voted. ``cannot_assess_stats`` and
        ``na_stats`` (:func:`~.typed.abstention_stats`) always; ``coverage_stats``, the
        run's and each criterion's, when both modes are ``"exclude"``.

    Raises
    ------
    InputError
        Result and dataset do not match, no item has ground truth, an unknown mode, or a
        parameter out of range.
    """
    c = check_confidence_level(confidence_level)
    if bootstrap and (not isinstance(n_bootstrap, int) or n_bootstrap < 1):
        raise InputError(f"n_bootstrap must be an integer >= 1, got {n_bootstrap!r}")
    ca, na = _ca_mode(cannot_assess), _na_mode(na_mode)
    if per_item_metrics not in _PER_ITEM_METRICS:
        raise InputError(f"per_item_metrics must be one of {list(_PER_ITEM_METRICS)}, got {per_item_metrics!r}")
    if all(item.ground_truth is None for item in dataset):
        raise InputError("no dataset item has ground truth: nothing to compare the judge with")
    data = align(eval_result, dataset, None, ca, na)
    warn = list(data.warnings)
    per = [criterion_metrics(p, ca, na, warn) for p in data.criteria]
    head = _headline(per, warn)
    scores = _score_level(data, c, warn)
    boot = bootstrap_metrics(data, ca, na, n_bootstrap, c, seed, warn) if bootstrap else None
    judges = None
    if per_judge:
        judges = {}
        for jid in judge_ids(eval_result):
            jdata = align(eval_result, dataset, jid, ca, na,
                          score_of=lambda report, jid=jid: report.judge_scores.get(jid))
            judges[jid] = _judge_metrics(jid, jdata, ca, na, c, warn)
    inter = inter_judge_agreement(eval_result, ca, na, warn)
    if inter is not None:  # AutoRubric's per-criterion inter-judge fields
        by_name = {ic.name: ic for ic in inter.per_criterion}
        per = [c.model_copy(update={"krippendorff_alpha": by_name[c.name].alpha,
                                    "fleiss_kappa": by_name[c.name].fleiss_kappa})
               if c.name in by_name else c for c in per]
    abstentions = abstention_stats(eval_result, dataset)
    excluding = ca is CannotAssessMode.EXCLUDE and na is NAMode.EXCLUDE
    if excluding:
        per = [c.model_copy(update={"coverage_stats": abstentions.per_criterion.get(c.name)}) for c in per]
    pooled = per_item_metrics == "pooled" or (per_item_metrics == "auto" and _rubrics_differ(eval_result, dataset))
    return MetricsResult(
        **head,  # type: ignore[arg-type]
        per_criterion=per,
        bias=scores.pop("bias", None),  # type: ignore[arg-type]
        **scores,  # type: ignore[arg-type]
        bootstrap=boot,
        per_judge=judges,
        inter_judge=inter,
        calibration=_calibration(data, warn),
        n_items=len(data.item_ids),
        n_criteria=len(data.criteria),
        cannot_assess_mode=ca.value,
        na_mode=na.value,
        cannot_assess_stats=abstentions.cannot_assess_stats,
        na_stats=abstentions.na_stats,
        coverage_stats=abstentions.coverage_stats if excluding else None,
        pooled_by_scale=pooled_scale_metrics(eval_result, dataset) if pooled else None,
        warnings=warn,
    )

