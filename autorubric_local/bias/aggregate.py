"""Aggregate sweep cells per (judge, criterion, variant): means with bootstrap intervals,
position and option histograms, the position-bias profile and a shown-vs-chosen heat map.

Every score is averaged over the items where it is defined (the Grade Score paper reports means of
per-trial scores). Intervals are percentile bootstrap intervals of the mean over items:
``n_bootstrap`` resamples of the items with replacement, the ``(1 - confidence) / 2`` and
``(1 + confidence) / 2`` quantiles of the resampled means. The generator of each
(judge, criterion, variant, metric) is seeded from ``(seed, that key)``, so intervals are
reproducible and do not depend on what else was aggregated.

Items may differ in their number of options (per-item rubrics, selection tasks with varying
candidates): vectors indexed by position or option are padded to the largest N; the
position profile averages each position over the items that have it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from autorubric_local.bias.cells import SweepCell, SweepSettings, Variant

__all__ = ["Estimate", "SweepAggregate", "aggregate_cells", "bootstrap_mean"]

SCORE_FIELDS: tuple[str, ...] = (
    "llm_score", "choice_score", "grade_score",
    "expected_llm_score", "expected_choice_score", "expected_grade_score",
)


@dataclass(frozen=True)
class Estimate:
    """A mean over items with its bootstrap interval (``None`` where undefined).

    Attributes
    ----------
    mean : float or None
        None when ``n == 0``.
    ci_low, ci_high : float or None
        None when ``n == 0`` or ``n_bootstrap == 0``; equal to the mean when ``n == 1``.
    n : int
        Items the mean is over.
    """

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        """``{"mean", "ci_low", "ci_high", "n"}``."""
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n}


def bootstrap_mean(values: Sequence[float], *, n_bootstrap: int, confidence: float, seed: int, key: str) -> Estimate:
    """Mean of ``values`` and its percentile bootstrap interval (module docstring).

    Parameters
    ----------
    values : sequence of float, shape (n,)
    n_bootstrap : int, >= 0
    confidence : float in (0, 1)
    seed : int
    key : str
        Names the quantity; with ``seed`` it seeds the resampling generator.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Estimate(None, None, None, 0)
    mean = float(data.mean())
    if n_bootstrap == 0:
        return Estimate(mean, None, None, int(data.size))
    digest = hashlib.sha256(f"{seed}\x1f{key}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    means = data[rng.integers(0, data.size, size=(n_bootstrap, data.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return Estimate(mean, float(low), float(high), int(data.size))


@dataclass(frozen=True)
class SweepAggregate:
    """One judge's results on one criterion (and variant) over all items.

    Attributes
    ----------
    n_items : int
        Cells (items) of this group; scores average over those where they are defined.
    n_rotations, n_dropped : int
        Rotations used and rotations dropped (failed judgments), summed over items.
    llm_score ... expected_grade_score : Estimate
        Means over items with bootstrap intervals.
    position_histogram : tuple of int, shape (max N,)
        How often each shown position was chosen.
    option_histogram : tuple of int, shape (max N,)
        How often each original option was chosen.
    position_profile : tuple of float, shape (max N,)
        Mean probability per shown position regardless of content (position-bias profile).
    shown_vs_chosen : tuple of tuple of int, shape (max N, max N)
        ``[k][j]``: rotations in which the item's modal option was shown at position ``k`` and
        the judge chose position ``j`` (content-following judges fill the diagonal,
        position-biased ones a column).
    unrelated_rate : float or None
        Share of the valid rotations that chose the unrelated option (``unrelated`` variant).
    agreement, expected_agreement : Estimate or None
        Share of rotations choosing / mean probability of the human-preferred option.
    mode_agreement : Estimate or None
        Share of items whose modal option is the preferred one.
    """

    judge_id: str
    criterion_index: int
    criterion_name: str
    variant: Variant
    n_items: int
    n_rotations: int
    n_dropped: int
    llm_score: Estimate
    choice_score: Estimate
    grade_score: Estimate
    expected_llm_score: Estimate
    expected_choice_score: Estimate
    expected_grade_score: Estimate
    position_histogram: tuple[int, ...]
    option_histogram: tuple[int, ...]
    position_profile: tuple[float, ...]
    shown_vs_chosen: tuple[tuple[int, ...], ...]
    unrelated_rate: float | None = None
    agreement: Estimate | None = None
    expected_agreement: Estimate | None = None
    mode_agreement: Estimate | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: score fields hold the mean, ``<field>_ci`` the interval."""
        out: dict[str, Any] = {
            "judge_id": self.judge_id,
            "criterion_index": self.criterion_index,
            "criterion": self.criterion_name,
            "variant": self.variant.value,
            "n_items": self.n_items,
            "n_rotations": self.n_rotations,
            "n_dropped": self.n_dropped,
        }
        for name in SCORE_FIELDS + ("agreement", "expected_agreement", "mode_agreement"):
            estimate: Estimate | None = getattr(self, name)
            out[name] = None if estimate is None else estimate.mean
            out[f"{name}_ci"] = None if estimate is None else [estimate.ci_low, estimate.ci_high]
        out.update(
            position_histogram=list(self.position_histogram),
            option_histogram=list(self.option_histogram),
            position_profile=list(self.position_profile),
            shown_vs_chosen=[list(row) for row in self.shown_vs_chosen],
            unrelated_rate=self.unrelated_rate,
        )
        return out


def _histograms(cells: Sequence[SweepCell], width: int) -> tuple[list[int], list[int], list[float], list[list[int]]]:
    positions, options = [0] * width, [0] * width
    profile_sum, profile_n = [0.0] * width, [0] * width
    heat = [[0] * width for _ in range(width)]
    for cell in cells:
        s = cell.scores
        for k, count in enumerate(s.position_counts):
            positions[k] += count
        for i, count in enumerate(s.option_counts):
            options[i] += count
        for k, p in enumerate(s.position_profile):
            profile_sum[k] += p
            profile_n[k] += 1
        if s.mode_option is None:
            continue
        for result in cell.results:
            if result.chosen is not None and result.task.option_order is not None:
                heat[result.task.option_order.index(s.mode_option)][result.chosen] += 1
    profile = [total / n if n else 0.0 for total, n in zip(profile_sum, profile_n, strict=True)]
    return positions, options, profile, heat


def _aggregate(group: Sequence[SweepCell], settings: SweepSettings) -> SweepAggregate:
    first = group[0]
    key = f"{first.judge_id}\x1f{first.criterion_index}\x1f{first.variant.value}"

    def estimate(name: str, values: Sequence[float | None]) -> Estimate:
        return bootstrap_mean(
            [v for v in values if v is not None], n_bootstrap=settings.n_bootstrap,
            confidence=settings.confidence, seed=settings.seed, key=f"{key}\x1f{name}",
        )

    scores = {name: estimate(name, [getattr(c.scores, name) for c in group]) for name in SCORE_FIELDS}
    width = max(c.scores.n_options for c in group)
    positions, options, profile, heat = _histograms(group, width)
    n_rotations = sum(c.scores.n_rotations for c in group)
    unrelated_rate = None
    if first.unrelated is not None and n_rotations:
        unrelated_rate = sum(c.unrelated_chosen or 0 for c in group) / n_rotations
    with_preference = [c for c in group if c.preferred is not None]
    agreement = expected_agreement = mode_agreement = None
    if with_preference:
        agreement = estimate("agreement", [c.agreement for c in with_preference])
        expected_agreement = estimate("expected_agreement", [c.expected_agreement for c in with_preference])
        mode_agreement = estimate(
            "mode_agreement",
            [None if c.scores.mode_option is None else float(c.scores.mode_option == c.preferred) for c in with_preference],
        )
    return SweepAggregate(
        judge_id=first.judge_id,
        criterion_index=first.criterion_index,
        criterion_name=first.criterion_name,
        variant=first.variant,
        n_items=len(group),
        n_rotations=n_rotations,
        n_dropped=sum(c.scores.n_dropped for c in group),
        **scores,
        position_histogram=tuple(positions),
        option_histogram=tuple(options),
        position_profile=tuple(profile),
        shown_vs_chosen=tuple(tuple(row) for row in heat),
        unrelated_rate=unrelated_rate,
        agreement=agreement,
        expected_agreement=expected_agreement,
        mode_agreement=mode_agreement,
    )


def aggregate_cells(
    cells: Sequence[SweepCell], settings: SweepSettings, judge_ids: Sequence[str] | None = None
) -> list[SweepAggregate]:
    """One :class:`SweepAggregate` per (judge, criterion index, variant).

    Ordered by judge (``judge_ids`` order, else first appearance), criterion index, then the
    ``base`` variant before ``unrelated``.
    """
    groups: dict[tuple[str, int, str], list[SweepCell]] = {}
    for cell in cells:
        groups.setdefault((cell.judge_id, cell.criterion_index, cell.variant.value), []).append(cell)
    order = list(judge_ids) if judge_ids is not None else list(dict.fromkeys(c.judge_id for c in cells))
    keys = sorted(groups, key=lambda k: (order.index(k[0]), k[1], k[2] != "base"))
    return [_aggregate(groups[k], settings) for k in keys]
