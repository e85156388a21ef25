"""The result of ``compute_metrics``: :class:`MetricsResult`, its presentation (text, a
long-format DataFrame, JSON) and its storage in a run's database."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import model_validator

from autorubric_local.metrics.types import (
    BiasResult,
    BootstrapResult,
    BootstrapResults,
    CalibrationResult,
    CannotAssessMode,
    CannotAssessStats,
    CorrelationResult,
    CoverageStats,
    CriterionMetrics,
    DistributionResult,
    EMDResult,
    InterJudgeResult,
    JudgeMetrics,
    KSTestResult,
    NAMode,
    NAStats,
    PooledScaleMetrics,
    _Frozen,
    binary_rates,
    met_vs_rest,
)
from autorubric_local.store import Store

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import sqlite_utils

__all__ = ["MetricsResult", "load_metrics", "save_metrics", "summary", "to_dataframe", "to_file"]


class MetricsResult(_Frozen):
    """Judge-vs-human agreement of an evaluation run (AutoRubric's README, \"MetricsResult Fields\").

    Headline figures are ``None`` (never NaN) when undefined, with the reason in
    ``warnings``.

    Attributes
    ----------
    criterion_accuracy : float or None
        Exact agreement pooled over every (item, criterion) pair, binary and multi-choice.
    criterion_precision, criterion_recall, criterion_f1 : float or None
        Pooled over binary criteria; MET is the positive class.
    mean_kappa : float or None
        Mean of the per-criterion (unweighted) Cohen's kappa, over criteria where defined.
    per_criterion : list of CriterionMetrics
    score_rmse, score_mae : float or None
        Errors of the item score (judge's ``report.score`` vs the ground truth scored with
        the same rubric and the run's scoring settings, ``EvalResult.grader_settings``;
        defaults: normalised, CANNOT_ASSESS skipped).
    score_spearman, score_kendall, score_pearson : CorrelationResult or None
    bias : BiasResult or None
    bootstrap : BootstrapResults or None
        When ``bootstrap=True``.
    per_judge : dict of str to JudgeMetrics or None
        When ``per_judge=True``.
    inter_judge : InterJudgeResult or None
        Extension: Krippendorff's alpha and Fleiss' kappa among ensemble judges (2+ judges).
    calibration : CalibrationResult or None
        Extension: P(MET) calibration pooled over binary criteria.
    score_emd, score_ks : EMDResult, KSTestResult or None
        Distribution comparison of judge and human scores.
    judge_score_distribution, human_score_distribution : DistributionResult or None
    n_items : int
        Items compared (graded, with ground truth).
    n_criteria : int
        Distinct criterion keys.
    cannot_assess_mode, na_mode : str
        The modes used.
    warnings : list of str
    n_binary_criteria, n_ordinal_criteria, n_nominal_criteria : int
        AutoRubric's fields: criteria in ``per_criterion`` of each scale.
    n_samples : int or None
        AutoRubric's field: (human, judge) criterion pairs compared, the sum of
        ``per_criterion[*].support`` (the denominator of ``criterion_accuracy``).
    macro_accuracy : float or None
        AutoRubric's field: unweighted mean of the per-criterion accuracies, over criteria
        where defined.
    criterion_phi : float in [-1, 1] or None
        AutoRubric's field: Matthews correlation of MET vs not MET over the binary pairs
        pooled across criteria (the matrix of ``criterion_precision``); ``None`` when a
        margin is 0 or there are no binary pairs.
    mean_krippendorff_alpha : float or None
        AutoRubric's field: ``inter_judge.mean_alpha`` (mean of the per-criterion
        Krippendorff's alpha where defined); ``None`` without an ensemble.
    micro_kappa : float in [-1, 1] or None
        AutoRubric's field: Cohen's kappa of the binary pairs pooled across criteria (their
        confusion matrices, after the CANNOT_ASSESS mode, summed; CANNOT_ASSESS a class under
        ``"as_category"``), by :func:`~.agreement.kappa_from_confusion`: the micro
        counterpart of the macro ``mean_kappa``. ``None`` without binary pairs, or when both
        sides use one label only.

    The AutoRubric fields above are derived from ``per_criterion`` and ``inter_judge`` when
    not given (results stored before they existed get them on reading). The ones below are
    AutoRubric's too; results stored before they existed read them back ``None``:

    cannot_assess_stats : CannotAssessStats or None
        Judge vs ground truth on {CANNOT_ASSESS, not CANNOT_ASSESS} over every judged pair of
        every binary criterion, whatever the mode; ``None`` without binary criteria.
    na_stats : NAStats or None
        The same on {NA, not NA} over every judged pair of every multi-choice criterion;
        ``None`` without multi-choice criteria.
    coverage_stats : CoverageStats or None
        Over all criteria (the sums of the per-criterion counts: pairs, not items), how much
        of the paired sample is left once abstentions and failed judgments are left out; set
        only when both modes are ``"exclude"``, as each criterion's ``coverage_stats``.
    pooled_by_scale : list of PooledScaleMetrics or None
        Agreement pooled over the rubric points of each scale type, for datasets whose items
        have different rubrics (:func:`~.typed.pooled_scale_metrics`); set as
        ``compute_metrics(per_item_metrics=)`` says, else ``None``.
    """

    _nested_method = {"score_spearman": "spearman", "score_kendall": "kendall", "score_pearson": "pearson"}

    criterion_accuracy: float | None
    criterion_precision: float | None
    criterion_recall: float | None
    criterion_f1: float | None
    mean_kappa: float | None
    per_criterion: list[CriterionMetrics]
    score_rmse: float | None
    score_mae: float | None
    score_spearman: CorrelationResult | None
    score_kendall: CorrelationResult | None
    score_pearson: CorrelationResult | None
    bias: BiasResult | None
    bootstrap: BootstrapResults | None = None
    per_judge: dict[str, JudgeMetrics] | None = None
    inter_judge: InterJudgeResult | None = None
    calibration: CalibrationResult | None = None
    score_emd: EMDResult | None = None
    score_ks: KSTestResult | None = None
    judge_score_distribution: DistributionResult | None = None
    human_score_distribution: DistributionResult | None = None
    n_items: int
    n_criteria: int
    cannot_assess_mode: str = CannotAssessMode.EXCLUDE.value
    na_mode: str = NAMode.EXCLUDE.value
    warnings: list[str] = []
    n_binary_criteria: int = 0
    n_ordinal_criteria: int = 0
    n_nominal_criteria: int = 0
    n_samples: int | None = None
    macro_accuracy: float | None = None
    criterion_phi: float | None = None
    mean_krippendorff_alpha: float | None = None
    micro_kappa: float | None = None
    cannot_assess_stats: CannotAssessStats | None = None
    na_stats: NAStats | None = None
    coverage_stats: CoverageStats | None = None
    pooled_by_scale: list[PooledScaleMetrics] | None = None

    @model_validator(mode="before")
    @classmethod
    def _derived(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("per_criterion"), list):
            return data
        data = dict(data)
        per = [c if isinstance(c, CriterionMetrics) else CriterionMetrics.model_validate(c)
               for c in data["per_criterion"]]
        for scale in ("binary", "ordinal", "nominal"):
            data.setdefault(f"n_{scale}_criteria", sum(c.scale == scale for c in per))
        data.setdefault("n_samples", sum(c.support for c in per))
        accuracies = [c.accuracy for c in per if c.accuracy is not None]
        data.setdefault("macro_accuracy", sum(accuracies) / len(accuracies) if accuracies else None)
        data.setdefault("criterion_phi", pooled_phi(per))
        if "micro_kappa" not in data:
            data["micro_kappa"] = pooled_binary_kappa(per)
        inter = data.get("inter_judge")
        if "mean_krippendorff_alpha" not in data and inter is not None:
            data["mean_krippendorff_alpha"] = (inter.mean_alpha if isinstance(inter, InterJudgeResult)
                                               else inter.get("mean_alpha"))
        return data

    def summary(self) -> str:
        """A readable multi-line text summary."""
        return summary(self)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per figure: columns ``level`` (aggregate / criterion / judge /
        inter_judge / bootstrap), ``name``, ``metric``, ``value``, ``ci_lower``,
        ``ci_upper``."""
        return to_dataframe(self)

    def to_file(self, path: str | Path) -> None:
        """Write the result as JSON (reload with ``MetricsResult.model_validate_json``)."""
        to_file(self, path)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def _num(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _corr(c: CorrelationResult | None) -> str:
    if c is None:
        return "n/a"
    p = "" if c.p_value is None else f" (p={c.p_value:.3g})"
    return f"{c.coefficient:.3f}{p}"


def _ci(b: BootstrapResult | None, pct: bool = False) -> str:
    if b is None:
        return "n/a"
    fmt = _pct if pct else _num
    return f"[{fmt(b.ci.lower)}, {fmt(b.ci.upper)}]"


def summary(m: MetricsResult) -> str:
    """Multi-line text: headline agreement (with the pooled binary kappa and, under the exclude
    modes, the coverage), score-level figures, bias, calibration,
    bootstrap intervals, per-criterion lines (with the mean off-label mass where known),
    inter-judge and per-judge lines (each judge's per-criterion off-label mass), warnings."""
    lines = [
        (f"Metrics over {m.n_items} items, {m.n_criteria} criteria "
        f"(CANNOT_ASSESS: {m.cannot_assess_mode}, NA: {m.na_mode})"),
        "",
        "Criterion agreement:",
        f"  Accuracy:  {_pct(m.criterion_accuracy)}",
        (f"  Precision: {_pct(m.criterion_precision)}  Recall: {_pct(m.criterion_recall)}  "
        f"F1: {_pct(m.criterion_f1)}  (MET positive, binary criteria)"),
        f"  Mean kappa: {_num(m.mean_kappa)}",
        f"  Pooled binary kappa: {_num(m.micro_kappa)}",
        *([] if m.coverage_stats is None else [
            f"  Coverage: {_pct(m.coverage_stats.coverage)} of {m.coverage_stats.n_total} pairs "
            f"(judge abstained {_pct(m.coverage_stats.judge_abstain_rate)}, ground truth "
            f"{_pct(m.coverage_stats.gt_abstain_rate)}, errored {m.coverage_stats.n_errored})"]),
        "",
        "Score agreement:",
        f"  RMSE: {_num(m.score_rmse, 4)}  MAE: {_num(m.score_mae, 4)}",
        (f"  Spearman: {_corr(m.score_spearman)}  Kendall: {_corr(m.score_kendall)}  "
        f"Pearson: {_corr(m.score_pearson)}"),
    ]
    if m.score_emd is not None and m.score_ks is not None:
        lines.append(f"  EMD: {m.score_emd.distance:.4f}  KS: {m.score_ks.statistic:.3f} "
                     f"(p={m.score_ks.p_value:.3g})")
    if m.bias is not None:
        b = m.bias
        ci = "" if b.ci is None else f" [{b.ci.lower:+.4f}, {b.ci.upper:+.4f}]"
        direction = "lenient" if b.mean_bias > 0 else "harsh" if b.mean_bias < 0 else "unbiased"
        sig = "" if b.p_value is None else f", p={b.p_value:.3g}, d={_num(b.effect_size)}"
        lines.append(f"  Bias (judge - human): {b.mean_bias:+.4f}{ci} ({direction}{sig})")
    if m.calibration is not None:
        c = m.calibration
        lines += ["", f"Calibration of P(MET) (n={c.n}):",
                  (f"  Brier: {c.brier_score:.4f}  Log loss: {c.log_loss:.4f}  "
                  f"ECE: {c.ece:.4f}  AUROC: {_num(c.auroc)}")]
    if m.bootstrap is not None:
        bs = m.bootstrap
        lines += ["", f"Bootstrap CIs ({bs.confidence_level:.0%}, {bs.n_bootstrap} resamples):",
                  f"  Accuracy: {_ci(bs.get('criterion_accuracy'), True)}",
                  f"  Kappa:    {_ci(bs.get('mean_kappa'))}",
                  f"  RMSE:     {_ci(bs.get('score_rmse'))}",
                  f"  Spearman: {_ci(bs.get('score_spearman'))}"]
    lines += ["", "Per criterion:"]
    for c in m.per_criterion:
        parts = [f"n={c.support}", f"acc={_pct(c.accuracy)}", f"kappa={_num(c.kappa)}"]
        if c.scale == "binary":
            parts.append(f"F1={_pct(c.f1)}")
        if c.scale == "ordinal":
            parts += [f"adj={_pct(c.adjacent_accuracy)}", f"QWK={_num(c.weighted_kappa)}",
                      f"MAE={_num(c.mae)}"]
        if c.n_excluded:
            parts.append(f"excluded={c.n_excluded}")
        if c.mean_off_label_mass is not None:
            parts.append(f"off-label mass={c.mean_off_label_mass:.3f} (n={c.n_off_label})")
        lines.append(f"  {c.name} [{c.scale}]: " + ", ".join(parts))
    if m.inter_judge is not None:
        ij = m.inter_judge
        lines += ["", (f"Inter-judge ({', '.join(ij.judges)}): mean alpha {_num(ij.mean_alpha)}, "
                  f"mean Fleiss kappa {_num(ij.mean_fleiss_kappa)}")]
    if m.per_judge:
        lines += ["", "Per judge:"]
        for jid, jm in m.per_judge.items():
            lines.append(f"  {jid}: accuracy={_pct(jm.criterion_accuracy)}, "
                         f"kappa={_num(jm.mean_kappa)}, RMSE={_num(jm.score_rmse, 4)}")
            masses = [f"{c.name} {c.mean_off_label_mass:.3f}" for c in jm.per_criterion
                      if c.mean_off_label_mass is not None]
            if masses:
                lines.append("    off-label mass: " + ", ".join(masses))
    if m.warnings:
        lines += ["", "Warnings:"] + [f"  - {w}" for w in m.warnings]
    return "\n".join(lines)


def _rows(m: MetricsResult) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(level: str, name: str, metric: str, value: Any, boot: BootstrapResult | None = None) -> None:
        if isinstance(value, CorrelationResult):
            value = value.coefficient
        rows.append({"level": level, "name": name, "metric": metric, "value": value,
                     "ci_lower": boot.ci.lower if boot else None,
                     "ci_upper": boot.ci.upper if boot else None})

    boot = m.bootstrap
    for metric in ("criterion_accuracy", "criterion_precision", "criterion_recall", "criterion_f1",
                   "mean_kappa", "score_rmse", "score_mae", "score_spearman", "score_kendall",
                   "score_pearson"):
        add("aggregate", "all", metric, getattr(m, metric), boot.get(metric) if boot else None)
    if m.bias is not None:
        add("aggregate", "all", "bias", m.bias.mean_bias, boot.get("bias") if boot else None)
    if m.calibration is not None:
        for metric in ("brier_score", "log_loss", "ece", "auroc"):
            add("aggregate", "all", metric, getattr(m.calibration, metric))
    for c in m.per_criterion:
        cb = boot.per_criterion.get(c.name, {}) if boot else {}
        for metric in ("support", "accuracy", "kappa", "precision", "recall", "f1",
                       "weighted_kappa", "adjacent_accuracy", "spearman", "kendall", "rmse", "mae",
                       "mean_off_label_mass"):
            value = getattr(c, metric)
            if value is not None:
                add("criterion", c.name, metric, value, cb.get(metric))
    for jid, jm in (m.per_judge or {}).items():
        for metric in ("criterion_accuracy", "criterion_precision", "criterion_recall",
                       "criterion_f1", "mean_kappa", "score_rmse", "score_mae", "score_spearman",
                       "score_kendall", "score_pearson"):
            add("judge", jid, metric, getattr(jm, metric))
    if m.inter_judge is not None:
        for ic in m.inter_judge.per_criterion:
            add("inter_judge", ic.name, "krippendorff_alpha", ic.alpha)
            add("inter_judge", ic.name, "fleiss_kappa", ic.fleiss_kappa)
    return rows


def to_dataframe(m: MetricsResult) -> pd.DataFrame:
    """Long format: columns ``level``, ``name``, ``metric``, ``value``, ``ci_lower``,
    ``ci_upper``; levels ``aggregate``, ``criterion``, ``judge``, ``inter_judge``."""
    import pandas as pd

    return pd.DataFrame(_rows(m), columns=["level", "name", "metric", "value", "ci_lower", "ci_upper"])


def to_file(m: MetricsResult, path: str | Path) -> None:
    """Write ``m`` as indented JSON, creating parent folders."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(m.model_dump_json(indent=2), encoding="utf-8")


def save_metrics(
    db: sqlite_utils.Database, run_id: str, metrics: MetricsResult, options: dict[str, Any] | None = None
) -> int:
    """Store ``metrics`` for ``run_id`` in the ``metrics`` table (one transaction); return the row id.

    Each call adds a row (earlier computations are kept; :func:`load_metrics` reads the
    newest). The row holds ``metrics.model_dump_json()``, ``options`` as sorted-key JSON and
    the time of storing (``computed_utc``, ISO 8601 UTC). See docs/database.md, ``metrics``.

    Parameters
    ----------
    db : sqlite_utils.Database
        An open, writable results database from :func:`autorubric_local.store.open_db` (schema
        migrated, so the ``metrics`` table exists).
    run_id : str
        The run's id (``runs.id``, as in ``EvalResult.run_id``). It is not checked against the
        ``runs`` table.
    metrics : MetricsResult
        From :func:`~autorubric_local.metrics.compute_metrics`.
    options : dict of str to JSON-able values, optional
        How the metrics were computed, stored as ``options_json``. Default: the modes recorded
        in ``metrics``: ``{"cannot_assess": metrics.cannot_assess_mode, "na_mode":
        metrics.na_mode, "bootstrap": bool, "per_judge": bool}`` (the two booleans say whether
        ``metrics.bootstrap`` / ``metrics.per_judge`` are present).

    Returns
    -------
    int
        The new row's ``metrics.id`` (rowid), increasing with each call on a database.

    Raises
    ------
    TypeError
        ``options`` holds a value :func:`json.dumps` cannot encode.
    sqlite3.OperationalError
        ``database is locked`` (another writer held the lock past the busy timeout,
        :func:`~autorubric_local.store.transaction.write_transaction`), or a read-only
        database.
    """
    opts = options if options is not None else {
        "cannot_assess": metrics.cannot_assess_mode, "na_mode": metrics.na_mode,
        "bootstrap": metrics.bootstrap is not None, "per_judge": metrics.per_judge is not None,
    }
    return Store(db).save_metrics(run_id, metrics.model_dump_json(), opts)


def load_metrics(db: sqlite_utils.Database, run_id: str) -> MetricsResult | None:
    """The latest metrics stored for ``run_id`` by :func:`save_metrics`, or ``None``.

    "Latest" is the row with the highest id (the last stored), read from the ``metrics`` table
    and validated back into a :class:`MetricsResult`; fields added since the row was written
    are derived or left at their defaults.

    Parameters
    ----------
    db : sqlite_utils.Database
        A results database from :func:`autorubric_local.store.open_db` (or
        :func:`~autorubric_local.store.schema.open_db_read_only`).
    run_id : str
        The run's id (``runs.id``), not its name.

    Returns
    -------
    MetricsResult or None
        ``None`` when no metrics are stored for ``run_id`` (including an unknown run id).

    Raises
    ------
    pydantic.ValidationError
        The stored JSON no longer validates as a :class:`MetricsResult`.
    """
    text = Store(db).latest_metrics_json(run_id)
    return None if text is None else MetricsResult.model_validate_json(text)


def pooled_phi(per: list[CriterionMetrics]) -> float | None:
    """Matthews correlation of MET vs not MET over the binary criteria's pairs pooled (their
    confusion matrices collapsed to MET / not MET and summed); ``None`` when there are none
    or a margin is 0."""
    pooled = [[0, 0], [0, 0]]
    for c in per:
        if c.scale == "binary" and c.support and c.confusion_matrix and "MET" in c.labels:
            cm = met_vs_rest(c.confusion_matrix, c.labels.index("MET"))
            pooled = [[a + b for a, b in zip(row, other, strict=True)]
                      for row, other in zip(pooled, cm, strict=True)]
    return binary_rates(pooled, 0)["phi"] if any(map(any, pooled)) else None


def pooled_binary_kappa(per: list[CriterionMetrics]) -> float | None:
    """Cohen's kappa of the binary criteria's pairs pooled: their confusion matrices (rows
    human, columns judge, after the CANNOT_ASSESS mode) summed label by label, then
    :func:`~.agreement.kappa_from_confusion`. ``None`` when there are no binary pairs or the
    kappa is undefined (both sides use one label only)."""
    binary = [c for c in per if c.scale == "binary" and c.support and c.confusion_matrix and c.labels]
    if not binary:
        return None
    import numpy as np

    from autorubric_local.metrics.agreement import kappa_from_confusion  # scikit-learn, on demand

    labels = list(dict.fromkeys(label for c in binary for label in c.labels))
    pooled = np.zeros((len(labels), len(labels)))
    for c in binary:
        at = [labels.index(label) for label in c.labels]
        pooled[np.ix_(at, at)] += np.asarray(c.confusion_matrix, dtype=float)
    return kappa_from_confusion(pooled)
