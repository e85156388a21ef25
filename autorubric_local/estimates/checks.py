"""Input checks shared by the estimators (:mod:`.methods`), sampling and power: 1-d finite
arrays, matching lengths, error levels, 0/1 values and power-tuning weights. Each failure raises
:class:`~autorubric_local.core.errors.InputError` naming the argument and its value."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from autorubric_local.core.errors import InputError


def as_vector(name: str, values: ArrayLike, *, min_size: int = 1, allow_nan: bool = False) -> np.ndarray:
    """``values`` as a 1-d float array of at least ``min_size`` finite values.

    Parameters
    ----------
    name : str
        The argument's name, used in error messages.
    values : array-like of shape (n,)
    min_size : int, default 1
    allow_nan : bool, default False
        Accept NaN (not infinities), e.g. for human values of undrawn items.

    Raises
    ------
    InputError
        Not 1-d, fewer than ``min_size`` values, non-numeric, or non-finite values.
    """
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric, got {values!r:.80}") from exc
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-d, got shape {arr.shape}")
    if arr.size < min_size:
        raise InputError(f"{name} needs at least {min_size} values, got {arr.size}")
    bad = np.isinf(arr) if allow_nan else ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{name} must be finite, got {arr[i]} at index {i}")
    return arr


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float; raises :class:`InputError` unless ``0 < alpha < 1``."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not (
        0.0 < float(alpha) < 1.0
    ):
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")
    return float(alpha)


def check_same_length(**arrays: np.ndarray) -> int:
    """The common length of the named arrays; raises :class:`InputError` when they differ."""
    sizes = {name: int(a.size) for name, a in arrays.items()}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{name} has {size}" for name, size in sizes.items())
        raise InputError(f"lengths differ: {listed}")
    return next(iter(sizes.values()))


def check_binary(name: str, values: np.ndarray) -> np.ndarray:
    """``values`` (already a float vector) if every entry is 0 or 1, else :class:`InputError`."""
    bad = (values != 0.0) & (values != 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{name} must be 0/1, got {values[i]} at index {i}")
    return values


def check_lam(lam: float | None) -> float | None:
    """``lam`` as a float (any finite value, as PPI++ allows), or None for the tuned value."""
    if lam is None:
        return None
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.floating)) or not math.isfinite(lam):
        raise InputError(f"lam must be a finite number or None, got {lam!r}")
    return float(lam)
