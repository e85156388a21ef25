"""Percentile bootstrap over items (Efron & Tibshirani, 1993, ch. 13).

Each resample draws ``n_items`` items with replacement (``numpy.random.Generator`` seeded
with ``seed``; the package's one resampler, :func:`~autorubric_local.metrics.resampling.resample_counts`)
and recomputes the headline and per-criterion figures with every pair of a
drawn item counted as often as the item was drawn, so criteria stay paired within items.
The interval is ``[q_{(1-c)/2}, q_{(1+c)/2}]`` of the resampled values that are defined
(:func:`~autorubric_local.metrics.resampling.percentile_interval`). Classification figures come from weighted
confusion matrices (:func:`~autorubric_local.metrics.agreement.kappa_from_confusion`,
tested equal to scikit-learn); correlations from scipy on the resampled arrays.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autorubric_local.metrics.agreement import (
    confusion_counts,
    kappa_from_confusion,
    label_codes,
    prf_from_confusion,
)
from autorubric_local.metrics.extract import MET, AlignedData, CriterionPairs
from autorubric_local.metrics.resampling import percentile_interval, resample_counts
from autorubric_local.metrics.scores import correlation
from autorubric_local.metrics.types import (
    BootstrapResult,
    BootstrapResults,
    CannotAssessMode,
    ConfidenceInterval,
    NAMode,
)

__all__ = ["bootstrap_metrics", "point_figures"]

Figures = dict[str, float | None]


class _Prepared:
    """Per-criterion arrays re-indexed to dense label positions, built once."""

    def __init__(self, pairs: CriterionPairs, ca: CannotAssessMode, na: NAMode) -> None:
        self.key = pairs.key
        self.scale = pairs.scale
        codes = label_codes(pairs, ca, na)
        lookup = np.full(len(pairs.labels), -1, dtype=int)
        lookup[codes] = np.arange(len(codes))
        item_pos, h, j = pairs.arrays()
        self.item_pos = item_pos
        self.h = lookup[h] if h.size else h
        self.j = lookup[j] if j.size else j
        self.n_labels = len(codes)
        self.met = codes.index(MET) if pairs.scale == "binary" else -1
        if pairs.scale == "ordinal" and h.size:
            position = np.asarray(pairs.position, dtype=int)
            ph, pj = position[h], position[j]
            ok = (ph >= 0) & (pj >= 0)
            self.ord_item_pos, self.ph, self.pj = item_pos[ok], ph[ok], pj[ok]
            self.n_positions = int(position.max()) + 1
        else:
            self.ord_item_pos = np.empty(0, dtype=int)

    def confusion(self, w: np.ndarray) -> np.ndarray:
        return confusion_counts(self.h, self.j, self.n_labels, w[self.item_pos])

    def figures(self, w: np.ndarray) -> tuple[Figures, np.ndarray]:
        cm = self.confusion(w)
        total = cm.sum()
        out: Figures = {
            "accuracy": float(np.trace(cm) / total) if total > 0 else None,
            "kappa": kappa_from_confusion(cm),
        }
        if self.ord_item_pos.size:
            ww = w[self.ord_item_pos]
            pcm = confusion_counts(self.ph, self.pj, self.n_positions, ww)
            out["weighted_kappa"] = kappa_from_confusion(pcm, "quadratic")
            out["adjacent_accuracy"] = (
                float(np.sum(ww * (np.abs(self.ph - self.pj) <= 1)) / ww.sum())
                if ww.sum() > 0 else None)
        return out, cm


def _figures(prepared: list[_Prepared], data: AlignedData, w: np.ndarray,
             score_pos: np.ndarray, js: np.ndarray, hs: np.ndarray) -> tuple[Figures, dict[str, Figures]]:
    per: dict[str, Figures] = {}
    correct = total = 0.0
    binary_cm: np.ndarray | None = None
    kappas = []
    for p in prepared:
        figs, cm = p.figures(w)
        per[p.key] = figs
        correct += float(np.trace(cm))
        total += float(cm.sum())
        if figs["kappa"] is not None:
            kappas.append(figs["kappa"])
        if p.scale == "binary":
            binary_cm = cm if binary_cm is None else binary_cm + cm
    head: Figures = {
        "criterion_accuracy": correct / total if total > 0 else None,
        "mean_kappa": float(np.mean(kappas)) if kappas else None,
    }
    if binary_cm is not None and binary_cm.sum() > 0:
        met = next(p.met for p in prepared if p.scale == "binary")
        prec, rec, f1 = prf_from_confusion(binary_cm, met)
        head.update(criterion_precision=prec, criterion_recall=rec, criterion_f1=f1)
    sw = w[score_pos]
    if sw.sum() > 0:
        diff = js - hs
        head["score_rmse"] = float(np.sqrt(np.sum(sw * diff**2) / sw.sum()))
        head["score_mae"] = float(np.sum(sw * np.abs(diff)) / sw.sum())
        head["bias"] = float(np.sum(sw * diff) / sw.sum())
        rj, rh = np.repeat(js, sw.astype(int)), np.repeat(hs, sw.astype(int))
        for method in ("spearman", "kendall", "pearson"):
            res = correlation(rj, rh, method)  # type: ignore[arg-type]
            head[f"score_{method}"] = None if res is None else res.coefficient
    return head, per


def point_figures(data: AlignedData, ca: CannotAssessMode, na: NAMode) -> tuple[Figures, dict[str, Figures]]:
    """The bootstrapped figures on the full data (every item counted once)."""
    prepared = [_Prepared(p, ca, na) for p in data.criteria]
    w = np.ones(len(data.item_ids))
    return _figures(prepared, data, w, np.asarray(data.score_item_pos, dtype=int),
                    np.asarray(data.judge_score), np.asarray(data.human_score))


def _interval(values: list[float], estimate: float | None, c: float, n_bootstrap: int) -> BootstrapResult:
    arr = np.asarray(values, dtype=float)
    lo, hi = percentile_interval(arr, c)
    return BootstrapResult(estimate=estimate, ci=ConfidenceInterval(lower=lo, upper=hi,
                                                                    confidence_level=c, method="percentile"),
                           std_error=float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
                           n_valid=int(arr.size), n_bootstrap=n_bootstrap)


def bootstrap_metrics(
    data: AlignedData,
    ca: CannotAssessMode,
    na: NAMode,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int | None = None,
    warn: list[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> BootstrapResults:
    """Percentile intervals of the headline and per-criterion figures.

    Parameters
    ----------
    data : AlignedData
    ca, na : the modes ``data`` was built with
    n_bootstrap : int >= 1
    confidence_level : float in (0, 1)
    seed : int or None
        ``numpy.random.default_rng(seed)``; the same seed gives the same intervals.
    warn : list of str, optional
        Receives the names of figures undefined in every resample.

    Returns
    -------
    BootstrapResults
    """
    rng = np.random.default_rng(seed)
    n = len(data.item_ids)
    prepared = [_Prepared(p, ca, na) for p in data.criteria]
    score_pos = np.asarray(data.score_item_pos, dtype=int)
    js, hs = np.asarray(data.judge_score, dtype=float), np.asarray(data.human_score, dtype=float)
    est_head, est_per = _figures(prepared, data, np.ones(n), score_pos, js, hs)
    head_samples: dict[str, list[float]] = {k: [] for k in est_head}
    per_samples: dict[str, dict[str, list[float]]] = {k: {m: [] for m in v} for k, v in est_per.items()}
    for b, w in enumerate(resample_counts(rng, n, n_bootstrap)):
        head, per = _figures(prepared, data, w, score_pos, js, hs)
        for k, v in head.items():
            if v is not None and k in head_samples:
                head_samples[k].append(v)
        for key, figs in per.items():
            for m, v in figs.items():
                if v is not None:
                    per_samples[key][m].append(v)
        if progress is not None:
            progress(b)
    metrics: dict[str, BootstrapResult] = {}
    for k, vals in head_samples.items():
        if vals:
            metrics[k] = _interval(vals, est_head[k], confidence_level, n_bootstrap)
        elif warn is not None:
            warn.append(f"bootstrap: {k} undefined in every resample")
    per_criterion: dict[str, dict[str, BootstrapResult]] = {}
    for key, figs in per_samples.items():
        per_criterion[key] = {m: _interval(v, est_per[key][m], confidence_level, n_bootstrap)
                              for m, v in figs.items() if v}
    return BootstrapResults(n_bootstrap=n_bootstrap, confidence_level=confidence_level, seed=seed,
                            metrics=metrics, per_criterion=per_criterion)
