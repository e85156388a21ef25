"""The pure statistics of judge-corrected estimates: hand-computed cases, reference libraries.

``ppi_py`` (the PPI authors' package) is the reference for the classical CLT interval and PPI++;
``statsmodels`` (a dependency of ``ppi_py``) for the Wilson interval. Both are test-only: the
estimators depend on numpy and scipy alone. Coverage by simulation is in
``tests/test_estimate_coverage.py``.
"""

from __future__ import annotations

import math
from dataclasses import FrozenInstanceError

import numpy as np
import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.estimates.methods import (
    Interval,
    active_mean,
    classical_mean,
    judge_mean,
    ppi_mean,
    rogan_gladen,
    unpaired_difference,
)
from autorubric_local.estimates.power import (
    judge_only_labels_for_width,
    labels_for_width,
    ppi_labels_for_width,
)
from autorubric_local.estimates.sampling import draw, inclusion_probabilities, item_uncertainty

Z90 = 1.6448536269514722  # norm.ppf(0.95)
Z95 = 1.959963984540054  # norm.ppf(0.975)


# --------------------------------------------------------------------------- classical, judge


def test_classical_mean_hand_computed() -> None:
    res = classical_mean([1.0, 2.0, 3.0, 4.0], 0.1)
    se = math.sqrt((2.25 + 0.25 + 0.25 + 2.25) / 3 / 4)  # sample sd² = 5/3
    t3 = 2.3533634348018264  # scipy.stats.t.ppf(0.95, 3)
    assert res.estimate == pytest.approx(2.5)
    assert res.std_error == pytest.approx(se)
    assert res.ci_low == pytest.approx(2.5 - t3 * se)
    assert res.ci_high == pytest.approx(2.5 + t3 * se)
    assert res.n_effective == 4
    assert res.lam is None and res.note is None


def test_classical_mean_binary_is_wilson() -> None:
    # 1 success in 10 at 95%: Wilson (0.0179, 0.4042), the textbook value
    res = classical_mean([1.0] + [0.0] * 9, 0.05)
    centre = (0.1 + Z95**2 / 20) / (1 + Z95**2 / 10)
    half = Z95 / (1 + Z95**2 / 10) * math.sqrt(0.09 / 10 + Z95**2 / 400)
    assert res.ci_low == pytest.approx(centre - half)
    assert res.ci_high == pytest.approx(centre + half)
    assert res.ci_low == pytest.approx(0.017876, abs=1e-6)
    assert res.ci_high == pytest.approx(0.404150, abs=1e-6)
    assert res.estimate == pytest.approx(0.1)
    assert res.std_error == pytest.approx(math.sqrt(0.09 / 10))
    assert res.note is not None and "Wilson" in res.note


def test_classical_mean_wilson_matches_statsmodels() -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    for n in (2, 7, 50):
        for k in range(n + 1):
            for alpha in (0.05, 0.1, 0.32):
                res = classical_mean(np.r_[np.ones(k), np.zeros(n - k)], alpha)
                low, high = proportion.proportion_confint(k, n, alpha, method="wilson")
                assert res.ci_low == pytest.approx(low, abs=1e-12)
                assert res.ci_high == pytest.approx(high, abs=1e-12)


def test_classical_mean_all_equal_binary_still_has_width() -> None:
    res = classical_mean([0.0] * 20, 0.1)
    assert res.estimate == 0.0 and res.std_error == 0.0
    assert res.ci_low == 0.0 and res.ci_high is not None and res.ci_high > 0.05


def test_classical_mean_matches_scipy_t_and_tends_to_ppi_py() -> None:
    from scipy import stats

    baselines = pytest.importorskip("ppi_py.baselines")
    rng = np.random.default_rng(0)
    for trial in range(20):
        y = rng.normal(loc=trial, scale=1 + trial, size=5 + 7 * trial)
        for alpha in (0.05, 0.1, 0.3):
            res = classical_mean(y, alpha)
            low, high = stats.ttest_1samp(y, 0.0).confidence_interval(1 - alpha)
            assert abs(res.ci_low - low) < 1e-9 and abs(res.ci_high - high) < 1e-9
    y = rng.normal(size=20_000)  # large n: the t interval is ppi_py's CLT interval
    low, high = baselines.classical_mean_ci(y, alpha=0.1)
    res = classical_mean(y, 0.1)
    assert abs(res.ci_low - low) < 1e-4 and abs(res.ci_high - high) < 1e-4


def test_judge_mean_has_no_interval() -> None:
    res = judge_mean([0.2, 0.4, 0.9])
    assert res.estimate == pytest.approx(0.5)
    assert res.ci_low is None and res.ci_high is None and res.std_error is None
    assert res.n_effective is None
    assert res.note is not None and "biased" in res.note


def test_interval_is_frozen() -> None:
    res = Interval(0.5, 0.4, 0.6, 0.05)
    with pytest.raises(FrozenInstanceError):
        res.estimate = 0.7  # type: ignore[misc]


# --------------------------------------------------------------------------- PPI++


def test_ppi_mean_hand_computed_lam_one() -> None:
    y, fl, fu = [1.0, 0.0, 1.0, 0.0], [0.8, 0.2, 0.6, 0.4], [0.5, 0.7]
    res = ppi_mean(y, fl, fu, 0.1, lam=1.0)
    # mean(fu) = 0.6, mean(y - fl) = 0; Var(fu)/2 = 0.005, Var(y - fl)/4 = 0.1/4
    assert res.estimate == pytest.approx(0.6)
    assert res.std_error == pytest.approx(math.sqrt(0.03))
    assert res.ci_low == pytest.approx(0.6 - Z90 * math.sqrt(0.03))
    assert res.lam == 1.0
    assert res.n_effective == pytest.approx(0.25 / 0.03)


def test_ppi_mean_hand_computed_tuned_lam() -> None:
    y, fl, fu = [1.0, 0.0, 1.0, 0.0], [0.8, 0.2, 0.6, 0.4], [0.5, 0.7]
    res = ppi_mean(y, fl, fu, 0.1)
    # Cov_n(y, fl) = 0.1; Var(all f, ddof=1) = 0.28/6 ... = 0.0466..; lam = 0.1 / (3 * 0.04666..) = 5/7
    assert res.lam == pytest.approx(5 / 7)
    lam = 5 / 7
    assert res.estimate == pytest.approx(lam * 0.6 + 0.5 - lam * 0.5)


def test_ppi_mean_lam_zero_is_ppi_py_classical_clt() -> None:
    baselines = pytest.importorskip("ppi_py.baselines")
    rng = np.random.default_rng(3)
    y, fl, fu = rng.normal(size=30), rng.normal(size=30), rng.normal(size=100)
    ppi = ppi_mean(y, fl, fu, 0.1, lam=0.0)
    low, high = baselines.classical_mean_ci(y, alpha=0.1)
    assert ppi.estimate == pytest.approx(y.mean())
    assert ppi.ci_low == pytest.approx(low) and ppi.ci_high == pytest.approx(high)


def test_ppi_mean_constant_judge_falls_back_to_classical() -> None:
    res = ppi_mean([1.0, 0.0, 1.0], [0.5, 0.5, 0.5], [0.5] * 10, 0.1)
    assert res.lam == 0.0 and res.note is not None and "lam set to 0" in res.note
    assert res.estimate == pytest.approx(2 / 3)


@pytest.mark.parametrize("lam", [None, 0.0, 0.3, 1.0, 1.5])
def test_ppi_mean_matches_ppi_py(lam: float | None) -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(1)
    for trial in range(25):
        n, big_n = int(rng.integers(5, 80)), int(rng.integers(10, 500))
        if trial % 2:  # binary labels with a probability judge, as in grading
            p_lab, p_unl = rng.random(n), rng.random(big_n)
            y = (rng.random(n) < p_lab).astype(float)
            fl, fu = np.clip(p_lab + rng.normal(0, 0.2, n), 0, 1), p_unl
        else:  # continuous, shifted and noisy predictions
            y = rng.normal(size=n) * 2 + 1
            fl, fu = y + rng.normal(0.5, 1.0, n), rng.normal(1.5, 2.0, big_n)
        for alpha in (0.05, 0.1):
            res = ppi_mean(y, fl, fu, alpha, lam=lam)
            low, high = ppi_py.ppi_mean_ci(y, fl, fu, alpha=alpha, lam=lam)
            point = ppi_py.ppi_mean_pointestimate(y, fl, fu, lam=lam)
            assert abs(res.ci_low - float(np.squeeze(low))) < 1e-9
            assert abs(res.ci_high - float(np.squeeze(high))) < 1e-9
            assert abs(res.estimate - float(np.squeeze(point))) < 1e-9


# --------------------------------------------------------------------------- active


def _active_case() -> dict[str, np.ndarray]:
    return {
        "f": np.array([0.2, 0.4, 0.6, 0.8]),
        "y": np.array([1.0, np.nan, 0.0, 1.0]),
        "drawn": np.array([True, False, True, True]),
        "pi": np.array([0.5, 0.5, 1.0, 1.0]),
    }


def test_active_mean_hand_computed() -> None:
    c = _active_case()
    res = active_mean(c["f"], c["y"], c["drawn"], c["pi"], 0.1, lam=1.0)
    # terms f + (y - f) xi/pi: 0.2 + 0.8*2 = 1.8, 0.4, 0.6 - 0.6 = 0, 0.8 + 0.2 = 1.0
    assert res.estimate == pytest.approx(0.8)
    assert res.std_error == pytest.approx(math.sqrt(0.46 / 4))
    assert res.ci_high == pytest.approx(0.8 + Z90 * math.sqrt(0.115))
    assert res.n_effective == pytest.approx(np.var([1.0, 0.0, 1.0]) / 0.115)
    res0 = active_mean(c["f"], c["y"], c["drawn"], c["pi"], 0.1, lam=0.0)
    assert res0.estimate == pytest.approx((2 + 0 + 0 + 1) / 4)  # Horvitz-Thompson mean of y


def test_active_mean_tuned_lam_and_jackknife() -> None:
    c = _active_case()
    res = active_mean(c["f"], c["y"], c["drawn"], c["pi"], 0.1)
    # A = [2, 0, 0, 1], B = [-0.2, 0.4, 0, 0]: -Cov/Var = 0.1375 / 0.0475 > 1, clipped to 1
    assert res.lam == 1.0 and res.estimate == pytest.approx(0.8)
    # the jackknife, by brute force: leave each item out, re-tune lam, recompute
    a, b = np.array([2.0, 0.0, 0.0, 1.0]), np.array([-0.2, 0.4, 0.0, 0.0])
    thetas = []
    for i in range(4):
        aa, bb = np.delete(a, i), np.delete(b, i)
        cov = np.mean((aa - aa.mean()) * (bb - bb.mean()))
        lam = float(np.clip(-cov / np.var(bb), 0, 1)) if np.var(bb) > 0 else 0.0
        thetas.append(aa.mean() + lam * bb.mean())
    jack = math.sqrt(3 / 4 * np.sum((np.array(thetas) - np.mean(thetas)) ** 2))
    assert res.std_error == pytest.approx(jack)


def test_active_mean_jackknife_on_random_data() -> None:
    rng = np.random.default_rng(4)
    big_n = 60
    f = rng.random(big_n)
    pi = np.clip(rng.random(big_n), 0.1, 1.0)
    drawn = (rng.random(big_n) < pi) | (pi == 1.0)
    y = np.where(drawn, (rng.random(big_n) < f).astype(float), np.nan)
    res = active_mean(f, y, drawn, pi, 0.1)
    a, b = np.where(drawn, y, 0.0) * drawn / pi, f * (1 - drawn / pi)
    thetas = []
    for i in range(big_n):
        aa, bb = np.delete(a, i), np.delete(b, i)
        lam = float(np.clip(-np.mean((aa - aa.mean()) * (bb - bb.mean())) / np.var(bb), 0, 1))
        thetas.append(aa.mean() + lam * bb.mean())
    expected = math.sqrt((big_n - 1) / big_n * np.sum((np.array(thetas) - np.mean(thetas)) ** 2))
    assert res.std_error == pytest.approx(expected, rel=1e-10)


def test_active_mean_everything_labelled_is_the_mean() -> None:
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    res = active_mean([0.9, 0.1, 0.3, 0.7, 0.5], y, [True] * 5, [1.0] * 5, 0.1)
    assert res.estimate == pytest.approx(0.6) and res.lam == 0.0


# --------------------------------------------------------------------------- Rogan-Gladen


def test_rogan_gladen_hand_computed() -> None:
    y = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    verdicts = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]  # se = 3/4, sp = 4/6
    unlabelled = [1] * 6 + [0] * 4  # q = 0.6
    res = rogan_gladen(y, verdicts, unlabelled, 0.5)
    # p = (0.6 + 2/3 - 1) / (3/4 + 2/3 - 1) = 0.64
    # var = [0.24/10 + 0.64² Var(se) + 0.36² Var(sp)] / (5/12)², the proportions' variances from
    # Agresti-Coull's adjusted estimates (x + z²/2) / (n + z²) over n + z² trials
    z50 = 0.6744897501960817
    z2 = z50 * z50
    a_se, a_sp = (3 + z2 / 2) / (4 + z2), (4 + z2 / 2) / (6 + z2)
    var_se, var_sp = a_se * (1 - a_se) / (4 + z2), a_sp * (1 - a_sp) / (6 + z2)
    se = math.sqrt((0.24 / 10 + 0.64**2 * var_se + 0.36**2 * var_sp) / (5 / 12) ** 2)
    assert res.estimate == pytest.approx(0.64)
    assert res.std_error == pytest.approx(se)
    assert res.ci_low == pytest.approx(0.64 - z50 * se)
    assert res.ci_high == pytest.approx(0.64 + z50 * se)
    assert res.n_effective == pytest.approx(0.24 / se**2)
    wide = rogan_gladen(y, verdicts, unlabelled, 0.1)  # 0.64 ± 0.865: clipped to [0, 1]
    assert (wide.ci_low, wide.ci_high) == (0.0, 1.0)


def test_rogan_gladen_undefined_cases() -> None:
    chance = rogan_gladen([1, 1, 0, 0], [1, 0, 1, 0], [1, 0], 0.1)  # se = sp = 0.5, J = 0
    assert math.isnan(chance.estimate) and chance.ci_low is None and chance.std_error is None
    assert chance.note is not None and "chance" in chance.note
    worse = rogan_gladen([1, 1, 0, 0], [0, 0, 1, 1], [1, 0], 0.1)  # J = -1
    assert math.isnan(worse.estimate) and worse.note is not None
    no_negative = rogan_gladen([1, 1, 1], [1, 0, 1], [1, 0], 0.1)
    assert math.isnan(no_negative.estimate) and no_negative.note is not None
    assert "negative" in no_negative.note
    no_positive = rogan_gladen([0, 0], [1, 0], [1, 0], 0.1)
    assert no_positive.note is not None and "positive" in no_positive.note


def test_rogan_gladen_clips_and_says_so() -> None:
    # se = 1, sp = 0.8: q = 0.1 gives (0.1 + 0.8 - 1) / 0.8 = -0.125, clipped to 0
    y = [1] * 10 + [0] * 10
    verdicts = [1] * 10 + [1, 1] + [0] * 8
    res = rogan_gladen(y, verdicts, [1] + [0] * 9, 0.1)
    assert res.estimate == 0.0 and res.note is not None and "clipped" in res.note
    assert res.ci_low == 0.0


def test_rogan_gladen_refuses_a_judge_that_says_met_for_nearly_everything() -> None:
    # The real-data failure (RiceChem q1 partial_pe_ie_explanation, truth 0.17, a judge saying
    # MET for 99% of items; 20 labels): sensitivity estimated as exactly 1 from 3 positives,
    # specificity 1/17. J = 0.06 > 0, but its lower bound is below 0: the old interval covered 0%.
    y = [1] * 3 + [0] * 17
    verdicts = [1] * 3 + [1] * 16 + [0]
    res = rogan_gladen(y, verdicts, [1] * 99 + [0], 0.1)
    assert math.isnan(res.estimate) and res.ci_low is None and "lower" in (res.note or "")


# --------------------------------------------------------------------------- differences


def test_unpaired_difference() -> None:
    a, b = Interval(0.6, None, None, 0.03), Interval(0.5, None, None, 0.04)
    res = unpaired_difference(a, b, 0.1)
    assert res.estimate == pytest.approx(0.1) and res.std_error == pytest.approx(0.05)
    assert res.ci_low == pytest.approx(0.1 - Z90 * 0.05) and res.ci_high == pytest.approx(0.1 + Z90 * 0.05)
    no_se = unpaired_difference(a, judge_mean([0.5, 0.7]), 0.1)
    assert no_se.estimate == pytest.approx(0.0) and no_se.ci_low is None and no_se.note is not None
    undefined = unpaired_difference(a, Interval(math.nan, None, None, None), 0.1)
    assert math.isnan(undefined.estimate) and undefined.ci_low is None


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, math.nan, True, "0.1", None])
def test_bad_alpha(alpha: object) -> None:
    with pytest.raises(InputError, match="alpha must be in"):
        classical_mean([1.0, 2.0], alpha)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: classical_mean([[1.0, 2.0]], 0.1), "y must be 1-d"),
        (lambda: classical_mean([1.0], 0.1), "y needs at least 2 values, got 1"),
        (lambda: classical_mean([1.0, math.nan], 0.1), "y must be finite, got nan at index 1"),
        (lambda: classical_mean(["a", "b"], 0.1), "y must be numeric"),
        (lambda: judge_mean([]), "f_all needs at least 1 values"),
        (lambda: ppi_mean([1.0, 0.0], [0.5], [0.5], 0.1), "f_labelled needs at least 2"),
        (lambda: ppi_mean([1.0, 0.0, 1.0], [0.5, 0.5], [0.5], 0.1), "y has 3, f_labelled has 2"),
        (lambda: ppi_mean([1.0, 0.0], [0.5, 0.5], [math.inf], 0.1), "f_unlabelled must be finite"),
        (lambda: ppi_mean([1.0, 0.0], [0.5, 0.5], [0.5], 0.1, lam=math.nan), "lam must be a finite"),
        (lambda: active_mean([0.5, 0.5], [1.0, 0.0], [True, True], [1.0, 0.0], 0.1),
         "pi must be in \\(0, 1\\], got 0.0 at index 1"),
        (lambda: active_mean([0.5, 0.5], [1.0, 0.0], [True, True], [1.0, 1.2], 0.1), "pi must be in \\(0, 1\\]"),
        (lambda: active_mean([0.5, 0.5], [1.0, 0.0], [1, 2], [1.0, 1.0], 0.1), "drawn must be 0/1, got 2.0"),
        (lambda: active_mean([0.5] * 3, [1.0, 0.0, 0.0], [True, True, False], [1.0, 1.0, 1.0], 0.1),
         "drawn is False at index 2 where pi is 1"),
        (lambda: active_mean([0.5] * 3, [1.0, np.nan, 0.0], [True, True, False], [1.0, 1.0, 0.5], 0.1),
         "y must be finite where drawn, got nan at index 1"),
        (lambda: active_mean([0.5] * 3, [1.0, np.nan, np.nan], [True, False, False], [1.0, 0.5, 0.5], 0.1),
         "at least 2 drawn"),
        (lambda: active_mean([0.5] * 3, [1.0, 0.0], [True, True, False], [1.0, 1.0, 0.5], 0.1),
         "f has 3, y has 2"),
        (lambda: rogan_gladen([1, 0.5], [1, 0], [1], 0.1), "y must be 0/1, got 0.5 at index 1"),
        (lambda: rogan_gladen([1, 0], [1, 0], [2], 0.1), "verdict_unlabelled must be 0/1"),
        (lambda: unpaired_difference(Interval(1, None, None, 0.1), Interval(0, None, None, 0.1), 2),
         "alpha"),
    ],
)
def test_bad_input_names_argument_and_value(call: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        call()  # type: ignore[operator]


# --------------------------------------------------------------------------- sampling


def test_inclusion_probabilities_hand_computed_with_cap() -> None:
    u = np.array([1.0, 1.0] + [0.0] * 8)
    # share = 0.8 u / 0.2 + 0.2 = [4.2, 4.2, 0.2 x 8] (sum 10); 5 * share / 10 = [2.1, 2.1, 0.1...]
    # cap the two at 1, spread the other 3 over eight equal shares: 0.375 each
    pi = inclusion_probabilities(u, budget=5, mix=0.2)
    np.testing.assert_allclose(pi, [1.0, 1.0] + [0.375] * 8)


def test_inclusion_probabilities_budget_cap_and_floor() -> None:
    rng = np.random.default_rng(2)
    for trial in range(30):
        n_items = int(rng.integers(5, 400))
        u = rng.exponential(size=n_items) ** 3  # heavy tail: many items hit the cap
        u[rng.random(n_items) < 0.3] = 0.0
        budget = float(rng.uniform(0.5, n_items))
        mix = float(rng.uniform(0.05, 1.0))
        pi = inclusion_probabilities(u, budget, mix)
        assert pi.shape == (n_items,)
        assert pi.sum() == pytest.approx(budget, rel=1e-12)
        assert pi.max() <= 1.0
        assert pi.min() >= mix * budget / n_items * (1 - 1e-12)  # the uniform floor
        assert np.all(np.diff(pi[np.argsort(u, kind="stable")]) >= -1e-12)  # monotone in u


def test_inclusion_probabilities_edge_cases() -> None:
    np.testing.assert_allclose(inclusion_probabilities([0.0] * 4, 2), [0.5] * 4)
    np.testing.assert_allclose(inclusion_probabilities([0.3, 0.1, 0.0], 3), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(inclusion_probabilities([0.3, 0.1], 1, mix=1.0), [0.5, 0.5])
    with pytest.raises(InputError, match="budget must be in \\(0, 3\\]"):
        inclusion_probabilities([0.3, 0.1, 0.0], 4)
    with pytest.raises(InputError, match="budget"):
        inclusion_probabilities([0.3, 0.1, 0.0], 0)
    with pytest.raises(InputError, match="mix must be in \\(0, 1\\], got 0"):
        inclusion_probabilities([0.3, 0.1], 1, mix=0)
    with pytest.raises(InputError, match="uncertainty must be >= 0, got -0.1 at index 1"):
        inclusion_probabilities([0.3, -0.1], 1)


def test_draw_is_seeded_bernoulli() -> None:
    pi = np.full(20000, 0.3)
    pi[:10] = 0.0
    pi[10:20] = 1.0
    a, b, c = draw(pi, 7), draw(pi, 7), draw(pi, 8)
    assert a.dtype == bool and a.shape == (20000,)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not a[:10].any() and a[10:20].all()
    assert a[20:].mean() == pytest.approx(0.3, abs=0.015)
    with pytest.raises(InputError, match="pi must be in \\[0, 1\\], got 1.5"):
        draw([0.5, 1.5], 0)


def test_item_uncertainty() -> None:
    np.testing.assert_allclose(item_uncertainty([0.5, 0.1, 1.0]), [0.5, 0.3, 0.0])
    p = [[0.5, 0.0], [0.1, math.nan]]
    # weights (2, -1), positive sum 2: sqrt(4*0.25 + 0)/2, sqrt(4*0.09 + 0.25)/2 (NaN counts as 0.5)
    np.testing.assert_allclose(item_uncertainty(p, [2.0, -1.0]), [0.5, math.sqrt(0.61) / 2])
    np.testing.assert_allclose(item_uncertainty([[0.5, 0.5]]), [math.sqrt(0.5) / 2])
    with pytest.raises(InputError, match="at least one positive weight"):
        item_uncertainty(p, [-1.0, -1.0])
    with pytest.raises(InputError, match="weights has 3 values for 2 criteria"):
        item_uncertainty(p, [1.0, 1.0, 1.0])
    with pytest.raises(InputError, match="p must be in \\[0, 1\\] or NaN, got 1.2 at item 0, criterion 1"):  # noqa: E501
        item_uncertainty([[0.5, 1.2]])


# --------------------------------------------------------------------------- power


def test_labels_for_width_hand_computed() -> None:
    # 0.25 / (0.2 / (2 * 1.6449))² = 67.6 -> 68
    assert labels_for_width(0.2, 0.1, 0.25) == 68
    assert 2 * Z90 * math.sqrt(0.25 / 68) <= 0.2 < 2 * Z90 * math.sqrt(0.25 / 67)
    # with an unlabelled term U: V / ((w/2z)² - U)
    n = labels_for_width(0.2, 0.1, 0.1, 0.001)
    assert n == math.ceil(0.1 / ((0.1 / Z90) ** 2 - 0.001))
    assert labels_for_width(0.2, 0.1, 0.0) == 2  # never fewer than two labels
    with pytest.raises(InputError, match="unreachable"):
        labels_for_width(0.02, 0.1, 0.25, 0.001)
    with pytest.raises(InputError, match="width must be finite and > 0"):
        labels_for_width(0.0, 0.1, 0.25)
    with pytest.raises(InputError, match="var_labelled must be finite and >= 0"):
        labels_for_width(0.1, 0.1, -1.0)


def test_ppi_labels_for_width_uses_the_pilot() -> None:
    rng = np.random.default_rng(5)
    g = rng.beta(0.5, 0.5, size=5000)
    y = (rng.random(5000) < g).astype(float)
    plan = ppi_labels_for_width(0.1, 0.1, y[:100], g[:100], g)
    assert 0.5 < plan["lam"] <= 1.0
    assert plan["ppi"] < 0.6 * plan["classical"]
    lam = plan["lam"]
    expected = labels_for_width(
        0.1, 0.1, float(np.var(y[:100] - lam * g[:100], ddof=1)), lam**2 * float(np.var(g, ddof=1)) / 5000,
    )
    assert plan["ppi"] == expected
    assert plan["classical"] == labels_for_width(0.1, 0.1, float(np.var(y[:100], ddof=1)))
    # planned n gives about the planned width when PPI++ runs with it
    widths = []
    for r in range(40):
        idx = rng.permutation(5000)
        lab, unl = idx[: plan["ppi"]], idx[plan["ppi"] :]
        res = ppi_mean(y[lab], g[lab], g[unl], 0.1)
        widths.append(res.ci_high - res.ci_low)
    assert np.mean(widths) == pytest.approx(0.1, rel=0.15)


def test_judge_only_labels_for_width() -> None:
    sure = judge_only_labels_for_width(0.1, 0.1, [0.0, 1.0] * 5000)  # calibrated and certain
    assert sure["ppi"] == 2 and sure["lam"] == 1.0
    assert sure["classical"] == labels_for_width(0.1, 0.1, 0.25)
    flat = judge_only_labels_for_width(0.1, 0.1, [0.5] * 100)  # no information: Var(Y - f) = 0.25
    assert flat["ppi"] == flat["classical"] == labels_for_width(0.1, 0.1, 0.25)
    with pytest.raises(InputError, match="f_all must be probabilities in \\[0, 1\\], got 2.0"):
        judge_only_labels_for_width(0.1, 0.1, [0.5, 2.0])
    with pytest.raises(InputError, match="unreachable"):  # 100 items: Var(f)/N alone is too wide
        judge_only_labels_for_width(0.1, 0.1, [0.0, 1.0] * 50)
