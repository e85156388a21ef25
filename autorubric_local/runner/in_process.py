"""What every in-process executor does, written once for grade runs and position-bias sweeps.

:class:`~.executors.LocalExecutor` (a run's chunks) and
:class:`~autorubric_local.bias.executors.LocalSweepExecutor` (a sweep's chunks) differ only in
how they load their judges and what one chunk's work is (``grade_chunk`` or ``judge_chunk``).
The rest is here:

- :func:`chunks_in_order`: the chunks, one at a time and in order, each handed to the job's own
  work, until the job is asked to stop;
- :class:`JobEngines`: the engines the job loaded in this process are released when it ends
  (releasing an engine releases it for every holder, so an engine already in
  :func:`~autorubric_local.judges.engines.load_engine`'s cache when the job started, another
  holder's, is kept). A failed release is logged, never raised
  (:func:`~autorubric_local.judges.engines.release_held`), so it cannot hide the job's result
  or its error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TypeVar

from autorubric_local.engine.base import Engine
from autorubric_local.judges.engines import cached_engine_ids, loaded_after

__all__ = ["JobEngines", "chunks_in_order"]

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


class JobEngines:
    """The engines one job loads in this process, released when it ends.

    Call :meth:`start` before the job loads anything (it notes what the process's engine cache
    holds), then :meth:`release` once, at the end, with the engines the job holds by name.
    """

    def __init__(self) -> None:
        self._before: frozenset[int] | None = None

    def start(self) -> None:
        """Note the engines already loaded in this process: :meth:`release` keeps them."""
        self._before = cached_engine_ids()

    def release(self, held: Mapping[str, Engine], release: Callable[[list[str]], object]) -> None:
        """``release(names)`` for the names in ``held`` whose engine this job loaded (none before
        :meth:`start`); ``release`` is the holder's own (e.g. ``CriterionGrader.release_engines``
        or :func:`~autorubric_local.judges.engines.release_held` on its mapping), which pops
        them and frees their memory."""
        before, self._before = self._before, None
        if before is not None:
            release(loaded_after(held, before))
