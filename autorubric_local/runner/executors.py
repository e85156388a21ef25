"""Where a run's chunks are graded: :class:`LocalExecutor` (this process, one chunk at a time) or
:class:`~autorubric_local.runner.distributed.RayExecutor` (Ray actors elsewhere).

:class:`~autorubric_local.runner.runner.EvalRunner` plans, chunks and commits; an executor only
loads the judges and turns chunks into graded items (:func:`grade_chunk`, the same function on
every executor), so a run's stored rows do not depend on where it was graded. The runner is the
only writer: it commits each chunk an executor hands back, in one transaction.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Protocol, Self

from autorubric_local.core.errors import AutorubricError, InputError
from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.data.item import UnreadableItem
from autorubric_local.graders.criterion_grader import CriterionGrader, GradedItem
from autorubric_local.graders.planning import GradeItem
from autorubric_local.runner.checkpoint import PlannedItem
from autorubric_local.runner.in_process import JobEngines, chunks_in_order

RUN_TIME_ERRORS: tuple[type[BaseException], ...] = (AutorubricError, RuntimeError)
"""Exceptions that fail one item (recorded as its error) rather than the run."""

EngineRecord = dict[str, Any]
"""What a run records of a judge's loaded engine (:func:`engine_records`)."""


def engine_records(grader: CriterionGrader) -> dict[str, EngineRecord]:
    """Load every judge's engine and describe it: ``{judge id: {"model_id", "backend",
    "attention_path", "prompt_format", "score_method", "dtype", "fallbacks"}}``: ``backend`` the
    engine's declared one, the others what its capabilities say it describes
    (:meth:`~autorubric_local.engine.capabilities.EngineCapabilities.description`; None where it
    describes none, ``fallbacks`` an empty list then).

    Raises
    ------
    ModelNotFoundError, EngineError, InputError
        As :func:`~autorubric_local.judges.engines.load_engine`.
    """
    records: dict[str, EngineRecord] = {}
    for judge in grader.judges:
        engine = grader.engine_for(judge)
        capabilities = engine.capabilities
        records[judge.judge_id] = {"model_id": engine.model_id, "backend": capabilities.backend,
                                   **capabilities.description(engine)}
    return records


def engine_fallbacks(grader: CriterionGrader) -> dict[str, list[str]]:
    """``{judge id: the reasons its loaded engine left a faster path}`` (the engine's
    ``fallbacks``, :mod:`autorubric_local.engine.transformers.paths`); judges not loaded are left out."""
    loaded = grader.loaded_judges()
    engines = {judge.judge_id: grader.engine_for(judge) for judge in grader.judges if judge.judge_id in loaded}
    return {judge_id: engine.capabilities.description(engine)["fallbacks"] for judge_id, engine in engines.items()}


def failed_item(item: GradeItem, exc: BaseException) -> GradedItem:
    """An item whose grading raised: no score, the error kept, no judgments."""
    report = EnsembleEvaluationReport(score=None, error=f"{type(exc).__name__}: {exc}", completion_cost=0.0)
    return GradedItem(item, report, ())


def grade_chunk(
    grader: CriterionGrader, chunk: Sequence[PlannedItem], progress: Callable[[int], None]
) -> list[GradedItem]:
    """Grade a chunk as one workload, then isolate failures: items that failed (the batch
    raised, or all of an item's judgments failed, e.g. an engine call that failed for the
    whole workload) are graded again one by one, so one bad item cannot fail its chunk.

    Returns one :class:`GradedItem` per entry of ``chunk``, in its order; ``progress`` gets the
    number of judgments after each engine pass. Only exceptions outside
    :data:`RUN_TIME_ERRORS` (bugs) propagate. An
    :class:`~autorubric_local.data.item.UnreadableItem` (a JSONL line that could not be read)
    is not graded: it fails with its own error.
    """
    unreadable = {i: failed_item(entry.grade_item, InputError(entry.item.error))
                  for i, entry in enumerate(chunk) if isinstance(entry.item, UnreadableItem)}
    if unreadable:
        readable = [entry for i, entry in enumerate(chunk) if i not in unreadable]
        graded = iter(grade_chunk(grader, readable, progress) if readable else [])
        return [unreadable[i] if i in unreadable else next(graded) for i in range(len(chunk))]
    try:
        graded = grader.grade_batch(
            [entry.grade_item for entry in chunk],
            graded_inputs=[entry.graded_input for entry in chunk],
            progress=progress,
        )
    except RUN_TIME_ERRORS as exc:
        if len(chunk) == 1:
            return [failed_item(chunk[0].grade_item, exc)]
        return [graded for entry in chunk for graded in grade_chunk(grader, [entry], progress)]
    if len(chunk) > 1:
        for position, result in enumerate(graded):
            if result.report.error is not None:
                graded[position] = grade_chunk(grader, [chunk[position]], progress)[0]
    return graded


class ChunkExecutor(Protocol):
    """Grades a run's chunks for :class:`~autorubric_local.runner.runner.EvalRunner`.

    Used as a context manager around one run: ``engines`` first (loads the judges, wherever
    they run), then ``graded_chunks`` once.
    """

    def engines(self, grader: CriterionGrader) -> dict[str, EngineRecord]:
        """:func:`engine_records` of the judges as this executor loads them."""
        ...

    def fallbacks(self, grader: CriterionGrader) -> dict[str, list[str]]:
        """Per judge id, the reasons its engines left a faster path so far (:func:`engine_fallbacks`;
        on several workers, each reason once in the order first seen)."""
        ...

    def graded_chunks(
        self,
        grader: CriterionGrader,
        chunks: Iterable[Sequence[PlannedItem]],
        progress: Callable[[int], None],
        stop: threading.Event,
    ) -> Iterator[tuple[int, list[GradedItem]]]:
        """``(chunk index, graded items in chunk order)`` for each chunk, each index once, in
        any order. ``chunks`` may be cut lazily, as they are asked for
        (:class:`~autorubric_local.runner.chunking.TimedChunks`): take the next one only when
        ready to grade it. Once ``stop`` is set no new chunk is started; chunks already started are
        still yielded. ``grader.seed`` is read here, not in :meth:`engines` (a resumed run
        adopts its stored seed when the run is claimed, before :meth:`engines`)."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class LocalExecutor:
    """Grades chunks in this process, in order, one at a time (the default executor).

    The judges' engines it loads are released when the run ends (``__exit__``,
    ``CriterionGrader.release_engines``: a vLLM engine is shut down and its memory returned),
    also when loading a later judge failed. Engines already loaded in this process when the run
    started are kept: those the grader held (the caller's) and those it got from
    :func:`~autorubric_local.judges.engines.load_engine`'s shared cache (another grader's, or
    another judge's with the same config), since releasing an engine releases it for every holder.
    The chunk loop, the heap freeze and the release rule are :mod:`~.in_process`'s, shared with
    sweeps.

    Parameters
    ----------
    loading : callable, optional
        ``loading(model names) -> context manager`` entered around the load (a CLI's "loading
        judge ..." status line, say); default none.

    Attributes
    ----------
    startup_seconds : float
        Wall seconds the last :meth:`engines` took to load the judges (0 before it ran), as
        :class:`~autorubric_local.runner.distributed.RayExecutor` reports its actors' start.
    """

    def __init__(self, loading: Callable[[list[str]], AbstractContextManager[object]] | None = None) -> None:
        self._held: tuple[CriterionGrader, frozenset[str], JobEngines] | None = None
        self._loading = loading
        self.startup_seconds = 0.0

    def engines(self, grader: CriterionGrader) -> dict[str, EngineRecord]:
        """:func:`engine_records` (loads the judges in this process), then the heap is frozen
        until the run ends (:meth:`~.in_process.JobEngines.loaded`)."""
        job_engines = JobEngines()
        job_engines.start()
        self._held = (grader, grader.loaded_judges(), job_engines)
        started = time.perf_counter()
        names = sorted({judge.llm_config.model for judge in grader.judges})
        with self._loading(names) if self._loading is not None else contextlib.nullcontext():
            records = engine_records(grader)
        self.startup_seconds = time.perf_counter() - started
        job_engines.loaded()
        return records

    def fallbacks(self, grader: CriterionGrader) -> dict[str, list[str]]:
        """:func:`engine_fallbacks` of this process's engines."""
        return engine_fallbacks(grader)

    def graded_chunks(
        self,
        grader: CriterionGrader,
        chunks: Iterable[Sequence[PlannedItem]],
        progress: Callable[[int], None],
        stop: threading.Event,
    ) -> Iterator[tuple[int, list[GradedItem]]]:
        """Each chunk through :func:`grade_chunk`, in order, until ``stop`` is set
        (:func:`~.in_process.chunks_in_order`)."""
        return chunks_in_order(chunks, stop, lambda chunk: grade_chunk(grader, chunk, progress))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        held, self._held = self._held, None
        if held is not None:
            grader, before, job_engines = held
            loaded = grader.loaded_judges() - before  # engine_for below only returns what is loaded
            engines = {judge.judge_id: grader.engine_for(judge) for judge in grader.judges if judge.judge_id in loaded}
            job_engines.release(engines, grader.release_engines)
