"""Give the memory a committed chunk freed back to the operating system.

A chunk's work (token id lists, masks, logits, reports) is freed once the chunk is committed,
but glibc's allocator keeps freed blocks inside its heaps, where fragmentation strands them:
a run's resident memory then grows with every item while Python's own heap, traced with
:mod:`tracemalloc`, does not. ``malloc_trim(0)`` (glibc 2.8+, ``man 3 malloc_trim``) returns
the free pages of every heap, not only the top one; ``bench_scale``'s peak RSS at 10^4 items
is lower with it (``scripts/results/bench_scale_trim_2cpu_2026-11-26.txt`` against
``bench_scale_lazy_2cpu_2026-11-26.txt``). Elsewhere (macOS, musl) this is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

__all__ = ["release_free_heap"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


def release_free_heap() -> bool:
    """Return the C heap's free pages to the operating system; True if any were returned
    (False also where the C library has no ``malloc_trim``). Takes a few milliseconds."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False
