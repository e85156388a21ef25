"""Where a job's workers run in this process, written once for grade runs and position-bias sweeps.

A job's chunks are handed to workers (:class:`Worker`: a run's
:class:`~.executors.GraderWorker`, a sweep's :class:`~autorubric_local.bias.executors.SweepWorker`)
through a pool (:class:`WorkerPool`): :class:`InProcessWorkers` (one worker in this process, the
chunks one at a time and in order) or :class:`~.distributed.RayActors` (Ray actors). A job's
executor (:class:`~.executors.RunExecutor`, :class:`~autorubric_local.bias.executors.SweepExecutor`)
starts its workers and dispatches its chunks through either, so a job's stored rows do not depend
on where it ran. What this process does is here:

- :class:`InProcessWorkers`: the pool of one worker in this process;
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
import os
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

from autorubric_local.engine.base import Engine
from autorubric_local.judges.engines import cached_engine_ids, loaded_after

__all__ = ["InProcessWorkers", "JobEngines", "Worker", "WorkerPool", "chunks_in_order", "frozen_heap", "where"]

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


def where() -> tuple[str, int]:
    """``(host name, process id)`` of this process: how a worker names itself in ``ready()``."""
    return socket.gethostname(), os.getpid()


class Worker(Protocol):
    """What a pool runs: one job's judges, loaded where the worker runs, and its chunk methods.

    Built from arguments that can be sent by value (a restarted Ray actor is built again from
    them) and loading nothing until :meth:`ready`. Its chunk methods (``grade``, ``judge``) take
    a chunk and answer ``(pid, result)``, loading the judges first if they are not (a restarted
    actor's first chunk).
    """

    def ready(self) -> tuple[str, int, Any]:
        """Load the judges; answer ``(host, pid, payload)`` (:func:`where`; the payload says what
        was loaded, the same on every worker of a job)."""
        ...

    def held(self) -> Mapping[str, Engine]:
        """The engines this worker loaded, by name (those it found loaded are left out)."""
        ...

    def release(self, names: Sequence[str]) -> object:
        """Release the engines ``names`` of :meth:`held` (pop them and free their memory)."""
        ...


class WorkerPool(Protocol):
    """Where a job's workers run: :class:`InProcessWorkers` or
    :class:`~.distributed.RayActors`; a context manager around one job (the workers are
    stopped, and what they loaded released, on exit).

    Attributes
    ----------
    remote : bool
        True when the workers run in other processes: arguments and results are sent by value
        (no callbacks, no engine objects), and several chunks may be in flight at once.
    """

    remote: bool

    def start(self, worker_class: type, *args: Any) -> list[tuple[str, int, Any]]:
        """Build the workers (``worker_class(*args)``) and answer each one's ``ready()``."""
        ...

    def dispatch(
        self, method: str, chunks: Sequence[Any], args: tuple[Any, ...], stop: threading.Event
    ) -> Iterator[tuple[int, Any]]:
        """``(chunk index, result)`` of ``worker.method(chunk, *args)`` for every chunk, each
        index once, in any order; no new chunk once ``stop`` is set."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class InProcessWorkers:
    """The pool of one :class:`Worker` in this process: its chunks one at a time, in order
    (:func:`chunks_in_order`), and the judges' life of :class:`JobEngines` around it (noted
    before the worker loads, the heap frozen once it is ready, what it loaded released when the
    pool closes, also when its loading failed part-way).

    ``chunks`` may be cut lazily, as they are asked for (a run's
    :class:`~.chunking.TimedChunks`): the next is taken only when the last is done.
    """

    remote = False

    def __init__(self) -> None:
        self._worker: Any = None
        self._engines: JobEngines | None = None

    def start(self, worker_class: type, *args: Any) -> list[tuple[str, int, Any]]:
        """Build the worker and load its judges (its ``ready()``); the heap is frozen after.

        Raises
        ------
        Whatever the worker's loading raises (:meth:`close` still releases what it loaded).
        """
        self.close()
        self._engines = JobEngines()
        self._engines.start()
        self._worker = worker_class(*args)
        answer = self._worker.ready()
        self._engines.loaded()
        return [answer]

    def dispatch(
        self, method: str, chunks: Iterable[Any], args: tuple[Any, ...], stop: threading.Event
    ) -> Iterator[tuple[int, Any]]:
        """``(chunk index, result)`` of ``worker.method(chunk, *args)``, in order, one at a time."""
        if self._worker is None:
            raise RuntimeError("InProcessWorkers.dispatch before start()")
        work = getattr(self._worker, method)
        for index, (_, result) in chunks_in_order(chunks, stop, lambda chunk: work(chunk, *args)):
            yield index, result

    def close(self) -> None:
        """Release what the worker loaded (:meth:`JobEngines.release`) and drop it."""
        worker, self._worker = self._worker, None
        engines, self._engines = self._engines, None
        if engines is not None:
            engines.release(worker.held() if worker is not None else {},
                            worker.release if worker is not None else (lambda names: None))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
