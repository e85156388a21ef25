"""Rating indeterminacy (issue 18): F, theta and beta recovered from synthetic paired ratings
drawn from known theta and F (spec: "estimate the translation matrix F-hat using just 100
paired forced-choice and response set ratings")."""

from __future__ import annotations

import numpy as np
import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.indeterminacy import (
    beta_translation,
    estimate_beta,
    estimate_reverse_translation,
    estimate_translation,
    estimate_translation_per_item,
    membership_matrix,
)
from autorubric_local.indeterminacy.synthetic import draw_paired_ratings

F_TRUE = np.array([[1.0, 0.0, 0.3], [0.0, 1.0, 0.7]])  # {Yes, No} resolved to Yes 30% of the time
TOLERANCE = 0.2
"""|F-hat - F| on the identifiable column {Yes, No} from 100 pairs. With theta ~ Dirichlet(1, 1, 1)
about 33 pairs fall in that column: standard error sqrt(0.3 * 0.7 / 33) = 0.08, so 0.2 is 2.5
standard errors (about 99% of draws; checked over 200 seeds below)."""


def one_pair_per_item(seed: int, n_items: int = 100) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet([1.0, 1.0, 1.0], n_items)
    sets, forced = draw_paired_ratings(theta, F_TRUE, 1, rng)
    return forced[:, 0], sets[:, 0]


def test_f_recovered_from_100_paired_items() -> None:
    forced, sets = one_pair_per_item(seed=0)
    fitted = estimate_translation(forced, sets, 2)
    assert fitted.n_pairs == 100 and fitted.n_inconsistent == 0 and fitted.observed.all()
    error = np.abs(fitted.matrix - F_TRUE).max()
    assert error <= TOLERANCE, error
    assert fitted.counts[:, 2].tolist() == [4, 25]  # this seed's 29 pairs with response set {Yes, No}
    assert fitted.matrix[0, 2] == pytest.approx(4 / 29)  # 0.138, true 0.3: error 0.162 < 0.2
    # singleton columns are exact, and every column is a distribution over its set
    assert fitted.matrix[:, :2].tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert np.allclose(fitted.matrix.sum(axis=0), 1.0) and np.all(fitted.matrix * (1 - membership_matrix(2)) == 0)


def test_f_tolerance_holds_across_seeds_and_error_shrinks() -> None:
    errors = [np.abs(estimate_translation(*one_pair_per_item(seed), 2).matrix - F_TRUE).max() for seed in range(200)]
    assert np.mean(np.array(errors) <= TOLERANCE) >= 0.95
    big = estimate_translation(*one_pair_per_item(seed=1, n_items=10_000), 2)
    assert np.abs(big.matrix - F_TRUE).max() < 0.02


def test_f_uniform_in_unobserved_columns_and_inconsistent_pairs_dropped() -> None:
    fitted = estimate_translation(np.array([0, 1, 1]), np.array([0, 1, 0]), 2)
    assert fitted.n_inconsistent == 1  # forced 1 with set {0}
    assert not fitted.observed[2] and fitted.matrix[:, 2].tolist() == [0.5, 0.5]
    smoothed = estimate_translation(np.array([0, 0]), np.array([2, 2]), 2, smoothing=1.0)
    assert smoothed.matrix[:, 2].tolist() == pytest.approx([0.75, 0.25])
    with pytest.raises(InputError, match="equal length"):
        estimate_translation(np.array([0, 1]), np.array([0]), 2)
    with pytest.raises(InputError, match="outside"):
        estimate_translation(np.array([0, 2]), np.array([0, 1]), 2)


def test_f_three_options() -> None:
    """K = 3 (7 response sets): 100 items x 5 paired ratings recover every column within 0.2."""
    rng = np.random.default_rng(4)
    lam = membership_matrix(3)
    f = lam * rng.uniform(0.2, 1.0, lam.shape)
    f /= f.sum(axis=0)
    theta = rng.dirichlet(np.ones(7), 100)
    sets, forced = draw_paired_ratings(theta, f, 5, rng)
    fitted = estimate_translation(forced.ravel(), sets.ravel(), 3)
    assert np.abs(fitted.matrix - f).max() <= 0.2


def test_per_item_f() -> None:
    """Two kinds of items resolve {Yes, No} differently; 50 pairs per item recover each item's F."""
    rng = np.random.default_rng(2)
    n = 6
    per_item = np.stack([np.array([[1, 0, 0.9], [0, 1, 0.1]]) if i % 2 else np.array([[1, 0, 0.1], [0, 1, 0.9]])
                         for i in range(n)])
    theta = np.tile([0.2, 0.2, 0.6], (n, 1))
    sets, forced = draw_paired_ratings(theta, per_item, 50, rng)
    items = np.repeat(np.arange(n), 50)
    fitted = estimate_translation_per_item(forced.ravel(), sets.ravel(), items, n, 2)
    assert np.abs(fitted - per_item).max() < 0.2
    pooled = estimate_translation(forced.ravel(), sets.ravel(), 2).matrix
    assert abs(pooled[0, 2] - 0.5) < 0.1  # pooling averages the two kinds away


def test_reverse_translation_and_beta_recovered() -> None:
    """Pairs drawn from the beta model (humans resolve {Yes, No} to No) give back beta."""
    rng = np.random.default_rng(5)
    beta = 0.3
    forced_o = np.tile([0.4, 0.6], (2000, 1))
    theta = forced_o @ beta_translation(2, 0, beta).T
    sets, forced = draw_paired_ratings(theta, np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]), 1, rng)
    assert estimate_beta(forced[:, 0], sets[:, 0], 2, positive=0) == pytest.approx(beta, abs=0.03)
    r = estimate_reverse_translation(forced[:, 0], sets[:, 0], 2)
    assert np.abs(r - beta_translation(2, 0, beta)).max() < 0.03
    assert estimate_beta(np.array([0, 0]), np.array([0, 2]), 2, positive=0) is None


def test_criterion_ratings_refuse_inconsistent_shapes() -> None:
    from autorubric_local.indeterminacy import CriterionRatings, JudgeRatings

    judge = JudgeRatings(np.array([[0.5, 0.5]]), np.array([[0.0, 0.0, 1.0]]))
    with pytest.raises(InputError, match="criterion 'c': human_forced has shape"):
        CriterionRatings("c", ("a", "b"), 0, ("i1", "i2"), np.array([[1.0, 0.0]]), {"j": judge})
    with pytest.raises(InputError, match="judge 'j': ratings of shape"):
        CriterionRatings("c", ("a", "b"), 0, ("i1",), np.array([[1.0, 0.0]]),
                         {"j": JudgeRatings(np.array([[1.0, 0.0, 0.0]]), judge.theta)})
    with pytest.raises(InputError, match="puts mass on a set without its forced choice"):
        CriterionRatings("c", ("a", "b"), 0, ("i1",), np.array([[1.0, 0.0]]), {"j": judge},
                         human_translation=np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]))
    ok = CriterionRatings("c", ("a", "b"), 0, ("i1",), np.array([[0.0, 1.0]]), {"j": judge},
                          human_translation=beta_translation(2, 0, 0.4))
    assert ok.human_omega(0.9) == pytest.approx(np.array([[0.4, 1.0]]))  # R-hat wins over beta
