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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autorubric_local.core.errors import InputError

LABELS = ("1", "2", "tie")
"""The labels of a pairwise judgment: slot 1 better, slot 2 better, a tie."""

A, B, TIE = "a", "b", "tie"


def _checked(probabilities: Mapping[str, float]) -> dict[str, float]:
    unknown = sorted(set(probabilities) - set(LABELS))
    if unknown:
        raise InputError(f"pairwise labels must be among {list(LABELS)}, got {unknown}")
    values = {label: float(probabilities.get(label, 0.0)) for label in LABELS}
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


__all__ = ["LABELS", "PositionConsistency", "balanced_preference", "consistent", "hard_verdict", "position_consistency",
           "swap_rule", "system_probabilities"]
