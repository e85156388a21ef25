"""Keep a loaded judge out of Python's full garbage collections while a command grades.

Loading a judge with torch and transformers puts several hundred thousand objects tracked by
CPython's cyclic garbage collector in the heap (modules, classes, parameters). A full (oldest
generation) collection walks every one of them; the collector starts one on its own whenever
enough new objects have survived into the oldest generation (about once per thousand items
graded), and :func:`~autorubric_local.judges.engines.free_memory` runs one when the engines are
released. :func:`loaded_heap_frozen` moves what is in memory after the judges load into the
collector's permanent generation (:func:`gc.freeze`), so those collections walk only what the
run itself allocates, and moves it back (:func:`gc.unfreeze`) when the block ends, so that a
later collection in the same process reclaims whatever of it is garbage by then (a released
model, a cycle that existed at the freeze). Reference counting frees objects as before: only
the collection of reference cycles is deferred. Measured in
``scripts/results/ab_scale_gc_freeze_2cpu_2026-11-28.txt``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def loaded_heap_frozen() -> Iterator[None]:
    """Freeze the heap as it is now (:func:`gc.freeze`) for the block, unfrozen on exit, also
    when the block raises. Nested use unfreezes at the outer block's end only."""
    outer = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield
    finally:
        if outer:
            gc.unfreeze()
