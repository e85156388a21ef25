"""Where a stored sweep's chunks are judged: :class:`SweepExecutor`, one executor on either pool
of workers (:class:`~autorubric_local.runner.in_process.WorkerPool`, as a run's
:class:`~autorubric_local.runner.executors.RunExecutor`): :class:`LocalSweepExecutor` (this
process) or :class:`~autorubric_local.bias.distributed.RaySweepExecutor` (Ray actors), chosen by
``EvalConfig.distributed`` (:func:`~autorubric_local.bias.stored.sweep_executor`).

:func:`~autorubric_local.bias.stored.run_stored_sweep` plans, chunks and commits; the workers
(:class:`SweepWorker`) load the judges, plan each judge's rotations with its engine's chat template
(:func:`~.sweep.load_judge`) and judge chunks (:func:`~.sweep.judge_chunk`), the same functions
wherever they run, so the stored rows do not depend on where a sweep ran.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

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
from autorubric_local.core.errors import EngineError
from autorubric_local.engine.base import Engine
from autorubric_local.judges.engines import release_held
from autorubric_local.runner.executors import same_everywhere
from autorubric_local.runner.in_process import InProcessWorkers, WorkerPool, where


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


class SweepWorker:
    """What judges a sweep's chunks where a pool runs them (this process or a Ray actor): every
    judge loaded there, one at a time, with its planned rotations (a
    :class:`~autorubric_local.runner.in_process.Worker`). Loads nothing until :meth:`ready` (or
    a restarted actor's first chunk); judges loaded before one that fails are released with the
    rest when the pool closes."""

    def __init__(
        self,
        items: Sequence[GradeItem],
        judges: Sequence[JudgeSpec],
        settings: SweepSettings,
        unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    ) -> None:
        self.args = (list(items), list(judges), settings, unrelated)
        self.loaded: list[LoadedJudge] = []

    def _load(self) -> None:
        items, judges, settings, unrelated = self.args
        if len(self.loaded) == len(judges):
            return
        configs = load_configs(judges)  # this node's vLLM memory shares
        for judge in judges[len(self.loaded):]:
            self.loaded.append(load_judge(items, judge, settings, unrelated, configs[judge.judge_id]))

    def ready(self) -> tuple[str, int, list[tuple[list[PlannedRotation], str | None, str | None]]]:
        """Load every judge; ``(host, pid, [(planned rotations, model id, backend) per judge])``."""
        self._load()
        plans = [(planned.planned, planned.model_id, planned.backend) for planned in map(PlannedJudge.of, self.loaded)]
        return (*where(), plans)

    def judge(self, chunk: Sequence[PlannedRotation], judge_index: int) -> tuple[int, list[JudgmentResult]]:
        """``(pid, results in chunk order)`` of :func:`~.sweep.judge_chunk` by judge ``judge_index``."""
        self._load()
        loaded = self.loaded[judge_index]
        return where()[1], judge_chunk(loaded.engine, chunk, loaded.spec.llm_config.thinking_budget)

    def held(self) -> dict[str, Engine]:
        """The judges' engines loaded so far, by judge id."""
        return {loaded.spec.judge_id: loaded.engine for loaded in self.loaded}

    def release(self, names: Sequence[str]) -> object:
        """Release the engines ``names`` (:func:`~autorubric_local.judges.engines.release_held`)."""
        held = self.held()
        self.loaded = []  # the worker's references go before release_held frees memory
        return release_held(held, names)


class SweepExecutor:
    """Loads a sweep's judges on a pool of :class:`SweepWorker` and judges its chunks there; a
    context manager around one sweep (the pool is closed on exit: engines loaded for the sweep
    released, Ray actors killed). vLLM judges split the device memory of the node they load on
    (:func:`~.sweep.load_configs`).

    Parameters
    ----------
    pool : WorkerPool
    """

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool

    def check_judges(self, judges: Sequence[JudgeSpec]) -> None:
        """Refuse judges the pool cannot run (none in this process:
        :meth:`~.distributed.RaySweepExecutor.check_judges`)."""

    def load(
        self,
        items: Sequence[GradeItem],
        judges: Sequence[JudgeSpec],
        settings: SweepSettings,
        unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    ) -> list[PlannedJudge]:
        """Start the workers, each loading every judge and planning its rotations; one
        :class:`PlannedJudge` per judge, in order.

        Raises
        ------
        InputError
            On Ray: a judge with ``LLMConfig.engine`` (an engine object cannot be shipped).
        ModelNotFoundError, EngineError
            A judge could not load; on Ray, also: Ray is missing or unreachable, or two actors
            loaded different models or planned different rotations (named with the judge and
            both actors' host and pid).
        """
        self.check_judges(judges)
        answers: list[tuple[str, int, Any]] = self.pool.start(SweepWorker, list(items), list(judges), settings,
                                                              unrelated)
        summary = [(host, pid, [(len(planned), model_id, backend) for planned, model_id, backend in plans])
                   for host, pid, plans in answers]
        same_everywhere(summary, "judges")
        host, pid, first = answers[0]
        for other_host, other_pid, plans in answers[1:]:
            for judge, (mine, _, _), (theirs, _, _) in zip(judges, first, plans, strict=True):
                if mine != theirs:
                    raise EngineError(
                        f"Ray workers planned different rotations for judge {judge.judge_id!r}: {host} (pid {pid}) "
                        f"and {other_host} (pid {other_pid}) (their nodes' tokenizers or chat templates differ); "
                        "every node needs the same model files")
        return [PlannedJudge(spec, planned, model_id, backend)
                for spec, (planned, model_id, backend) in zip(judges, first, strict=True)]

    def judged_chunks(
        self, judge_index: int, chunks: Sequence[Sequence[PlannedRotation]], stop: threading.Event
    ) -> Iterator[tuple[int, list[JudgmentResult]]]:
        """``(chunk index, results in chunk order)`` for each chunk of the judge at
        ``judge_index``, each index once, as the pool hands them back (in order in this
        process); no new chunk once ``stop`` is set.

        Raises
        ------
        EngineError
            As :meth:`~autorubric_local.runner.distributed.RayActors.dispatch`.
        """
        yield from self.pool.dispatch("judge", chunks, (judge_index,), stop)

    def __enter__(self) -> Self:
        self.pool.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.pool.__exit__(kind, exc, tb)


class LocalSweepExecutor(SweepExecutor):
    """Loads the judges in this process and judges chunks in order, one at a time: a
    :class:`SweepExecutor` on :class:`~autorubric_local.runner.in_process.InProcessWorkers`.

    The engines it loads are released when the sweep ends (``__exit__``, also when loading a
    later judge failed), by the rule a run's are
    (:class:`~autorubric_local.runner.in_process.JobEngines`): engines already in
    :func:`~autorubric_local.judges.engines.load_engine`'s cache when the sweep started (another
    holder's) are kept, and a failed release is logged, never raised.
    """

    def __init__(self) -> None:
        super().__init__(InProcessWorkers())
