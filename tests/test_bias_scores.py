"""Grade Score formulas (spec 004, section 4) on hand-computed cases: always the first position,
always the same content, explicit choices and probability vectors, dropped rotations, N = 1..4,
and the bootstrap helper."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import entropy as scipy_entropy

from autorubric_local.bias.aggregate import IntervalMethod, bootstrap_mean
from autorubric_local.bias.grade_score import (
    RotationOutcome,
    grade_scores,
    harmonic_mean,
    normalized_entropy,
)
from autorubric_local.core.errors import InputError
from autorubric_local.estimates.methods import bounded_mean_interval
from autorubric_local.graders.planning import cyclic_rotations


def one_hot(n: int, k: int) -> tuple[float, ...]:
    return tuple(1.0 if i == k else 0.0 for i in range(n))


def sweep(n: int, positions: list[int | None], probabilities: list[tuple[float, ...]] | None = None) -> list[RotationOutcome]:
    """Outcomes over the identity's cyclic rotations: rotation r shows option (k + r) % n at k."""
    orders = cyclic_rotations(range(n))
    outcomes = []
    for r, (order, position) in enumerate(zip(orders, positions)):
        if position is None:
            outcomes.append(RotationOutcome(order, None, ()))
        else:
            p = probabilities[r] if probabilities is not None else one_hot(n, position)
            outcomes.append(RotationOutcome(order, position, p))
    return outcomes


# ------------------------------------------------------------------------- known behaviours


@pytest.mark.parametrize("n", [2, 3, 4])
def test_always_first_position_has_llm_score_0_and_grade_score_0(n: int) -> None:
    s = grade_scores(sweep(n, [0] * n))
    assert s.llm_score == 0.0
    assert s.choice_score == pytest.approx(1 / n)  # every option wins once
    assert s.grade_score == 0.0
    assert s.position_counts == (n,) + (0,) * (n - 1)
    assert s.option_counts == (1,) * n
    assert (s.expected_llm_score, s.expected_grade_score) == (0.0, 0.0)
    assert s.position_profile == one_hot(n, 0)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("favourite", [0, 1])
def test_always_same_content_has_all_scores_1(n: int, favourite: int) -> None:
    # Rotation r shows option (k + r) % n at k, so option f sits at position (f - r) % n.
    s = grade_scores(sweep(n, [(favourite - r) % n for r in range(n)]))
    assert (s.llm_score, s.choice_score, s.grade_score) == (pytest.approx(1.0), 1.0, pytest.approx(1.0))
    assert s.option_counts == tuple(n if i == favourite else 0 for i in range(n))
    assert s.position_counts == (1,) * n
    assert s.mode_option == favourite
    assert s.expected_grade_score == pytest.approx(1.0)


def test_mixed_choices_n4_hand_computed() -> None:
    # Positions chosen [1, 1, 0, 2] -> options [1, 2, 2, 1].
    # Position frequencies (1/4, 2/4, 1/4, 0): H = 0.5 + 0.5 + 0.5 = 1.5 bits; LLM = 1.5 / 2.
    # Choice = 2 / 4. Grade = 2 * 0.75 * 0.5 / 1.25 = 0.6.
    s = grade_scores(sweep(4, [1, 1, 0, 2]))
    assert s.option_counts == (0, 2, 2, 0)
    assert s.llm_score == pytest.approx(0.75)
    assert s.choice_score == 0.5
    assert s.grade_score == pytest.approx(0.6)
    assert s.mode_option == 1  # tie between options 1 and 2: lowest index


def test_all_different_options_n4_hand_computed() -> None:
    # Positions [0, 0, 1, 3] -> options [0, 1, 3, 2]: Choice = 1/4.
    # Position frequencies (1/2, 1/4, 0, 1/4): H = 0.5 + 0.5 + 0.5 = 1.5; LLM = 0.75.
    # Grade = 2 * 0.75 * 0.25 / 1.0 = 0.375.
    s = grade_scores(sweep(4, [0, 0, 1, 3]))
    assert (s.llm_score, s.choice_score, s.grade_score) == pytest.approx((0.75, 0.25, 0.375))


def test_n3_two_of_three_hand_computed() -> None:
    # Positions [2, 1, 0] -> options [2, 2, 2]: same content (all 1). Positions [0, 1, 0] ->
    # options [0, 2, 2]: Choice 2/3; position frequencies (2/3, 1/3, 0):
    # H = -(2/3 log2 2/3 + 1/3 log2 1/3) = 0.918296 bits; LLM = 0.918296 / log2 3 = 0.579380.
    # Grade = 2 * 0.579380 * 0.666667 / 1.246047 = 0.619966.
    s = grade_scores(sweep(3, [0, 1, 0]))
    assert s.llm_score == pytest.approx(0.579380, abs=1e-6)
    assert s.choice_score == pytest.approx(2 / 3)
    assert s.grade_score == pytest.approx(0.619966, abs=1e-6)


def test_expected_scores_from_explicit_probability_vectors() -> None:
    # N = 3, orders (0,1,2), (1,2,0), (2,0,1).
    probabilities = [(0.5, 0.3, 0.2), (0.6, 0.2, 0.2), (0.4, 0.4, 0.2)]
    s = grade_scores(sweep(3, [0, 0, 0], probabilities))
    # Position profile = mean over rotations = (0.5, 0.3, 0.2);
    # H = 0.5 + 0.521090 + 0.464386 = 1.485475 bits; / log2 3 = 0.937231.
    assert s.position_profile == pytest.approx((0.5, 0.3, 0.2))
    assert s.expected_llm_score == pytest.approx(0.937231, abs=1e-6)
    # Option 0: 0.5 (r0, pos 0) + 0.2 (r1, pos 2) + 0.4 (r2, pos 1) = 1.1 -> 0.366667;
    # option 1: 0.3 + 0.6 + 0.2 = 1.1 -> 0.366667; option 2: 0.2 + 0.2 + 0.4 = 0.8 -> 0.266667.
    assert s.option_profile == pytest.approx((1.1 / 3, 1.1 / 3, 0.8 / 3))
    assert s.expected_choice_score == pytest.approx(1.1 / 3)
    # Harmonic mean: 2 * 0.937231 * 0.366667 / 1.303897 = 0.527114.
    assert s.expected_grade_score == pytest.approx(0.527114, abs=1e-6)
    # The argmax versions: always position 0 -> LLM 0.
    assert (s.llm_score, s.choice_score, s.grade_score) == (0.0, pytest.approx(1 / 3), 0.0)


def test_uniform_distributions_give_expected_llm_1_and_choice_1_over_n() -> None:
    n = 4
    uniform = [(0.25,) * 4] * 4
    s = grade_scores(sweep(n, [0, 0, 0, 0], uniform))
    assert s.expected_llm_score == pytest.approx(1.0)
    assert s.expected_choice_score == pytest.approx(0.25)
    assert s.expected_grade_score == pytest.approx(2 * 0.25 / 1.25)  # 0.4


@pytest.mark.parametrize("seed", range(5))
def test_one_hot_expected_scores_equal_argmax_scores(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([2, 3, 4, 5])
    s = grade_scores(sweep(n, [rng.randrange(n) for _ in range(n)]))
    assert s.expected_llm_score == pytest.approx(s.llm_score)
    assert s.expected_choice_score == pytest.approx(s.choice_score)
    assert s.expected_grade_score == pytest.approx(s.grade_score)


@pytest.mark.parametrize("seed", range(5))
def test_llm_score_matches_scipy_entropy(seed: int) -> None:
    rng = random.Random(seed)
    n = 5
    positions = [rng.randrange(n) for _ in range(n)]
    s = grade_scores(sweep(n, positions))
    counts = [positions.count(k) for k in range(n)]
    assert s.llm_score == pytest.approx(scipy_entropy(counts, base=2) / math.log2(n))
    assert s.choice_score == pytest.approx(max(s.option_counts) / n)


# ----------------------------------------------------------------------- dropped and degenerate


def test_dropped_rotation_is_counted_and_left_out() -> None:
    # Same content, rotation 2 failed: positions (1, 0, -, 2) of option 1 -> 3 distinct positions.
    # LLM = log2 3 / log2 4 = 0.792481 (missing rotations cannot show fairness); Choice = 3/3.
    # Grade = 2 * 0.792481 / 1.792481 = 0.884228.
    s = grade_scores(sweep(4, [1, 0, None, 2]))
    assert (s.n_rotations, s.n_dropped) == (3, 1)
    assert s.llm_score == pytest.approx(math.log2(3) / 2)
    assert s.choice_score == 1.0
    assert s.grade_score == pytest.approx(0.884228, abs=1e-6)
    assert sum(s.position_profile) == pytest.approx(1.0)


def test_every_rotation_dropped_leaves_scores_undefined() -> None:
    s = grade_scores(sweep(3, [None, None, None]))
    assert (s.n_rotations, s.n_dropped) == (0, 3)
    assert s.llm_score is s.choice_score is s.grade_score is s.expected_grade_score is None
    assert s.mode_option is None and s.position_profile == ()


def test_single_option_scores_are_undefined() -> None:
    s = grade_scores([RotationOutcome((0,), 0, (1.0,))])
    assert s.n_options == 1 and s.n_rotations == 1
    assert s.llm_score is None and s.choice_score is None and s.grade_score is None
    assert s.option_counts == (1,)


def test_harmonic_mean_and_entropy_edges() -> None:
    assert harmonic_mean(0.0, 0.0) == 0.0
    assert harmonic_mean(0.0, 1.0) == 0.0
    assert harmonic_mean(1.0, 1.0) == 1.0
    assert harmonic_mean(0.5, 1.0) == pytest.approx(2 / 3)
    assert normalized_entropy([0.5, 0.5], 2) == 1.0
    assert normalized_entropy([1.0, 0.0, 0.0], 3) == 0.0
    with pytest.raises(InputError, match="n must be >= 2"):
        normalized_entropy([1.0], 1)


@pytest.mark.parametrize(
    ("outcomes", "message"),
    [
        ([], "no rotations"),
        ([RotationOutcome((0, 0), 0, (1.0, 0.0))], "permutation of 0..1"),
        ([RotationOutcome((0, 1), 2, (1.0, 0.0))], r"chosen_position must be in \[0, 1\], got 2"),
        ([RotationOutcome((0, 1), 0, (1.0,))], "probabilities must have 2 values, got 1"),
    ],
)
def test_invalid_outcomes_are_rejected(outcomes: list[RotationOutcome], message: str) -> None:
    with pytest.raises(InputError, match=message):
        grade_scores(outcomes)


# ----------------------------------------------------------------------------------- bootstrap


def test_bootstrap_mean_is_seeded_and_brackets_the_mean() -> None:
    values = [0.1, 0.4, 0.35, 0.8, 0.6, 0.55, 0.2]
    a = bootstrap_mean(values, n_bootstrap=500, confidence=0.9, seed=3, key="k")
    b = bootstrap_mean(values, n_bootstrap=500, confidence=0.9, seed=3, key="k")
    assert a == b
    assert a.mean == pytest.approx(sum(values) / len(values))
    assert a.ci_low is not None and a.ci_high is not None
    assert min(values) <= a.ci_low < a.mean < a.ci_high <= max(values)
    other = bootstrap_mean(values, n_bootstrap=500, confidence=0.9, seed=4, key="k")
    assert (other.ci_low, other.ci_high) != (a.ci_low, a.ci_high)


def test_bootstrap_mean_degenerate_inputs() -> None:
    assert bootstrap_mean([], n_bootstrap=100, confidence=0.95, seed=0, key="k").mean is None
    single = bootstrap_mean([0.7], n_bootstrap=100, confidence=0.95, seed=0, key="k")
    assert (single.mean, single.n, single.method) == (0.7, 1, IntervalMethod.WILSON)
    assert (single.ci_low, single.ci_high) == pytest.approx(bounded_mean_interval(0.7, 1, 0.0, 1.0, 0.05))
    none = bootstrap_mean([0.2, 0.4], n_bootstrap=0, confidence=0.95, seed=0, key="k")
    assert none.mean == pytest.approx(0.3) and none.ci_low is None and none.method is None


@pytest.mark.parametrize(("values", "confidence"), [([0.0] * 6, 0.95), ([0.58] * 6, 0.95), ([1.0] * 3, 0.9)])
def test_equal_scores_get_the_wilson_interval_never_a_zero_width_one(values: list[float], confidence: float) -> None:
    """Six items with the same Grade Score gave [0.58, 0.58] (issue 51): every resample alike."""
    estimate = bootstrap_mean(values, n_bootstrap=500, confidence=confidence, seed=0, key="k")
    assert estimate.method is IntervalMethod.WILSON and estimate.mean == pytest.approx(values[0])
    assert estimate.ci_low is not None and estimate.ci_high is not None
    assert 0.0 <= estimate.ci_low <= values[0] <= estimate.ci_high <= 1.0
    assert estimate.ci_high - estimate.ci_low > 0.1
    z = 1.959963984540054 if confidence == 0.95 else 1.6448536269514722
    n = len(values)
    if values[0] == 0.0:  # Wilson at a share of 0: [0, z^2 / (n + z^2)]
        assert (estimate.ci_low, estimate.ci_high) == pytest.approx((0.0, z * z / (n + z * z)))
    if values[0] == 1.0:
        assert (estimate.ci_low, estimate.ci_high) == pytest.approx((n / (n + z * z), 1.0))


def test_varied_scores_keep_the_bootstrap_interval() -> None:
    estimate = bootstrap_mean([0.1, 0.4, 0.9], n_bootstrap=200, confidence=0.95, seed=0, key="k")
    assert estimate.method is IntervalMethod.BOOTSTRAP
    assert estimate.to_dict()["method"] == "bootstrap"
