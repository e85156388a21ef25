"""Aggregate sweep cells per (judge, criterion, variant): means with bootstrap intervals,
position and option histograms, the position-bias profile and a shown-vs-chosen heat map.

Every score is averaged over the items where it is defined (the Grade Score paper reports means of
per-trial scores). Intervals are percentile bootstrap intervals of the mean over items:
``n_bootstrap`` resamples of the items with replacement, the ``(1 - confidence) / 2`` and
``(1 + confidence) / 2`` quantiles of the resampled means (the package's one item bootstrap,
:mod:`autorubric_local.metrics.resampling`, as ``metrics --bootstrap`` uses). The generator of each
(judge, criterion, variant, metric) is seeded from ``(seed, that key)``, so intervals are
reproducible and do not depend on what else was aggregated.

When every resample gives the same mean (one item, or every item with the same score, as a
judge that always picks the same position gives), the percentile interval has zero width: it
says nothing about the judge beyond these items, and excludes every other value. It is then
replaced by the bounded-range (Wilson) score interval of the mean of values in [0, 1] with the
number of items as n (:func:`~autorubric_local.estimates.methods.bounded_mean_interval`, as
``estimate`` and a comparison's position consistency do), and :attr:`Estimate.method` says so.

Items may differ in their number of options (per-item rubrics, selection tasks with varying
candidates): vectors indexed by position or option are padded to the largest N; the
position profile averages each position over the items that have it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from autorubric_local.bias.cells import SweepCell, SweepSettings, Variant
from autorubric_local.metrics.resampling import percentile_interval, resample_indices

__all__ = ["Estimate", "IntervalMethod", "SweepAggregate", "aggregate_cells", "bootstrap_mean"]

SCORE_FIELDS: tuple[str, ...] = (
    "llm_score", "choice_score", "grade_score",
    "expected_llm_score", "expected_choice_score", "expected_grade_score",
)
OPTIONAL_ESTIMATES: tuple[str, ...] = ("agreement", "expected_agreement", "mode_agreement")
"""The estimates of an aggregate with human preferences only (selection sweeps)."""


class IntervalMethod(str, Enum):
    """How an :class:`Estimate`'s interval was computed: ``bootstrap``, the percentile bootstrap
    over items; ``wilson``, the bounded-range (Wilson) score interval, used where the bootstrap
    interval would have zero width (module docstring)."""

    BOOTSTRAP = "bootstrap"
    WILSON = "wilson"


@dataclass(frozen=True)
class Estimate:
    """A mean over items with its interval (``None`` where undefined).

    Attributes
    ----------
    mean : float or None
        None when ``n == 0``.
    ci_low, ci_high : float or None
        None when ``n == 0`` or ``n_bootstrap == 0``. Never of zero width: where the bootstrap
        interval would be (one item, or all items alike), the bounded-range interval.
    n : int
        Items the mean is over.
    method : IntervalMethod or None
        How the interval was computed; None when there is none.
    """

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    method: IntervalMethod | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"mean", "ci_low", "ci_high", "n", "method"}``."""
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n,
                "method": None if self.method is None else self.method.value}


def bootstrap_mean(values: Sequence[float], *, n_bootstrap: int, confidence: float, seed: int, key: str,
                   value_range: tuple[float, float] = (0.0, 1.0)) -> Estimate:
    """Mean of ``values`` and its percentile bootstrap interval, or, where that interval would
    have zero width, the bounded-range (Wilson) interval (module docstring).

    Parameters
    ----------
    values : sequence of float, shape (n,)
        Each within ``value_range``.
    n_bootstrap : int, >= 0
        0: no interval.
    confidence : float in (0, 1)
    seed : int
    key : str
        Names the quantity; with ``seed`` it seeds the resampling generator.
    value_range : (float, float), default (0.0, 1.0)
        The range the values (every score of a sweep) can take; the fallback interval lies in it.

    Returns
    -------
    Estimate
        ``method`` ``bootstrap``, or ``wilson`` when every resample gave the same mean (for one
        value of 0.7 at 95%, about [0.10, 0.98] instead of [0.7, 0.7]).

    References
    ----------
    B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall 1993,
    ch. 13 (percentile intervals); E. B. Wilson, JASA 1927 (the fallback,
    :func:`~autorubric_local.estimates.methods.bounded_mean_interval`).
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Estimate(None, None, None, 0)
    mean = float(data.mean())
    if n_bootstrap == 0:
        return Estimate(mean, None, None, int(data.size))
    digest = hashlib.sha256(f"{seed}\x1f{key}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    means = data[np.stack(list(resample_indices(rng, data.size, n_bootstrap)))].mean(axis=1)
    low, high = percentile_interval(means, confidence)
    lowest, highest = value_range
    if high - low <= 1e-12 * (highest - lowest):  # every resample alike: no zero-width interval
        from autorubric_local.estimates.methods import bounded_mean_interval  # scipy: only when needed

        low, high = bounded_mean_interval(mean, data.size, lowest, highest, 1.0 - confidence)
        return Estimate(mean, low, high, int(data.size), IntervalMethod.WILSON)
    return Estimate(mean, float(low), float(high), int(data.size), IntervalMethod.BOOTSTRAP)


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
        """JSON-ready dict: score fields hold the mean, ``<field>_ci`` the interval and
        ``<field>_ci_method`` how it was computed (:class:`IntervalMethod`; None without one)."""
        out: dict[str, Any] = {
            "judge_id": self.judge_id,
            "criterion_index": self.criterion_index,
            "criterion": self.criterion_name,
            "variant": self.variant.value,
            "n_items": self.n_items,
            "n_rotations": self.n_rotations,
            "n_dropped": self.n_dropped,
        }
        for name in SCORE_FIELDS + OPTIONAL_ESTIMATES:
            estimate: Estimate | None = getattr(self, name)
            out[name] = None if estimate is None else estimate.mean
            out[f"{name}_ci"] = None if estimate is None else [estimate.ci_low, estimate.ci_high]
            out[f"{name}_ci_method"] = None if estimate is None or estimate.method is None else estimate.method.value
        out.update(
            position_histogram=list(self.position_histogram),
            option_histogram=list(self.option_histogram),
            position_profile=list(self.position_profile),
            shown_vs_chosen=[list(row) for row in self.shown_vs_chosen],
            unrelated_rate=self.unrelated_rate,
        )
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepAggregate:
        """The aggregate whose :meth:`to_dict` is ``data`` (a stored ``sweep_aggregates.summary_json``).

        ``to_dict`` keeps means and intervals but not the item count behind each estimate:
        ``Estimate.n`` is set to ``n_items``. Rows written before ``<field>_ci_method`` existed
        read as ``bootstrap`` where they have an interval.

        Raises
        ------
        KeyError, ValueError
            ``data`` lacks a field or has an unknown variant.
        """
        n = int(data["n_items"])

        def estimate(name: str) -> Estimate | None:
            if name not in data or (data[name] is None and data.get(f"{name}_ci") is None):
                return None
            low, high = data.get(f"{name}_ci") or (None, None)
            method = data.get(f"{name}_ci_method") or (None if low is None else IntervalMethod.BOOTSTRAP.value)
            return Estimate(data[name], low, high, n if data[name] is not None else 0,
                            None if method is None else IntervalMethod(method))

        scores = {name: estimate(name) or Estimate(None, None, None, 0) for name in SCORE_FIELDS}
        return cls(
            judge_id=data["judge_id"],
            criterion_index=int(data["criterion_index"]),
            criterion_name=data["criterion"],
            variant=Variant(data["variant"]),
            n_items=n,
            n_rotations=int(data["n_rotations"]),
            n_dropped=int(data["n_dropped"]),
            position_histogram=tuple(data["position_histogram"]),
            option_histogram=tuple(data["option_histogram"]),
            position_profile=tuple(data["position_profile"]),
            shown_vs_chosen=tuple(tuple(row) for row in data["shown_vs_chosen"]),
            unrelated_rate=data.get("unrelated_rate"),
            **scores,  # type: ignore[arg-type]
            **{name: estimate(name) for name in OPTIONAL_ESTIMATES},  # type: ignore[arg-type]
        )


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
