"""Rating indeterminacy (issue 18): the rating model and every metric on hand-computed cases,
KL against scipy's rel_entr, and JSD and kappa against their definitions computed here (the
implementation calls scipy and scikit-learn for them). Formulas: the spec
``../shared/spec/002_d8733cbd0a59da78.txt``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import rel_entr

from autorubric_local.core.errors import InputError
from autorubric_local.indeterminacy import (
    beta_translation,
    cohen_kappa,
    decision_consistency,
    elicit,
    elicit_maybe,
    estimation_bias,
    forced_choice_distribution,
    hit_rate,
    js_divergence,
    kl_divergence,
    membership_matrix,
    multi_label_vector,
    multilabel_mse,
    rank_judges,
    regret,
    response_set_index,
    response_sets,
)
from autorubric_local.indeterminacy.elicitation import ElicitationSettings


def test_response_sets_and_membership() -> None:
    assert response_sets(2) == ((0,), (1,), (0, 1))
    assert len(response_sets(3)) == 7 and response_sets(3)[3:] == ((0, 1), (0, 2), (1, 2), (0, 1, 2))
    assert membership_matrix(2).tolist() == [[1, 0, 1], [0, 1, 1]]
    assert response_set_index({1, 0}, 2) == 2
    with pytest.raises(InputError, match="not a response set"):
        response_set_index(set(), 2)
    with pytest.raises(InputError, match="n_options"):
        response_sets(1)


def test_spec_figure_example() -> None:
    """The spec's worked example: 30% of raters endorse {Yes, No}, 20% {Yes}, 50% {No}; a rater
    with both picks Yes half the time -> O = [0.35, 0.65]; Omega = [0.5, 0.8]."""
    theta = np.array([0.2, 0.5, 0.3])  # ({Yes}, {No}, {Yes, No})
    f = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]])
    assert forced_choice_distribution(theta, f)[0] == pytest.approx([0.35, 0.65])
    assert multi_label_vector(theta, 2)[0] == pytest.approx([0.5, 0.8])
    with pytest.raises(InputError, match="F: every column"):
        forced_choice_distribution(theta, np.array([[1.0, 0.5, 0.5], [0.0, 0.5, 0.5]]))  # mass outside {No}


def test_beta_translation_by_hand() -> None:
    r = beta_translation(2, 0, 0.3)
    assert r == pytest.approx(np.array([[1.0, 0.0], [0.0, 0.7], [0.0, 0.3]]))
    theta = np.array([0.35, 0.65]) @ r.T
    assert theta == pytest.approx([0.35, 0.455, 0.195])
    assert multi_label_vector(theta, 2)[0] == pytest.approx([0.35 + 0.3 * 0.65, 0.65])
    assert beta_translation(2, 0, 0.0).tolist() == [[1, 0], [0, 1], [0, 0]]
    # three options, positive 2: a rater choosing 0 adds 2 with probability beta
    r3 = beta_translation(3, 2, 0.5)
    assert r3[response_set_index({0, 2}, 3), 0] == 0.5 and r3[response_set_index({0}, 3), 0] == 0.5
    with pytest.raises(InputError, match="beta must be in"):
        beta_translation(2, 0, 1.5)


def test_hit_rate_and_kappa_by_hand_and_from_the_confusion_matrix() -> None:
    assert hit_rate([0, 1, 1, 0], [0, 1, 0, 0]) == 0.75
    # po = 0.75, pe = 0.5 * 0.25 + 0.5 * 0.75 = 0.5 -> kappa = 0.5
    assert cohen_kappa([0, 0, 1, 1], [0, 1, 1, 1], 2) == pytest.approx(0.5)
    assert cohen_kappa([1, 1, 1], [1, 1, 1], 2) is None  # both constant: 0/0
    rng = np.random.default_rng(3)
    h, j = rng.integers(0, 3, 50), rng.integers(0, 3, 50)
    # independent of the implementation (which calls scikit-learn): kappa from the confusion matrix
    confusion = np.zeros((3, 3))
    np.add.at(confusion, (h, j), 1.0)
    confusion /= confusion.sum()
    po, pe = np.trace(confusion), confusion.sum(axis=1) @ confusion.sum(axis=0)
    assert cohen_kappa(h, j, 3) == pytest.approx((po - pe) / (1 - pe))
    with pytest.raises(InputError, match="equal length"):
        hit_rate([0, 1], [0])


def test_kl_by_hand_and_against_scipy() -> None:
    assert kl_divergence(np.array([[1.0, 0.0]]), np.array([[0.5, 0.5]])) == pytest.approx(math.log(2))
    by_hand = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert kl_divergence(np.array([[0.5, 0.5]]), np.array([[0.25, 0.75]])) == pytest.approx(by_hand)
    rng = np.random.default_rng(0)
    h, j = rng.dirichlet([1, 1, 1], 40), rng.dirichlet([1, 1, 1], 40)
    assert kl_divergence(h, j, epsilon=0.0) == pytest.approx(np.mean(rel_entr(h, j).sum(axis=1)))
    # the direction is human -> judge, not symmetric
    assert kl_divergence(h, j) != pytest.approx(kl_divergence(j, h))
    # a zero where the human has mass costs -log(epsilon), not infinity
    assert kl_divergence(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]), epsilon=1e-6) == pytest.approx(
        -math.log(1e-6 / (1 + 1e-6)), rel=1e-6)
    with pytest.raises(InputError, match="does not sum to 1"):
        kl_divergence(np.array([[0.5, 0.2]]), np.array([[0.5, 0.5]]))


def test_jsd_by_hand_and_from_its_definition() -> None:
    assert js_divergence(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])) == pytest.approx(1.0)
    m = np.array([0.75, 0.25])
    by_hand = 0.5 * (math.log2(1 / m[0]) + (0.5 * math.log2(0.5 / m[0]) + 0.5 * math.log2(0.5 / m[1])))
    assert js_divergence(np.array([[1.0, 0.0]]), np.array([[0.5, 0.5]])) == pytest.approx(by_hand)
    rng = np.random.default_rng(1)
    h, j = rng.dirichlet([1, 1], 30), rng.dirichlet([1, 1], 30)
    # independent of the implementation (which calls scipy): the definition, in bits
    mid = (h + j) / 2
    expected = np.mean(0.5 * (h * np.log2(h / mid)).sum(axis=1) + 0.5 * (j * np.log2(j / mid)).sum(axis=1))
    assert js_divergence(h, j) == pytest.approx(expected)
    assert js_divergence(h, j) == pytest.approx(js_divergence(j, h))


def test_multilabel_mse_spec_example() -> None:
    """Humans split on toxicity, Omega^H = [0.8, 0.5]: a judge mirroring it scores 0, a confident
    one [1, 0] scores 0.2^2 + 0.5^2 = 0.29."""
    human = np.array([[0.8, 0.5]])
    assert multilabel_mse(human, np.array([[0.8, 0.5]])) == 0.0
    assert multilabel_mse(human, np.array([[1.0, 0.0]])) == pytest.approx(0.29)
    assert multilabel_mse(np.array([[0.8, 0.5], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 1.0]])) == pytest.approx(0.145)
    with pytest.raises(InputError, match=r"in \[0, 1\]"):
        multilabel_mse(np.array([[1.5, 0.0]]), np.array([[1.0, 0.0]]))


def test_downstream_by_hand() -> None:
    judge = np.array([[0.2, 1.0], [0.5, 0.5], [0.9, 0.1]])
    human = np.array([[0.3, 1.0], [0.4, 0.6], [1.0, 0.0]])
    # tau = 0.3: judge filters [0, 1, 1], humans [1, 1, 1]
    assert decision_consistency(judge, human, 0, 0.3) == pytest.approx(2 / 3)
    assert estimation_bias(judge, human, 0, 0.3) == pytest.approx(2 / 3 - 1)
    # tau = 0.45: judge [0, 1, 1], humans [0, 0, 1]
    assert decision_consistency(judge, human, 0, 0.45) == pytest.approx(2 / 3)
    assert estimation_bias(judge, human, 0, 0.45) == pytest.approx(1 / 3)
    # the spec's prevalence example: humans 40% positive, judge 25% -> bias -0.15
    h = np.array([[1.0, 0.0]] * 8 + [[0.0, 1.0]] * 12)
    j = np.array([[1.0, 0.0]] * 5 + [[0.0, 1.0]] * 15)
    assert estimation_bias(j, h, 0, 0.5) == pytest.approx(-0.15)
    with pytest.raises(InputError, match="tau must be in"):
        decision_consistency(judge, human, 0, 1.2)


def test_rankings_and_regret() -> None:
    assert rank_judges({"a": 0.7, "b": 0.9, "c": None}, higher_is_better=True) == ["b", "a", "c"]
    assert rank_judges({"a": 0.7, "b": 0.9}, higher_is_better=False) == ["a", "b"]
    assert regret("a", {"a": 0.7, "b": 0.9}, higher_is_better=True) == pytest.approx(0.2)
    assert regret("b", {"a": 0.1, "b": 0.25}, higher_is_better=False) == pytest.approx(0.15)
    assert regret("b", {"a": 0.7, "b": 0.9}, higher_is_better=True) == 0.0
    with pytest.raises(InputError, match="not among"):
        regret("z", {"a": 1.0}, higher_is_better=True)


def test_elicitation_threshold_and_maybe() -> None:
    p = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    r = elicit(p, ElicitationSettings(threshold=0.25))
    assert r.forced == pytest.approx(p)
    assert r.set_positions.tolist() == [0, 2, 1]  # {MET}, {MET, UNMET}, {UNMET}
    assert r.omega.tolist() == [[1, 0], [1, 1], [0, 1]]
    # threshold 0.5 keeps only the argmax; the set is never empty
    assert elicit(np.array([[0.5, 0.5]]), ElicitationSettings(threshold=0.6)).set_positions.tolist() == [0]
    # temperature 2 flattens 0.9/0.1 to 0.75/0.25, which then crosses the threshold
    hot = elicit(np.array([[0.9, 0.1]]), ElicitationSettings(temperature=2.0))
    assert hot.forced[0] == pytest.approx([0.75, 0.25]) and hot.set_positions.tolist() == [2]
    sampled = elicit(p, ElicitationSettings(n_samples=1000, seed=1))
    assert np.abs(sampled.forced - p).max() < 0.06 and np.all((sampled.forced * 1000) % 1 == 0)
    # Maybe criterion: the three-option distribution is theta itself
    m = elicit_maybe(np.array([[0.2, 0.3, 0.5]]))
    assert m.theta[0] == pytest.approx([0.2, 0.3, 0.5])
    assert m.omega[0] == pytest.approx([0.7, 0.8])
    assert m.forced[0] == pytest.approx([0.4, 0.6])
    with pytest.raises(InputError, match="no probability"):
        elicit(np.array([[0.0, 0.0]]))
