"""Train/test splits of a dataset's items, stratified by ground truth (``RubricDataset.split_train_test``)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from autorubric_local.dataset import DataItem
from autorubric_local.errors import InputError
from autorubric_local.types import CriterionVerdict


def split_indices(items: Sequence[DataItem], n_train: int, *, stratify: bool, seed: int | None) -> list[int]:
    """Indices of the ``n_train`` training items, ascending.

    With ``stratify``, stratum ``s`` of ``n_s`` items (same ground-truth signature; items
    without ground truth form one stratum) gets ``floor(n_train * n_s / N)`` items, and the
    rest go to the largest remainders (Hamilton's method, seeded random ties); without it the
    items are drawn at random.

    Raises
    ------
    InputError
        ``n_train`` not an integer with ``0 < n_train < len(items)``.
    """
    total = len(items)
    if isinstance(n_train, bool) or not isinstance(n_train, int) or not 0 < n_train < total:
        raise InputError(
            f"split_train_test: n_train must be an integer with 0 < n_train < {total} "
            f"(the dataset has {total} items), got {n_train!r}"
        )
    rng = random.Random(seed)
    strata: dict[tuple[str, ...] | None, list[int]] = {}
    for index, item in enumerate(items):
        strata.setdefault(_signature(item) if stratify else None, []).append(index)
    chosen: list[int] = []
    for members, quota in zip(strata.values(), _quotas([len(m) for m in strata.values()], n_train, rng)):
        chosen.extend(rng.sample(members, quota))
    return sorted(chosen)


def _signature(item: DataItem) -> tuple[str, ...] | None:
    """An item's ground-truth signature for stratification (None: no ground truth)."""
    if item.ground_truth is None:
        return None
    return tuple(v.value if isinstance(v, CriterionVerdict) else v for v in item.ground_truth)


def _quotas(sizes: Sequence[int], n: int, rng: random.Random) -> list[int]:
    """Split ``n`` over strata of ``sizes`` in proportion (largest remainder, random ties)."""
    total = sum(sizes)
    exact = [n * size / total for size in sizes]
    quotas = [math.floor(x) for x in exact]
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - quotas[i]), rng.random()))
    for i in order[: n - sum(quotas)]:
        quotas[i] += 1
    return quotas
