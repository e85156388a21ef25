"""The one item bootstrap: resamples of items with replacement and the percentile interval.

Every percentile bootstrap over items in the package draws its resamples here (Efron &
Tibshirani, 1993, *An Introduction to the Bootstrap*, Chapman & Hall, ch. 6 and 13): resample
``b`` is ``rng.integers(0, n_items, n_items)``, one call per resample, in order, from the
caller's seeded ``numpy.random.Generator``; the interval is the ``(1 - c) / 2`` and
``(1 + c) / 2`` quantiles of the resampled statistics that are defined (``numpy.quantile``,
linear interpolation). Users: :func:`autorubric_local.metrics.bootstrap.bootstrap_metrics`
(item multiplicities, :func:`resample_counts`) and
:func:`autorubric_local.bias.aggregate.bootstrap_mean` (item indices, :func:`resample_indices`);
the cluster bootstraps of comparisons, over prompts
(:func:`autorubric_local.comparisons.bradley_terry.bootstrap_bradley_terry`,
:func:`autorubric_local.comparisons.style.bootstrap_style_controlled`: counts as prompt weights;
:func:`autorubric_local.comparisons.ranking.consistency_interval`: indices).

Only numpy is imported, so every room may use it without loading the analysis stack.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from autorubric_local.core.errors import InputError

__all__ = ["percentile_interval", "resample_counts", "resample_indices"]


def resample_indices(rng: np.random.Generator, n_items: int, n_bootstrap: int) -> Iterator[np.ndarray]:
    """Item indices of each bootstrap resample, drawn with replacement.

    Parameters
    ----------
    rng : numpy.random.Generator
        Seeded by the caller; the same state gives the same resamples.
    n_items : int, >= 0
    n_bootstrap : int, >= 0
        How many resamples to yield.

    Yields
    ------
    ndarray of int64, shape (n_items,)
        ``rng.integers(0, n_items, n_items)``: uniform on ``[0, n_items)``. With no items, an
        empty array and nothing drawn from ``rng``.
    """
    for _ in range(n_bootstrap):
        yield rng.integers(0, n_items, n_items) if n_items else np.zeros(0, dtype=np.int64)


def resample_counts(rng: np.random.Generator, n_items: int, n_bootstrap: int) -> Iterator[np.ndarray]:
    """How often each item is drawn in each bootstrap resample (the resamples of
    :func:`resample_indices`, as multiplicities).

    Parameters
    ----------
    rng : numpy.random.Generator
    n_items, n_bootstrap : int, >= 0

    Yields
    ------
    ndarray of float, shape (n_items,)
        ``np.bincount(indices, minlength=n_items)``: non-negative whole numbers summing to
        ``n_items``, usable as weights of a weighted statistic.
    """
    for indices in resample_indices(rng, n_items, n_bootstrap):
        yield np.bincount(indices, minlength=n_items).astype(float)


def percentile_interval(values: Sequence[float] | np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile bootstrap interval: ``numpy.quantile`` of ``values`` at ``(1 - c) / 2``
    and ``(1 + c) / 2`` (Efron & Tibshirani, 1993, ch. 13.3), linear interpolation.

    Parameters
    ----------
    values : array-like of float, shape (n_valid,), n_valid >= 1
        The statistic on each resample where it is defined.
    confidence : float in (0, 1)

    Returns
    -------
    (float, float)
        Lower and upper bound, lower <= upper.

    Raises
    ------
    InputError
        ``values`` is empty (no resample defined the statistic).
    """
    if len(values) == 0:
        raise InputError("values is empty: no resample defined the statistic")
    low, high = np.quantile(np.asarray(values, dtype=float), [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)
