"""Concepts written once (issue 55): Cohen's kappa and the item bootstrap.

Every kappa of the package is scikit-learn's ``cohen_kappa_score`` through
``metrics.agreement.cohen_kappa`` or the one vectorised confusion-matrix formula
(``kappas_from_confusions``), tested equal to it here; every percentile item bootstrap of the
metrics and of bias sweeps draws through ``metrics.resampling``, with the draws and intervals
the two modules had before they shared it (reference implementations below).
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from autorubric_local.bias.aggregate import IntervalMethod, bootstrap_mean
from autorubric_local.calibration.evaluation import agreement
from autorubric_local.calibration.rules import best_threshold, kappa, threshold_kappas
from autorubric_local.core.errors import InputError
from autorubric_local.indeterminacy.agreement import cohen_kappa as indeterminacy_kappa
from autorubric_local.metrics.agreement import (
    cohen_kappa,
    confusion_counts,
    kappa_from_confusion,
    kappas_from_confusions,
)
from autorubric_local.metrics.resampling import percentile_interval, resample_counts, resample_indices

# ---- Cohen's kappa ----------------------------------------------------------------------------


def test_helper_is_scikit_learn_with_none_for_undefined_and_no_warning() -> None:
    h, j = np.array([0, 0, 1, 1, 2, 2]), np.array([0, 1, 1, 1, 2, 0])
    for weights in (None, "linear", "quadratic"):
        assert cohen_kappa(h, j, [0, 1, 2], weights) == pytest.approx(
            cohen_kappa_score(h, j, labels=[0, 1, 2], weights=weights), abs=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the helper silences scikit-learn's 0/0 warning
        assert cohen_kappa(np.array([1, 1, 1]), np.array([1, 1, 1]), [0, 1]) is None


def test_hand_computed_kappa() -> None:
    # 2x2 table [[2, 1], [1, 2]]: p_o = 4/6, p_e = 1/2, kappa = (2/3 - 1/2) / (1/2) = 1/3.
    y, pred = np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 0, 1, 1])
    assert cohen_kappa(y, pred, [0, 1]) == pytest.approx(1 / 3)
    assert kappa(y, pred) == pytest.approx(1 / 3)
    assert indeterminacy_kappa(y, pred, 2) == pytest.approx(1 / 3)
    assert kappa_from_confusion(np.array([[2.0, 1.0], [1.0, 2.0]])) == pytest.approx(1 / 3)
    assert agreement(y, pred.astype(bool), np.array([0.1, 0.2, 0.6, 0.3, 0.7, 0.9])).kappa == pytest.approx(1 / 3)


def test_every_kappa_entry_point_is_the_helper() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(1, 30))
        y, pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
        expected = cohen_kappa(y, pred, [0, 1])
        assert kappa(y, pred) == expected
        assert indeterminacy_kappa(y, pred, 2) == expected
        assert agreement(y, pred, rng.random(n)).kappa == expected


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_vectorised_formula_equals_the_helper(weights: str | None) -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        k, n = int(rng.integers(2, 5)), int(rng.integers(1, 25))
        h, j = rng.integers(0, k, n), rng.integers(0, k, n)
        if rng.random() < 0.2:
            j = h.copy()  # includes both raters constant on one label now and then
        if rng.random() < 0.1:
            h[:] = j[:] = 0
        labels = list(range(k))
        reference = cohen_kappa(h, j, labels, weights)
        one = kappa_from_confusion(confusion_counts(h, j, k), weights)
        assert (one is None) == (reference is None)
        if reference is not None:
            assert one == pytest.approx(reference, abs=1e-12)
        # weighted counts (bootstrap multiplicities) equal repeated pairs
        w = rng.integers(0, 3, n)
        reference_w = cohen_kappa(np.repeat(h, w), np.repeat(j, w), labels, weights) if w.sum() else None
        weighted = kappa_from_confusion(confusion_counts(h, j, k, w.astype(float)), weights)
        assert (weighted is None) == (reference_w is None)
        if reference_w is not None:
            assert weighted == pytest.approx(reference_w, abs=1e-12)


def test_stacked_matrices_give_each_matrix_kappa() -> None:
    cms = np.array([[[2.0, 1.0], [1.0, 2.0]], [[3.0, 0.0], [0.0, 0.0]],
                    [[0.0, 0.0], [0.0, 0.0]], [[0.0, 2.0], [2.0, 0.0]]])
    out = kappas_from_confusions(cms)
    assert out.shape == (4,)
    assert out[0] == pytest.approx(1 / 3) and np.isnan(out[1]) and np.isnan(out[2]) and out[3] == pytest.approx(-1.0)


def test_threshold_search_fast_path_equals_the_helper() -> None:
    rng = np.random.default_rng(3)
    for _ in range(100):
        n = int(rng.integers(2, 40))
        y = rng.integers(0, 2, n)
        p = rng.random(n).round(int(rng.integers(1, 3)))
        thresholds = np.concatenate([np.unique(p), [-0.5, 1.5]])
        fast = threshold_kappas(y, p, thresholds)
        for t, value in zip(thresholds, fast, strict=True):
            reference = cohen_kappa(y, (p >= t).astype(int), [0, 1])
            if reference is None:
                assert np.isnan(value)
            else:
                assert value == pytest.approx(reference, abs=1e-12)
        if 0 < y.sum() < n and np.unique(p).size > 1:
            chosen = best_threshold(y, p)
            values = np.unique(p)
            candidates = (values[:-1] + values[1:]) / 2  # best_threshold's candidates: midpoints
            best = max(k for t in candidates if (k := kappa(y, (p >= t).astype(int))) is not None)
            assert kappa(y, (p >= chosen).astype(int)) == pytest.approx(best, abs=1e-12)


# ---- the item bootstrap -----------------------------------------------------------------------


def test_resamples_are_one_draw_per_resample_and_counts_match_indices() -> None:
    rows = list(resample_indices(np.random.default_rng(4), 7, 5))
    reference = np.random.default_rng(4)
    for row in rows:
        assert np.array_equal(row, reference.integers(0, 7, 7))
    counts = list(resample_counts(np.random.default_rng(4), 7, 5))
    for row, count in zip(rows, counts, strict=True):
        assert count.dtype == float and count.sum() == 7
        assert np.array_equal(count, np.bincount(row, minlength=7))
    assert [c.size for c in resample_counts(np.random.default_rng(0), 0, 3)] == [0, 0, 0]


def test_percentile_interval_is_numpy_quantile() -> None:
    values = np.arange(101, dtype=float)  # quantiles of 0..100 are the percent points themselves
    assert percentile_interval(values, 0.9) == pytest.approx((5.0, 95.0))
    assert percentile_interval([1.0, 2.0], 0.5) == pytest.approx((1.25, 1.75))
    with pytest.raises(InputError, match="values"):
        percentile_interval([], 0.95)


def _old_bootstrap_mean(
    values: list[float], n_bootstrap: int, confidence: float, seed: int, key: str
) -> tuple[float, float]:
    """bias.aggregate.bootstrap_mean's draws before issue 55: one (B, n) call, alpha and 1 - alpha."""
    data = np.asarray(values, dtype=float)
    digest = hashlib.sha256(f"{seed}\x1f{key}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    means = data[rng.integers(0, data.size, size=(n_bootstrap, data.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


@pytest.mark.parametrize("n", [2, 3, 8, 31])
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95])
def test_sweep_bootstrap_unchanged_by_the_shared_resampler(n: int, confidence: float) -> None:
    values = np.random.default_rng(n).random(n).round(2).tolist()
    estimate = bootstrap_mean(values, n_bootstrap=300, confidence=confidence, seed=9, key="judge\x1f0")
    assert estimate.method is IntervalMethod.BOOTSTRAP
    assert (estimate.ci_low, estimate.ci_high) == _old_bootstrap_mean(values, 300, confidence, 9, "judge\x1f0")


def test_metrics_and_sweep_bootstraps_draw_the_same_resamples() -> None:
    # The mean of a value per item from the metrics' multiplicities equals the sweep's
    # index-resample mean on the same generator: one resampler behind both.
    values = np.array([0.1, 0.4, 0.4, 0.9, 1.0])
    by_counts = [float(np.sum(w * values) / w.sum()) for w in resample_counts(np.random.default_rng(2), 5, 50)]
    by_indices = [float(values[i].mean()) for i in resample_indices(np.random.default_rng(2), 5, 50)]
    assert by_counts == pytest.approx(by_indices, abs=1e-12)
