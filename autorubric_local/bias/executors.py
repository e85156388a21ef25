"""Where a stored sweep's chunks are judged: :class:`LocalSweepExecutor` (this process) or
:class:`~autorubric_local.bias.distributed.RaySweepExecutor` (Ray actors), chosen by
``EvalConfig.distributed`` (:func:`~autorubric_local.bias.stored.sweep_executor`).

:func:`~autorubric_local.bias.stored.run_stored_sweep` plans, chunks and commits; an executor
loads the judges, plans each judge's rotations with its engine's chat template
(:func:`~.sweep.load_judge`) and judges chunks (:func:`~.sweep.judge_chunk`), the same functions
on every executor, so the stored rows do not depend on where a sweep ran.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self

from autorubric_local.bias.cells import SweepSettings
from autorubric_local.bias.sweep import (
    LoadedJudge,
    PlannedRotation,
    judge_chunk,
    load_configs,
    load_judge,
)
from autorubric_local.bias.unrelated import UnrelatedOption
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.engines import release_held
from autorubric_local.runner.in_process import JobEngines, chunks_in_order


@dataclass(frozen=True)
class PlannedJudge:
    """A judge of a sweep as the driver sees it: its spec, its planned rotations
    (:func:`~.sweep.plan_sweep`) and what its loaded engine is (``model_id``, ``backend``)."""

    spec: JudgeSpec
    planned: list[PlannedRotation]
    model_id: str | None
    backend: str | None

    @classmethod
    def of(cls, loaded: LoadedJudge) -> PlannedJudge:
        return cls(loaded.spec, loaded.planned, loaded.engine.model_id, loaded.engine.capabilities.backend)


class SweepExecutor(Protocol):
    """Loads a sweep's judges and judges its chunks; a context manager around one sweep."""

    def load(
        self,
        items: Sequence[GradeItem],
        judges: Sequence[JudgeSpec],
        settings: SweepSettings,
        unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    ) -> list[PlannedJudge]:
        """Load every judge and plan its rotations; one :class:`PlannedJudge` per judge, in order."""
        ...

    def judged_chunks(
        self, judge_index: int, chunks: Sequence[Sequence[PlannedRotation]], stop: threading.Event
    ) -> Iterator[tuple[int, list[JudgmentResult]]]:
        """``(chunk index, results in chunk order)`` for each chunk of the judge at
        ``judge_index``, each index once, in any order; no new chunk once ``stop`` is set."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class LocalSweepExecutor:
    """Loads the judges in this process and judges chunks in order, one at a time.

    vLLM judges split the device memory (:func:`~.sweep.load_configs`). The engines it loads are
    released when the sweep ends (``__exit__``, also when loading a later judge failed), by the
    rule :class:`~autorubric_local.runner.executors.LocalExecutor` releases a run's with
    (:class:`~autorubric_local.runner.in_process.JobEngines`): engines already in
    :func:`~autorubric_local.judges.engines.load_engine`'s cache when the sweep started (another
    holder's) are kept, and a failed release is logged, never raised.
    """

    def __init__(self) -> None:
        self._loaded: list[LoadedJudge] = []
        self._engines = JobEngines()

    def load(
        self,
        items: Sequence[GradeItem],
        judges: Sequence[JudgeSpec],
        settings: SweepSettings,
        unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    ) -> list[PlannedJudge]:
        """:func:`~.sweep.load_judge` for every judge, with its :func:`~.sweep.load_configs` config;
        then the heap is frozen until the sweep ends (:meth:`~autorubric_local.runner.in_process.JobEngines.loaded`)."""
        self._engines.start()
        self._loaded = []
        configs = load_configs(judges)
        for judge in judges:  # one at a time: judges loaded before a failing one are released too
            self._loaded.append(load_judge(items, judge, settings, unrelated, configs[judge.judge_id]))
        self._engines.loaded()  # the heap frozen until the sweep ends (runner/in_process.py)
        return [PlannedJudge.of(loaded) for loaded in self._loaded]

    def judged_chunks(
        self, judge_index: int, chunks: Sequence[Sequence[PlannedRotation]], stop: threading.Event
    ) -> Iterator[tuple[int, list[JudgmentResult]]]:
        """:func:`~.sweep.judge_chunk` on each chunk, in order
        (:func:`~autorubric_local.runner.in_process.chunks_in_order`)."""
        loaded = self._loaded[judge_index]
        budget = loaded.spec.llm_config.thinking_budget
        return chunks_in_order(chunks, stop, lambda chunk: judge_chunk(loaded.engine, chunk, budget))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        held = {loaded.spec.judge_id: loaded.engine for loaded in self._loaded}
        self._loaded = []  # the executor's references go before release_held frees memory
        self._engines.release(held, lambda names: release_held(held, names))

