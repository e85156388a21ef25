"""The one validation helper for metric inputs, and the NaN -> None rule."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from autorubric_local.core.errors import InputError


def as_pair(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, paired: bool = True,
    name_x: str = "judge_scores", name_y: str = "human_scores",
) -> tuple[np.ndarray, np.ndarray]:
    """Two 1-d float arrays, finite, non-empty (and of equal length when ``paired``).

    Raises
    ------
    InputError
        Empty input, non-finite values, not 1-d, or unequal lengths for paired data.
    """
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    for arr, name in ((a, name_x), (b, name_y)):
        if arr.ndim != 1:
            raise InputError(f"{name} must be 1-d, got shape {arr.shape}")
        if arr.size == 0:
            raise InputError(f"{name} is empty")
        if not np.all(np.isfinite(arr)):
            raise InputError(f"{name} contains NaN or infinite values")
    if paired and a.size != b.size:
        raise InputError(f"{name_x} and {name_y} differ in length: {a.size} != {b.size}")
    return a, b


def check_confidence_level(confidence_level: float) -> float:
    """Raise :class:`InputError` unless ``0 < confidence_level < 1``."""
    if not (isinstance(confidence_level, (int, float)) and 0.0 < confidence_level < 1.0):
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    return float(confidence_level)


def finite_or_none(value: float | None) -> float | None:
    """``float(value)`` when finite, else ``None``."""
    if value is None:
        return None
    v = float(value)
    return v if math.isfinite(v) else None
