"""Stored comparisons built in memory, for tests of the analyses that read one (paired tests,
corrected Bradley-Terry coefficients): no judge, no database."""

from __future__ import annotations

from autorubric_local.comparisons.judging import PairJudgment, StoredComparison


def judged(prompt: str, a: str, b: str, pa: float) -> PairJudgment:
    """A judgment of judge ``j`` on question ``overall`` whose balanced preference for ``a`` is
    ``pa`` (no tie): ``P(1) = pa`` in order ab, ``P(2) = pa`` in order ba."""
    return PairJudgment(f"{prompt} {a} vs {b}", prompt, a, b, "j", "overall",
                        {"1": pa, "2": 1 - pa, "tie": 0.0}, {"1": 1 - pa, "2": pa, "tie": 0.0})


def stored(judgments: list[PairJudgment], systems: list[str]) -> StoredComparison:
    """A finished comparison ``c`` of ``systems`` holding ``judgments``, with one question."""
    description = {"systems": systems, "questions": [{"name": "overall", "text": "", "weight": 0.0}], "pairs": []}
    return StoredComparison("id", "c", description, ("j",), tuple(judgments), "finished")
