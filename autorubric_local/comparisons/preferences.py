"""One comparison of two systems judged in both slot orders: preferences and position bias.

A comparison ``(q, a, b)`` shows the judge prompt ``q`` with system ``a``'s response in slot 1
and ``b``'s in slot 2 (order ``ab``), and again with the slots swapped (order ``ba``). In each
order the judge answers one of :data:`LABELS`: ``"1"`` (slot 1 is better), ``"2"`` or ``"tie"``,
with a probability for each.

- :func:`system_probabilities` maps one order's label probabilities back to systems.
- :func:`balanced_preference`: the mean over both orders of the probabilities mapped to systems,
  Wang et al.'s balanced position calibration ("Large Language Models are not Fair Evaluators",
  ACL 2024, arXiv 2305.17926).
- :func:`swap_rule`: the MT-Bench rule (Zheng et al., "Judging LLM-as-a-Judge with MT-Bench and
  Chatbot Arena", NeurIPS 2023, arXiv 2306.05685): a pair is won only when both orders' hard
  verdicts agree, and is a tie otherwise.
- :func:`position_consistency`: the share of comparisons whose hard verdict, mapped to systems,
  is the same in both orders (Shi et al., "Judging the Judges", arXiv 2406.07791), the conflict
  rate ``1 - consistency`` (Wang et al.), and among the inconsistent comparisons the share of
  non-tie verdicts that chose slot 1 (primacy) or slot 2 (recency).

The 5-point scale (``compare --scale 5``): in each order the judge answers one of
:data:`LABELS5` (``1>>2`` slot 1 much better, ``1>2`` slightly better, ``1=2``, ``2>1``,
``2>>1``), the scale Arena-Hard-Auto's judge uses (Li et al. 2024, "From Crowdsourced Data to
High-Quality Benchmarks: Arena-Hard and BenchBuilder", arXiv 2406.11939).

- :func:`graded_probabilities` maps one order's labels to :data:`GRADES` in system space
  (``a>>b`` ... ``b>>a``; in order ``ba`` the scale flips); :func:`balanced_graded` averages both
  orders (balanced position calibration, as for three labels).
- The soft preference (:func:`graded_preference`) is the expected value of the grade under
  :data:`GRADE_VALUES` ``(1, 0.75, 0.5, 0.25, 0)``, equally spaced on [0, 1] so that a human's
  ``a`` / tie / ``b`` (1, 0.5, 0) is on the same scale; it is written as three probabilities, a
  slight win counted as half a win and half a tie, whose ``P(a) + P(tie) / 2`` is that expected
  value (so win rates, paired tests and PPI++ use it unchanged).
- Bradley-Terry counts (:func:`arena_hard_counts`): Arena-Hard-Auto's ``show_result.py`` turns
  each order's verdict into games, a strong verdict (``>>``) as :data:`STRONG_WEIGHT` = 3 wins,
  a slight one as 1 win, a tie as 1 tie (half a win each); the expected counts of each order,
  averaged over the two orders.
- Hard verdicts (:func:`hard_label`): the most probable label; its direction (``"1"``, ``"2"`` or
  ``"tie"``, :func:`collapsed_verdict`) is what the swap rule and position consistency compare,
  so a judge that says ``1>>2`` in one order and ``2>1`` in the other is consistent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autorubric_local.core.errors import InputError

LABELS = ("1", "2", "tie")
"""The labels of a pairwise judgment: slot 1 better, slot 2 better, a tie."""

A, B, TIE = "a", "b", "tie"


def _checked(probabilities: Mapping[str, float], labels: Sequence[str] = LABELS,
             what: str = "pairwise labels") -> dict[str, float]:
    """``probabilities`` over ``labels`` (missing ones 0), normalised to sum to 1; an
    ``InputError`` for an unknown label, a value outside [0, 1] or a zero total."""
    unknown = sorted(set(probabilities) - set(labels))
    if unknown:
        raise InputError(f"{what} must be among {list(labels)}, got {unknown}")
    values = {label: float(probabilities.get(label, 0.0)) for label in labels}
    if any(not 0.0 <= v <= 1.0 for v in values.values()):
        raise InputError(f"pairwise label probabilities must lie in [0, 1], got {values}")
    total = sum(values.values())
    if total <= 0.0:
        raise InputError("pairwise label probabilities sum to 0")
    return {label: v / total for label, v in values.items()}


def system_probabilities(probabilities: Mapping[str, float], *, swapped: bool) -> dict[str, float]:
    """One order's label probabilities as ``{"a": P(a wins), "b": P(b wins), "tie": P(tie)}``.

    Parameters
    ----------
    probabilities : mapping of label to float
        Over :data:`LABELS` (a missing label counts 0); renormalised to sum to 1.
    swapped : bool
        False for order ``ab`` (a in slot 1), True for order ``ba`` (b in slot 1).

    Raises
    ------
    InputError
        An unknown label, a probability outside [0, 1], or all zero.
    """
    p = _checked(probabilities)
    slot_of_a, slot_of_b = ("2", "1") if swapped else ("1", "2")
    return {A: p[slot_of_a], B: p[slot_of_b], TIE: p["tie"]}


def balanced_preference(ab: Mapping[str, float], ba: Mapping[str, float]) -> dict[str, float]:
    """Balanced position calibration: the mean of both orders' probabilities mapped to systems.

    ``P(a wins) = (P_ab("1") + P_ba("2")) / 2``, ``P(b wins) = (P_ab("2") + P_ba("1")) / 2``,
    ``P(tie) = (P_ab("tie") + P_ba("tie")) / 2`` (Wang et al., arXiv 2305.17926, "balanced
    position calibration", applied to the judge's probabilities rather than to sampled scores).

    Returns
    -------
    dict
        ``{"a", "b", "tie"}``, summing to 1.
    """
    first, second = system_probabilities(ab, swapped=False), system_probabilities(ba, swapped=True)
    return {key: (first[key] + second[key]) / 2.0 for key in (A, B, TIE)}


def hard_verdict(probabilities: Mapping[str, float]) -> str:
    """The most probable label of one order; ``"tie"`` when it is the most probable or when
    slots 1 and 2 are exactly as probable (no preference for either slot)."""
    p = _checked(probabilities)
    if p["tie"] >= max(p["1"], p["2"]) or p["1"] == p["2"]:
        return "tie"
    return "1" if p["1"] > p["2"] else "2"


def _to_system(verdict: str, *, swapped: bool) -> str:
    if verdict not in LABELS:
        raise InputError(f"a pairwise verdict must be one of {list(LABELS)}, got {verdict!r}")
    if verdict == "tie":
        return TIE
    return (A if verdict == "1" else B) if not swapped else (B if verdict == "1" else A)


def swap_rule(verdict_ab: str, verdict_ba: str) -> str:
    """The MT-Bench rule: ``"a"`` or ``"b"`` when both orders' verdicts name that system, else ``"tie"``.

    Zheng et al., NeurIPS 2023, arXiv 2306.05685, section 3.4 ("a win only if it is preferred in
    both orders; otherwise a tie"); FastChat ``llm_judge``.
    """
    first, second = _to_system(verdict_ab, swapped=False), _to_system(verdict_ba, swapped=True)
    return first if first == second and first != TIE else TIE


def consistent(verdict_ab: str, verdict_ba: str) -> bool:
    """Whether two orders' hard verdicts (slot labels) name the same system, or are both a tie."""
    return _to_system(verdict_ab, swapped=False) == _to_system(verdict_ba, swapped=True)


@dataclass(frozen=True)
class PositionConsistency:
    """Position bias of a set of two-order comparisons.

    Attributes
    ----------
    n : int
        Comparisons.
    consistency : float
        Share whose hard verdicts name the same system (or both a tie) in both orders.
    conflict_rate : float
        ``1 - consistency`` (Wang et al.).
    primacy, recency : float or None
        Among the inconsistent comparisons' non-tie verdicts, the share that chose slot 1
        (primacy) and slot 2 (recency); None when there is no such verdict. A judge without
        position bias splits them evenly.
    """

    n: int
    consistency: float
    conflict_rate: float
    primacy: float | None
    recency: float | None


def position_consistency(verdicts: Sequence[tuple[str, str]]) -> PositionConsistency:
    """Position consistency, conflict rate, primacy and recency of two-order comparisons.

    Parameters
    ----------
    verdicts : sequence of (verdict_ab, verdict_ba), length n >= 1
        Each comparison's hard verdict (a label of :data:`LABELS`) in order ``ab`` and in order
        ``ba``.

    Returns
    -------
    PositionConsistency

    Raises
    ------
    InputError
        No comparison, or a verdict not among :data:`LABELS`.

    References
    ----------
    L. Shi et al., "Judging the Judges: A Systematic Study of Position Bias in LLM-as-a-Judge",
    arXiv 2406.07791 (position consistency); P. Wang et al., arXiv 2305.17926 (conflict rate).
    """
    if not verdicts:
        raise InputError("position consistency needs at least one comparison")
    agreeing = 0
    slot_one = slot_two = 0
    for ab, ba in verdicts:
        if consistent(ab, ba):
            agreeing += 1
            continue
        for verdict in (ab, ba):
            slot_one += verdict == "1"
            slot_two += verdict == "2"
    n = len(verdicts)
    decided = slot_one + slot_two
    return PositionConsistency(n, agreeing / n, 1.0 - agreeing / n,
                               slot_one / decided if decided else None, slot_two / decided if decided else None)


# ---------------------------------------------------------------------------- the 5-point scale

LABELS5 = ("1>>2", "1>2", "1=2", "2>1", "2>>1")
"""The labels of a 5-point pairwise judgment, slot space: slot 1 much better ... slot 2 much better."""

GRADES = ("a>>b", "a>b", "tie", "b>a", "b>>a")
"""The 5-point scale in system space (``a`` the pair's first system)."""

GRADE_VALUES = (1.0, 0.75, 0.5, 0.25, 0.0)
"""The value of each grade for ``a`` (module docstring): the soft preference is its expectation."""

STRONG_WEIGHT = 3.0
"""Games a strong verdict (``>>``) counts for in Bradley-Terry (Arena-Hard-Auto's ``weight=3``)."""

_DIRECTION5 = {"1>>2": "1", "1>2": "1", "1=2": "tie", "2>1": "2", "2>>1": "2"}


def _checked5(probabilities: Mapping[str, float]) -> dict[str, float]:
    return _checked(probabilities, LABELS5, "5-point pairwise labels")


def graded_probabilities(probabilities: Mapping[str, float], *, swapped: bool) -> dict[str, float]:
    """One order's 5-point label probabilities in system space, keyed by :data:`GRADES`.

    Order ``ab`` (``swapped`` False): ``a>>b`` is ``1>>2`` and so on. Order ``ba``: slot 1 holds
    ``b``, so the scale flips: ``a>>b`` is ``2>>1``, ``a>b`` is ``2>1``, ``b>>a`` is ``1>>2``.

    Raises
    ------
    InputError
        An unknown label, a probability outside [0, 1], or all zero.
    """
    p = _checked5(probabilities)
    shown = [p[label] for label in LABELS5]
    return dict(zip(GRADES, reversed(shown) if swapped else shown, strict=True))


def balanced_graded(ab: Mapping[str, float], ba: Mapping[str, float]) -> dict[str, float]:
    """Balanced position calibration on the 5-point scale: the mean over both orders of
    :func:`graded_probabilities` (Wang et al., arXiv 2305.17926). Keys :data:`GRADES`, sum 1."""
    first, second = graded_probabilities(ab, swapped=False), graded_probabilities(ba, swapped=True)
    return {key: (first[key] + second[key]) / 2.0 for key in GRADES}


def graded_preference(graded: Mapping[str, float]) -> dict[str, float]:
    """A 5-point distribution (keys :data:`GRADES`) as ``{"a", "b", "tie"}``, a slight win
    counted as half a win and half a tie: ``P(a) = P(a>>b) + P(a>b) / 2``, ``P(tie) = P(tie) +
    (P(a>b) + P(b>a)) / 2``, ``P(b) = P(b>>a) + P(b>a) / 2``. Then ``P(a) + P(tie) / 2`` is the
    expected grade under :data:`GRADE_VALUES` (module docstring)."""
    return {A: graded["a>>b"] + graded["a>b"] / 2.0, B: graded["b>>a"] + graded["b>a"] / 2.0,
            TIE: graded["tie"] + (graded["a>b"] + graded["b>a"]) / 2.0}


def expected_grade(graded: Mapping[str, float]) -> float:
    """``sum_g P(g) v_g`` over :data:`GRADES` with the values :data:`GRADE_VALUES`, in [0, 1]."""
    return float(sum(graded[g] * v for g, v in zip(GRADES, GRADE_VALUES, strict=True)))


def arena_hard_counts(graded: Mapping[str, float]) -> tuple[float, float, float]:
    """Expected Bradley-Terry counts ``(wins, ties, losses)`` of ``a`` from a 5-point distribution
    (keys :data:`GRADES`), Arena-Hard-Auto's weighting: ``wins = 3 P(a>>b) + P(a>b)``, ``ties =
    P(tie)``, ``losses = P(b>a) + 3 P(b>>a)`` (:data:`STRONG_WEIGHT`; ``show_result.py``, Li et al.
    2024, arXiv 2406.11939). Their total is between 1 and 3."""
    return (STRONG_WEIGHT * graded["a>>b"] + graded["a>b"], graded["tie"],
            graded["b>a"] + STRONG_WEIGHT * graded["b>>a"])


def hard_label(probabilities: Mapping[str, float]) -> str:
    """The most probable 5-point label of one order; among equally probable labels, the one
    nearest ``1=2`` (the weaker claim)."""
    p = _checked5(probabilities)
    top = max(p.values())
    return min((label for label in LABELS5 if p[label] == top), key=lambda label: abs(LABELS5.index(label) - 2))


def collapsed_verdict(probabilities: Mapping[str, float]) -> str:
    """The direction of :func:`hard_label`: ``"1"``, ``"2"`` or ``"tie"`` (a label of
    :data:`LABELS`), what the swap rule and position consistency compare."""
    return _DIRECTION5[hard_label(probabilities)]


def weighted_swap_counts(ab: Mapping[str, float], ba: Mapping[str, float]) -> tuple[float, float, float]:
    """The swap rule's Bradley-Terry counts of a 5-point pair: the direction from
    :func:`swap_rule` on both orders' :func:`collapsed_verdict`; a win weighs the mean over the
    two orders of each verdict's games (3 for ``>>``, 1 for ``>``, Arena-Hard-Auto's weights);
    a tie is one tie."""
    labels = hard_label(ab), hard_label(ba)
    verdict = swap_rule(*(_DIRECTION5[label] for label in labels))
    if verdict == TIE:
        return 0.0, 1.0, 0.0
    weight = sum(STRONG_WEIGHT if ">>" in label else 1.0 for label in labels) / 2.0
    return (weight, 0.0, 0.0) if verdict == A else (0.0, 0.0, weight)


__all__ = ["GRADES", "GRADE_VALUES", "LABELS", "LABELS5", "STRONG_WEIGHT", "PositionConsistency", "arena_hard_counts",
           "balanced_graded", "balanced_preference", "collapsed_verdict", "consistent", "expected_grade",
           "graded_preference", "graded_probabilities", "hard_label", "hard_verdict", "position_consistency",
           "swap_rule", "system_probabilities", "weighted_swap_counts"]
