"""Where a run's chunks are graded: :class:`RunExecutor`, one executor on either pool of
workers (:class:`~.in_process.WorkerPool`): :class:`LocalExecutor` (this process, one chunk at a
time) or :class:`~autorubric_local.runner.distributed.RayExecutor` (Ray actors elsewhere).

:class:`~autorubric_local.runner.runner.EvalRunner` plans, chunks and commits; an executor only
starts its workers (:class:`GraderWorker`: the judges loaded where it runs) and turns chunks into
graded items (:func:`grade_chunk`, the same function in every worker), so a run's stored rows do
not depend on where it was graded. The runner is the only writer: it commits each chunk an
executor hands back, in one transaction. A position-bias sweep's executor
(:class:`~autorubric_local.bias.executors.SweepExecutor`) runs on the same pools.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Protocol, Self

from autorubric_local.core.errors import AutorubricError, EngineError, InputError
from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.data.item import UnreadableItem
from autorubric_local.engine.base import Engine
from autorubric_local.graders.criterion_grader import CriterionGrader, GradedItem
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.decision import DecisionModelConfig
from autorubric_local.runner.checkpoint import PlannedItem
from autorubric_local.runner.in_process import InProcessWorkers, WorkerPool, where

RUN_TIME_ERRORS: tuple[type[BaseException], ...] = (AutorubricError, RuntimeError)
"""Exceptions that fail one item (recorded as its error) rather than the run."""

EngineRecord = dict[str, Any]
"""What a run records of a judge's loaded engine (:func:`engine_records`)."""


def engine_records(grader: CriterionGrader) -> dict[str, EngineRecord]:
    """Load every judge's engine (a live cascade's escalation judges' too) and describe it: ``{judge id: {"model_id", "backend",
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
    for judge in grader.all_judges:  # a live cascade's escalation judges after the grader's own
        if isinstance(judge.llm_config, DecisionModelConfig):  # no engine: a client of its endpoint
            records[judge.judge_id] = grader.decision_record(judge)
            continue
        engine = grader.engine_for(judge)
        capabilities = engine.capabilities
        records[judge.judge_id] = {"model_id": engine.model_id, "backend": capabilities.backend,
                                   **capabilities.description(engine)}
    return records


def engine_fallbacks(grader: CriterionGrader) -> dict[str, list[str]]:
    """``{judge id: the reasons its loaded engine left a faster path}`` (the engine's
    ``fallbacks``, :mod:`autorubric_local.engine.transformers.paths`); judges not loaded are left out."""
    loaded = grader.loaded_judges()
    engines = {judge.judge_id: grader.engine_for(judge) for judge in grader.all_judges if judge.judge_id in loaded}
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
    they run), then ``graded_chunks`` once. An executor with ``in_order = True`` takes the
    chunks one at a time, in order, so the runner cuts them lazily, each sized by the time the
    last took (:class:`~autorubric_local.runner.chunking.TimedChunks`); others get them cut up
    front.
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


class GraderWorker:
    """What grades a run's chunks where a pool runs them (this process or a Ray actor): a grader
    whose engines are loaded there (a :class:`~.in_process.Worker`).

    Parameters
    ----------
    grader : CriterionGrader
        The caller's grader in this process; on Ray actors a copy without engines
        (:func:`~.distributed.shippable_grader`). Its judges' engines are loaded by
        :meth:`ready` (and by a restarted actor's first chunk); engines it held already are
        neither reloaded nor released.
    """

    def __init__(self, grader: CriterionGrader) -> None:
        self.grader = grader
        self._before = grader.loaded_judges()

    def ready(self) -> tuple[str, int, dict[str, EngineRecord]]:
        """Load every judge; ``(host, pid, engine records)`` (:func:`engine_records`)."""
        return (*where(), engine_records(self.grader))

    def grade(self, chunk: Sequence[PlannedItem], seed: int, progress: Callable[[int], None] | None = None
              ) -> tuple[int, tuple[list[GradedItem], dict[str, list[str]]]]:
        """``(pid, (graded items in chunk order, fallbacks))``: ``chunk`` through
        :func:`grade_chunk` with the option-shuffle ``seed`` of the run, and this worker's
        :func:`engine_fallbacks` after it (sent back with the chunk, so asking for them never
        waits on a remote worker's queue). ``progress`` (in this process only) gets the
        judgments of each engine pass."""
        self.grader.seed = seed
        graded = grade_chunk(self.grader, chunk, progress if progress is not None else _no_progress)
        return where()[1], (graded, engine_fallbacks(self.grader))

    def held(self) -> dict[str, Engine]:
        """The engines this worker loaded (:meth:`~.in_process.Worker.held`)."""
        loaded = self.grader.loaded_judges() - self._before  # engine_for below only returns what is loaded
        return {judge.judge_id: self.grader.engine_for(judge) for judge in self.grader.all_judges
                if judge.judge_id in loaded}

    def release(self, names: Sequence[str]) -> object:
        """``CriterionGrader.release_engines(names)``."""
        return self.grader.release_engines(list(names))


def _no_progress(_: int) -> None:
    return None


class RunExecutor:
    """Grades a run's chunks on a pool of :class:`GraderWorker` (the :class:`ChunkExecutor` of
    every run): :class:`LocalExecutor` in this process, :class:`~.distributed.RayExecutor` on
    Ray actors. Used as a context manager around one run: the pool is closed on exit (the
    judges' engines loaded for the run released, Ray actors killed).

    Parameters
    ----------
    pool : WorkerPool
    loading : callable, optional
        ``loading(model names) -> context manager`` entered around the judges' load (a CLI's
        "loading judge ..." status line, say); default none.

    Attributes
    ----------
    in_order : bool
        True when the pool takes the chunks one at a time, in order (this process).
    startup_seconds : float
        Wall seconds the last :meth:`engines` took (the workers starting and loading the
        judges; 0 before it ran).
    """

    def __init__(self, pool: WorkerPool,
                 loading: Callable[[list[str]], AbstractContextManager[object]] | None = None) -> None:
        self.pool = pool
        self.in_order = not pool.remote
        self.startup_seconds = 0.0
        self._loading = loading
        self._fallbacks: dict[str, list[str]] = {}

    def worker_grader(self, grader: CriterionGrader) -> CriterionGrader:
        """The grader the workers are built with: ``grader`` itself (a pool in another process
        sends a copy: :meth:`~.distributed.RayExecutor.worker_grader`)."""
        return grader

    def engines(self, grader: CriterionGrader) -> dict[str, EngineRecord]:
        """Start the workers, each loading every judge; their :func:`engine_records` (the same on
        every worker). In this process the heap is frozen after the load until the run ends
        (:class:`~.in_process.InProcessWorkers`).

        Raises
        ------
        ModelNotFoundError, EngineError, InputError
            As :func:`~autorubric_local.judges.engines.load_engine`; on Ray as
            :meth:`~.distributed.RayActors.start`, or two actors loaded different models.
        """
        shipped = self.worker_grader(grader)
        self._fallbacks = {}  # a run's own: this executor may have served another run before
        started = time.perf_counter()
        names = sorted({judge.llm_config.model for judge in grader.judges})
        with self._loading(names) if self._loading is not None else contextlib.nullcontext():
            answers = self.pool.start(GraderWorker, shipped)
        self.startup_seconds = time.perf_counter() - started
        return same_everywhere(answers, "judges")

    def graded_chunks(
        self,
        grader: CriterionGrader,
        chunks: Iterable[Sequence[PlannedItem]],
        progress: Callable[[int], None],
        stop: threading.Event,
    ) -> Iterator[tuple[int, list[GradedItem]]]:
        """``(chunk index, graded items)`` as the pool hands them back, each chunk once (the
        :class:`ChunkExecutor` protocol). ``progress`` gets the judgments of each engine pass in
        this process, of each chunk when it comes back from a remote worker.

        Raises
        ------
        EngineError
            As :meth:`~.distributed.RayActors.dispatch` (chunks committed so far are kept).
        """
        args = (grader.seed,) if self.pool.remote else (grader.seed, progress)
        for index, (graded, fallbacks) in self.pool.dispatch("grade", chunks, args, stop):  # type: ignore[arg-type]
            for judge_id, reasons in fallbacks.items():
                known = self._fallbacks.setdefault(judge_id, [])
                known.extend(reason for reason in reasons if reason not in known)
            if self.pool.remote:
                progress(sum(len(item.results) for item in graded))
            yield index, graded

    def fallbacks(self, grader: CriterionGrader) -> dict[str, list[str]]:
        """The fallbacks the workers reported with the chunks handed back so far, merged per
        judge (each reason once, in the order first seen)."""
        return {judge_id: list(reasons) for judge_id, reasons in self._fallbacks.items()}

    def __enter__(self) -> Self:
        self.pool.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.pool.__exit__(kind, exc, tb)


class LocalExecutor(RunExecutor):
    """Grades chunks in this process, in order, one at a time (the default executor): a
    :class:`RunExecutor` on :class:`~.in_process.InProcessWorkers`.

    The judges' engines it loads are released when the run ends (``__exit__``,
    ``CriterionGrader.release_engines``: a vLLM engine is shut down and its memory returned),
    also when loading a later judge failed. Engines already loaded in this process when the run
    started are kept: those the grader held (the caller's) and those it got from
    :func:`~autorubric_local.judges.engines.load_engine`'s shared cache (another grader's, or
    another judge's with the same config), since releasing an engine releases it for every holder
    (:class:`~.in_process.JobEngines`, shared with sweeps).

    Parameters
    ----------
    loading : callable, optional
        As :class:`RunExecutor`'s.
    """

    def __init__(self, loading: Callable[[list[str]], AbstractContextManager[object]] | None = None) -> None:
        super().__init__(InProcessWorkers(), loading)


def same_everywhere(answers: Sequence[tuple[str, int, Any]], what: str) -> Any:
    """The payload every worker answered ``ready()`` with.

    Raises
    ------
    EngineError
        Two workers answered differently (their nodes hold different model files).
    """
    host, pid, first = answers[0]
    for other_host, other_pid, payload in answers[1:]:
        if payload != first:
            raise EngineError(f"workers loaded different {what}: {host} (pid {pid}) {first} but {other_host} "
                              f"(pid {other_pid}) {payload}; every node needs the same model files")
    return first
