"""Grade Score of one (item, criterion, judge) rotation sweep: pure functions, no model.

Source: Iourovitski, "Grade Score: Quantifying LLM Performance in Option Selection" (2024;
github.com/IoDmitri/GradeLab), section 4. The N options of a criterion are judged in their
N cyclic rotations, so each option is shown at each position exactly once (section 3.2). Over
the ``M`` rotations whose judgment did not fail (failed ones are dropped and counted):

- **LLM Score** (eqs. 1-3): the entropy of the *shown positions* the judge selected,
  ``H = -sum_k f_k log2 f_k`` with ``f_k`` = share of the M rotations in which position ``k``
  was chosen, normalised by ``H_max = log2 N``. 0 = always the same position (order bias),
  1 = every position chosen equally often. ``N`` is the number of options, so with dropped
  rotations (``M < N``) the score cannot reach 1: missing rotations are not evidence of
  fairness.
- **Choice Score** (eqs. 4-5): the frequency of the most chosen *original option* divided by
  the number of samples, ``max_i c_i / M``. 1 = the same content chosen in every order.
- **Grade Score** (eq. 6): the harmonic mean ``2 L C / (L + C)``, defined as 0 when
  ``L + C = 0``.

Expected versions (an extension: the engine gives each rotation's full label distribution
``p_r``, shown-position order, summing to 1):

- **position profile** ``q_k = mean_r p_r[k]``: the mean probability given to shown position
  ``k`` regardless of content; **expected LLM Score** = ``H(q) / log2 N``.
- **option profile** ``o_i = mean_r p_r[pos_r(i)]``, where ``pos_r(i)`` is where option ``i``
  was shown in rotation ``r``; **expected Choice Score** = ``max_i o_i``.
- **expected Grade Score**: their harmonic mean.

With one-hot distributions the expected scores equal the argmax ones.

Degenerate cases: with ``N = 1`` there is no choice to be biased or inconsistent in, and with
``M = 0`` (every rotation failed) nothing was observed; in both cases every score is ``None``
(undefined, never a made-up number) and the histograms are still returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from autorubric_local.core.errors import InputError

__all__ = ["GradeScores", "RotationOutcome", "grade_scores", "harmonic_mean", "normalized_entropy"]


@dataclass(frozen=True)
class RotationOutcome:
    """What the judge did on one rotation of the options.

    Attributes
    ----------
    option_order : tuple of int, shape (N,)
        Shown position -> original option index (a permutation of ``range(N)``).
    chosen_position : int or None
        Shown position of the verdict (argmax); None when the judgment failed.
    probabilities : tuple of float, shape (N,) or (0,)
        Label distribution in shown-position order; empty when the judgment failed.
    """

    option_order: tuple[int, ...]
    chosen_position: int | None
    probabilities: tuple[float, ...] = ()

    @property
    def failed(self) -> bool:
        """True when this rotation has no verdict (it is dropped from the scores)."""
        return self.chosen_position is None

    @property
    def chosen_option(self) -> int | None:
        """Original index of the chosen option, or None when the judgment failed."""
        return None if self.chosen_position is None else self.option_order[self.chosen_position]


@dataclass(frozen=True)
class GradeScores:
    """Scores of one rotation sweep (module docstring for the formulas).

    Attributes
    ----------
    n_options : int
        N, the number of options (and of positions).
    n_rotations : int
        M, rotations with a verdict (used in the scores).
    n_dropped : int
        Rotations whose judgment failed.
    llm_score, choice_score, grade_score : float in [0, 1] or None
        Argmax versions; None when undefined (N = 1 or M = 0).
    expected_llm_score, expected_choice_score, expected_grade_score : float in [0, 1] or None
        Versions from the label distributions.
    position_counts : tuple of int, shape (N,)
        How often each shown position was chosen.
    option_counts : tuple of int, shape (N,)
        How often each original option was chosen.
    position_profile : tuple of float, shape (N,) or (0,)
        Mean probability per shown position (empty when M = 0).
    option_profile : tuple of float, shape (N,) or (0,)
        Mean probability per original option (empty when M = 0).
    mode_option : int or None
        The most chosen original option (ties: lowest index); None when M = 0.
    """

    n_options: int
    n_rotations: int
    n_dropped: int
    llm_score: float | None
    choice_score: float | None
    grade_score: float | None
    expected_llm_score: float | None
    expected_choice_score: float | None
    expected_grade_score: float | None
    position_counts: tuple[int, ...]
    option_counts: tuple[int, ...]
    position_profile: tuple[float, ...]
    option_profile: tuple[float, ...]
    mode_option: int | None


def normalized_entropy(distribution: Sequence[float], n: int) -> float:
    """Shannon entropy (base 2) of ``distribution`` divided by ``log2 n`` (Grade Score paper, eqs. 1-3).

    Parameters
    ----------
    distribution : sequence of float, shape (n,)
        Non-negative values summing to 1; zero terms contribute 0 (``0 log 0 = 0``).
    n : int, >= 2
        Number of categories; ``log2 n`` is the maximum entropy.

    Returns
    -------
    float in [0, 1]
    """
    if n < 2:
        raise InputError(f"normalized_entropy: n must be >= 2, got {n}")
    entropy = -sum(p * math.log2(p) for p in distribution if p > 0.0)
    return min(1.0, max(0.0, entropy / math.log2(n)))


def harmonic_mean(a: float, b: float) -> float:
    """``2ab / (a + b)`` (Grade Score paper, eq. 6); 0 when ``a + b = 0``."""
    return 0.0 if a + b <= 0.0 else 2.0 * a * b / (a + b)


def _check(rotations: Sequence[RotationOutcome]) -> int:
    if not rotations:
        raise InputError("grade_scores: no rotations given")
    n = len(rotations[0].option_order)
    for r, outcome in enumerate(rotations):
        if sorted(outcome.option_order) != list(range(n)):
            raise InputError(
                f"grade_scores: rotation {r}: option_order must be a permutation of 0..{n - 1}, "
                f"got {list(outcome.option_order)}"
            )
        if outcome.chosen_position is not None and not 0 <= outcome.chosen_position < n:
            raise InputError(
                f"grade_scores: rotation {r}: chosen_position must be in [0, {n - 1}], "
                f"got {outcome.chosen_position}"
            )
        if outcome.chosen_position is not None and len(outcome.probabilities) != n:
            raise InputError(
                f"grade_scores: rotation {r}: probabilities must have {n} values, "
                f"got {len(outcome.probabilities)}"
            )
    return n


def grade_scores(rotations: Sequence[RotationOutcome]) -> GradeScores:
    """LLM, Choice and Grade Scores (argmax and expected) of one rotation sweep.

    Parameters
    ----------
    rotations : sequence of RotationOutcome, length >= 1
        One per judged order of the same N options (normally the N cyclic rotations).
        Failed rotations (``chosen_position is None``) are dropped and counted.

    Returns
    -------
    GradeScores

    Raises
    ------
    InputError
        If no rotations are given, an order is not a permutation of ``0..N-1``, or a chosen
        position or probability vector does not fit N.

    Examples
    --------
    A judge that always picks the first position, over the 3 rotations of 3 options:

    >>> orders = [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    >>> s = grade_scores([RotationOutcome(o, 0, (1.0, 0.0, 0.0)) for o in orders])
    >>> s.llm_score, round(s.choice_score, 4), s.grade_score
    (0.0, 0.3333, 0.0)
    """
    n = _check(rotations)
    valid = [o for o in rotations if not o.failed]
    m = len(valid)
    position_counts = [0] * n
    option_counts = [0] * n
    position_profile = [0.0] * n
    option_profile = [0.0] * n
    for outcome in valid:
        assert outcome.chosen_position is not None
        position_counts[outcome.chosen_position] += 1
        option_counts[outcome.option_order[outcome.chosen_position]] += 1
        total = sum(outcome.probabilities)
        for position, p in enumerate(outcome.probabilities):
            share = p / total if total > 0 else 0.0
            position_profile[position] += share / m
            option_profile[outcome.option_order[position]] += share / m
    mode_option = max(range(n), key=lambda i: (option_counts[i], -i)) if m else None
    scores: dict[str, float | None] = dict.fromkeys(
        ("llm", "choice", "grade", "e_llm", "e_choice", "e_grade"), None
    )
    if n >= 2 and m > 0:
        scores["llm"] = normalized_entropy([c / m for c in position_counts], n)
        scores["choice"] = max(option_counts) / m
        scores["grade"] = harmonic_mean(scores["llm"], scores["choice"])
        scores["e_llm"] = normalized_entropy(position_profile, n)
        scores["e_choice"] = min(1.0, max(option_profile))
        scores["e_grade"] = harmonic_mean(scores["e_llm"], scores["e_choice"])
    return GradeScores(
        n_options=n,
        n_rotations=m,
        n_dropped=len(rotations) - m,
        llm_score=scores["llm"],
        choice_score=scores["choice"],
        grade_score=scores["grade"],
        expected_llm_score=scores["e_llm"],
        expected_choice_score=scores["e_choice"],
        expected_grade_score=scores["e_grade"],
        position_counts=tuple(position_counts),
        option_counts=tuple(option_counts),
        position_profile=tuple(position_profile) if m else (),
        option_profile=tuple(option_profile) if m else (),
        mode_option=mode_option,
    )
