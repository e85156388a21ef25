"""Comparisons of systems: hand-computed preferences and position bias, and Bradley-Terry fits
against references (scikit-learn's logistic regression, Hunter's MM algorithm, closed forms)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import check_grad
from sklearn.linear_model import LogisticRegression

from autorubric_local.comparisons import (
    balanced_preference,
    fit_bradley_terry,
    hard_verdict,
    pair_counts,
    position_consistency,
    swap_rule,
    system_probabilities,
)
from autorubric_local.comparisons.bradley_terry import _objective, bootstrap_bradley_terry, log_likelihood
from autorubric_local.core.errors import InputError

# ------------------------------------------------------------------ one comparison, both orders


def test_probabilities_map_back_to_systems_in_each_order() -> None:
    p = {"1": 0.6, "2": 0.3, "tie": 0.1}
    assert system_probabilities(p, swapped=False) == pytest.approx({"a": 0.6, "b": 0.3, "tie": 0.1})
    assert system_probabilities(p, swapped=True) == pytest.approx({"a": 0.3, "b": 0.6, "tie": 0.1})


def test_balanced_calibration_averages_the_orders_by_hand() -> None:
    # order ab: slot 1 (a) 0.7; order ba: slot 1 (b) 0.5, slot 2 (a) 0.4 -> a = (0.7 + 0.4) / 2
    got = balanced_preference({"1": 0.7, "2": 0.2, "tie": 0.1}, {"1": 0.5, "2": 0.4, "tie": 0.1})
    assert got == pytest.approx({"a": 0.55, "b": 0.35, "tie": 0.10})
    # a judge that always prefers slot 1 comes out even
    assert balanced_preference({"1": 0.9, "2": 0.1}, {"1": 0.9, "2": 0.1}) == pytest.approx(
        {"a": 0.5, "b": 0.5, "tie": 0.0})


def test_the_swap_rule_wins_only_when_both_orders_agree() -> None:
    assert swap_rule("1", "2") == "a"  # a in slot 1, then a in slot 2
    assert swap_rule("2", "1") == "b"
    assert swap_rule("1", "1") == "tie"  # slot 1 both times: position, not content
    assert swap_rule("1", "tie") == "tie"
    assert swap_rule("tie", "tie") == "tie"


def test_hard_verdict_is_the_argmax_and_a_probability_tie_is_a_tie() -> None:
    assert hard_verdict({"1": 0.2, "2": 0.7, "tie": 0.1}) == "2"
    assert hard_verdict({"1": 0.4, "2": 0.4, "tie": 0.2}) == "tie"
    with pytest.raises(InputError, match="among"):
        hard_verdict({"A": 1.0})


def test_position_consistency_conflict_primacy_and_recency_on_a_small_table() -> None:
    verdicts = [("1", "2"),  # a both times: consistent
                ("2", "1"),  # b both times: consistent
                ("tie", "tie"),  # consistent
                ("1", "1"),  # slot 1 twice: inconsistent, 2 primacy verdicts
                ("1", "tie"),  # inconsistent: 1 primacy
                ("2", "2")]  # slot 2 twice: inconsistent, 2 recency
    got = position_consistency(verdicts)
    assert got.n == 6
    assert got.consistency == pytest.approx(3 / 6)
    assert got.conflict_rate == pytest.approx(3 / 6)
    assert got.primacy == pytest.approx(3 / 5) and got.recency == pytest.approx(2 / 5)
    assert position_consistency([("1", "2")]).primacy is None


# ------------------------------------------------------------------ Bradley-Terry


def _data(seed: int = 0, systems: int = 4, prompts: int = 40, ties: float = 0.15):
    rng = np.random.default_rng(seed)
    truth = np.linspace(-1.0, 1.0, systems)
    names = [f"s{k}" for k in range(systems)]
    rows = []
    for q in range(prompts):
        for i in range(systems):
            for j in range(i + 1, systems):
                p = 1 / (1 + math.exp(-(truth[i] - truth[j])))
                u = rng.random()
                outcome = (0, 1, 0) if u < ties else ((1, 0, 0) if rng.random() < p else (0, 0, 1))
                rows.append((f"q{q}", names[i], names[j], *outcome))
    prompts_, first, second, w, t, l = zip(*rows, strict=True)
    return pair_counts(prompts_, first, second, w, t, l, systems=names)


def test_bradley_terry_equals_scikit_learns_logistic_regression_on_the_design() -> None:
    data = _data()
    fit = fit_bradley_terry(data)
    counts = data.total()
    size = len(data.systems)
    x, y, weight = [], [], []
    for (i, j), (w, t, l) in zip(data.pairs, counts, strict=True):
        row = np.zeros(size)
        row[i], row[j] = 1.0, -1.0
        for outcome, mass in ((1, w + t / 2), (0, l + t / 2)):  # a tie is half a win each way
            x.append(row[1:])  # system 0 held at 0, as in the fit
            y.append(outcome)
            weight.append(mass)
    reference = LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-12, max_iter=10_000)
    reference.fit(np.array(x), np.array(y), sample_weight=np.array(weight))
    beta = np.concatenate([[0.0], reference.coef_[0]])
    np.testing.assert_allclose(fit.beta, beta - beta.mean(), atol=1e-6)
    assert fit.converged


def test_bradley_terry_equals_hunters_mm_algorithm_on_soft_counts() -> None:
    rng = np.random.default_rng(3)
    names = ["a", "b", "c"]
    first, second, prompts = [], [], []
    for q in range(30):
        for i, j in ((0, 1), (0, 2), (1, 2)):
            first.append(names[i]), second.append(names[j]), prompts.append(f"q{q}")
    p = rng.dirichlet([2.0, 1.0, 2.0], size=len(first))  # judge probabilities: a, tie, b
    data = pair_counts(prompts, first, second, p[:, 0], p[:, 1], p[:, 2], systems=names)
    fit = fit_bradley_terry(data)
    counts = data.total()
    wins = np.zeros(3)
    n_pair = {}
    for (i, j), (w, t, l) in zip(data.pairs, counts, strict=True):
        wins[i] += w + t / 2
        wins[j] += l + t / 2
        n_pair[(i, j)] = w + t + l
    pi = np.ones(3)
    for _ in range(5000):  # Hunter (2004), eq. 3: pi_i <- W_i / sum_j n_ij / (pi_i + pi_j)
        new = np.array([wins[i] / sum(n / (pi[i] + pi[j if a == i else a]) for (a, j), n in n_pair.items()
                                      if i in (a, j)) for i in range(3)])
        pi = new / new.prod() ** (1 / 3)
    np.testing.assert_allclose(fit.beta, np.log(pi) - np.log(pi).mean(), atol=1e-6)


@pytest.mark.parametrize("model", ["half", "davidson", "rao_kupper"])
def test_the_analytic_gradient_matches_finite_differences(model: str) -> None:
    data = _data(seed=1, systems=3, prompts=10)
    counts = data.total()
    tie = {"half": None, "davidson": 0.7, "rao_kupper": 1.6}[model]

    def f(beta: np.ndarray) -> float:
        return _objective(beta, tie, data.pairs, counts, model)[0]

    def g(beta: np.ndarray) -> np.ndarray:
        return _objective(beta, tie, data.pairs, counts, model)[1][0]

    assert check_grad(f, g, np.array([0.3, -0.2, 0.5])) < 1e-5


def test_tie_model_likelihoods_by_hand() -> None:
    # two systems, beta = (0.5, -0.5): pi = (e^.5, e^-.5); 3 wins of a, 2 ties, 1 win of b
    data = pair_counts(["q"] * 3, ["a", "a", "a"], ["b", "b", "b"], [1, 0, 2], [1, 1, 0], [0, 1, 0])
    beta = np.array([0.5, -0.5])
    pa, pb = math.exp(0.5), math.exp(-0.5)
    nu = 0.8
    d = pa + pb + nu * math.sqrt(pa * pb)
    davidson = 3 * math.log(pa / d) + 2 * math.log(nu * math.sqrt(pa * pb) / d) + math.log(pb / d)
    assert log_likelihood(beta, nu, data.pairs, data.total(), "davidson") == pytest.approx(davidson, abs=1e-12)
    theta = 1.7
    rk = (3 * math.log(pa / (pa + theta * pb)) + math.log(pb / (theta * pa + pb))
          + 2 * math.log((theta**2 - 1) * pa * pb / ((pa + theta * pb) * (theta * pa + pb))))
    assert log_likelihood(beta, theta, data.pairs, data.total(), "rao_kupper") == pytest.approx(rk, abs=1e-12)
    half = 4 * math.log(1 / (1 + math.exp(-1.0))) + 2 * math.log(1 / (1 + math.exp(1.0)))  # y = 3 + 2/2 of 6
    assert log_likelihood(beta, None, data.pairs, data.total(), "half") == pytest.approx(half, abs=1e-12)


@pytest.mark.parametrize("model", ["davidson", "rao_kupper"])
def test_with_two_systems_a_tie_model_reproduces_the_observed_shares(model: str) -> None:
    # two systems leave the multinomial (win, tie, loss) two free parameters: the MLE fits it exactly
    data = pair_counts(["q"] * 3, ["a", "a", "a"], ["b", "b", "b"], [5, 0, 0], [0, 3, 0], [0, 0, 2])
    fit = fit_bradley_terry(data, tie_model=model)
    pa, pb = math.exp(fit.beta[0]), math.exp(fit.beta[1])
    if model == "davidson":
        d = pa + pb + fit.tie_parameter * math.sqrt(pa * pb)
        shares = (pa / d, fit.tie_parameter * math.sqrt(pa * pb) / d, pb / d)
    else:
        th = fit.tie_parameter
        win, loss = pa / (pa + th * pb), pb / (th * pa + pb)
        shares = (win, 1 - win - loss, loss)
    np.testing.assert_allclose(shares, (0.5, 0.3, 0.2), atol=1e-6)


def test_unlinked_systems_and_unknown_models_are_refused() -> None:
    data = pair_counts(["q", "q"], ["a", "c"], ["b", "d"], [1, 1], [0, 0], [0, 0])
    with pytest.raises(InputError, match="do not link every system"):
        fit_bradley_terry(data)
    unbeaten = pair_counts(["q"] * 3, ["a", "a", "b"], ["b", "c", "c"], [1, 2, 1], [0, 0, 1], [0, 0, 1])
    with pytest.raises(InputError, match=r"\['a'\] never lost to \['b', 'c'\]"):  # a never lost: no finite strength
        fit_bradley_terry(unbeaten)
    with pytest.raises(InputError, match="tie_model"):
        fit_bradley_terry(_data(), tie_model="elo")
    with pytest.raises(InputError, match="compared with itself"):
        pair_counts(["q"], ["a"], ["a"], [1], [0], [0])


def test_the_bootstrap_resamples_prompts_and_brackets_the_fit() -> None:
    data = _data(seed=2)
    got = bootstrap_bradley_terry(data, n_bootstrap=50, seed=0)
    assert got.n_bootstrap == 50 and got.samples.shape == (50, 4)
    assert np.all(got.ci_low < got.fit.beta) and np.all(got.fit.beta < got.ci_high)
    again = bootstrap_bradley_terry(data, n_bootstrap=50, seed=0)
    np.testing.assert_array_equal(got.ci_low, again.ci_low)  # seeded
