"""Train/test splits of a dataset's items, stratified by ground truth (``RubricDataset.split_train_test``)."""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence

from autorubric_local.core.errors import InputError


def split_indices(
    signatures: Sequence[Hashable | None], n_train: int, *, stratify: bool, seed: int | None
) -> list[int]:
    """Indices of the ``n_train`` training items, ascending.

    ``signatures[i]`` is item ``i``'s ground-truth signature (``None``: no ground truth).

    With ``stratify``, stratum ``s`` of ``n_s`` items (same ground-truth signature; items
    without ground truth form one stratum) gets ``floor(n_train * n_s / N)`` items, and the
    rest go to the largest remainders (Hamilton's method, seeded random ties); without it the
    items are drawn at random.

    Raises
    ------
    InputError
        ``n_train`` not an integer with ``0 < n_train < len(items)``.
    """
    total = len(signatures)
    if isinstance(n_train, bool) or not isinstance(n_train, int) or not 0 < n_train < total:
        raise InputError(
            f"split_train_test: n_train must be an integer with 0 < n_train < {total} "
            f"(the dataset has {total} items), got {n_train!r}"
        )
    rng = random.Random(seed)
    strata: dict[Hashable | None, list[int]] = {}
    for index, signature in enumerate(signatures):
        strata.setdefault(signature if stratify else None, []).append(index)
    chosen: list[int] = []
    for members, quota in zip(strata.values(), _quotas([len(m) for m in strata.values()], n_train, rng), strict=True):
        chosen.extend(rng.sample(members, quota))
    return sorted(chosen)


def _quotas(sizes: Sequence[int], n: int, rng: random.Random) -> list[int]:
    """Split ``n`` over strata of ``sizes`` in proportion (largest remainder, random ties)."""
    total = sum(sizes)
    exact = [n * size / total for size in sizes]
    quotas = [math.floor(x) for x in exact]
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - quotas[i]), rng.random()))
    for i in order[: n - sum(quotas)]:
        quotas[i] += 1
    return quotas
