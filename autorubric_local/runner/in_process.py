"""What every in-process executor does, written once for grade runs and position-bias sweeps.

:class:`~.executors.LocalExecutor` (a run's chunks) and
:class:`~autorubric_local.bias.executors.LocalSweepExecutor` (a sweep's chunks) differ only in
how they load their judges and what one chunk's work is (``grade_chunk`` or ``judge_chunk``).
The rest is here:

- :func:`chunks_in_order`: the chunks, one at a time and in order, each handed to the job's own
  work, until the job is asked to stop;
- :class:`JobEngines`: a judge's life in a job, the same for every kind of job and every caller
  (the CLI, the Python API): noted (:meth:`~JobEngines.start`), loaded by the executor, its heap
  frozen (:meth:`~JobEngines.loaded`, :func:`frozen_heap`), and released when the job ends
  (:meth:`~JobEngines.release`), then unfrozen. Releasing an engine releases it for every
  holder, so an engine already in :func:`~autorubric_local.judges.engines.load_engine`'s cache
  when the job started, another holder's, is kept. A failed release is logged, never raised
  (:func:`~autorubric_local.judges.engines.release_held`), so it cannot hide the job's result
  or its error.

Why the heap is frozen: loading a judge with torch and transformers puts several hundred
thousand objects tracked by CPython's cyclic garbage collector in the heap (modules, classes,
parameters). A full (oldest generation) collection walks every one of them; the collector starts
one on its own whenever enough new objects have survived into the oldest generation (about once
per thousand items graded), and :func:`~autorubric_local.judges.engines.free_memory` runs one
when the engines are released. :func:`frozen_heap` moves what is in memory after the judges load
into the collector's permanent generation (:func:`gc.freeze`), so those collections walk only
what the job itself allocates, and moves it back (:func:`gc.unfreeze`) after the release, so that
a later collection in the same process reclaims whatever of it is garbage by then (a released
model, a cycle that existed at the freeze). Reference counting frees objects as before: only the
collection of reference cycles is deferred. Measured in
``scripts/results/ab_scale_gc_freeze_2cpu_2026-11-28.txt``.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TypeVar

from autorubric_local.engine.base import Engine
from autorubric_local.judges.engines import cached_engine_ids, loaded_after

__all__ = ["JobEngines", "chunks_in_order", "frozen_heap"]

ChunkT = TypeVar("ChunkT")
ResultT = TypeVar("ResultT")


def chunks_in_order(
    chunks: Iterable[ChunkT], stop: threading.Event, work: Callable[[ChunkT], ResultT]
) -> Iterator[tuple[int, ResultT]]:
    """``(chunk index, work(chunk))`` for each chunk, in order, one at a time.

    ``stop`` is checked before the next chunk is asked for, so a chunk cut lazily (as
    :class:`~.chunking.TimedChunks` cuts them, sized by the time the last one took) is never cut
    in vain; once it is set, no new chunk starts.
    """
    chunk_iterator = iter(chunks)
    index = 0
    while not stop.is_set():
        chunk = next(chunk_iterator, None)
        if chunk is None:
            return
        yield index, work(chunk)
        index += 1


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Freeze the heap as it is now (:func:`gc.freeze`) for the block, unfrozen on exit, also
    when the block raises. Nested use unfreezes at the outer block's end only (a job inside
    another's, e.g. a caller that froze the heap itself)."""
    outer = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield
    finally:
        if outer:
            gc.unfreeze()


class JobEngines:
    """The engines one job loads in this process: their heap frozen while the job runs, released
    when it ends.

    Call :meth:`start` before the job loads anything (it notes what the process's engine cache
    holds), :meth:`loaded` once the judges are loaded, then :meth:`release` once, at the end
    (also when a load failed), with the engines the job holds by name.
    """

    def __init__(self) -> None:
        self._before: frozenset[int] | None = None
        self._frozen = contextlib.ExitStack()

    def start(self) -> None:
        """Note the engines already loaded in this process: :meth:`release` keeps them."""
        self._before = cached_engine_ids()

    def loaded(self) -> None:
        """The job's judges are loaded: freeze the heap (:func:`frozen_heap`) until :meth:`release`."""
        self._frozen.enter_context(frozen_heap())

    def release(self, held: Mapping[str, Engine], release: Callable[[list[str]], object]) -> None:
        """``release(names)`` for the names in ``held`` whose engine this job loaded (none before
        :meth:`start`); ``release`` is the holder's own (e.g. ``CriterionGrader.release_engines``
        or :func:`~autorubric_local.judges.engines.release_held` on its mapping), which pops
        them and frees their memory; then the heap is unfrozen (when :meth:`loaded` froze it)."""
        before, self._before = self._before, None
        try:
            if before is not None:
                release(loaded_after(held, before))
        finally:
            self._frozen.close()  # unfrozen after the release: its collection walks only the job's objects
