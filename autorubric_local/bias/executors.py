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
    load_judge,
)
from autorubric_local.bias.unrelated import UnrelatedOption
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.graders.planning import GradeItem


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
        return cls(loaded.spec, loaded.planned, getattr(loaded.engine, "model_id", None),
                   getattr(loaded.engine, "backend_name", None))


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
    """Loads the judges in this process and judges chunks in order, one at a time."""

    def __init__(self) -> None:
        self._loaded: list[LoadedJudge] = []

    def load(
        self,
        items: Sequence[GradeItem],
        judges: Sequence[JudgeSpec],
        settings: SweepSettings,
        unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    ) -> list[PlannedJudge]:
        """:func:`~.sweep.load_judge` for every judge."""
        self._loaded = [load_judge(items, judge, settings, unrelated) for judge in judges]
        return [PlannedJudge.of(loaded) for loaded in self._loaded]

    def judged_chunks(
        self, judge_index: int, chunks: Sequence[Sequence[PlannedRotation]], stop: threading.Event
    ) -> Iterator[tuple[int, list[JudgmentResult]]]:
        """:func:`~.sweep.judge_chunk` on each chunk, in order."""
        loaded = self._loaded[judge_index]
        for index, chunk in enumerate(chunks):
            if stop.is_set():
                return
            yield index, judge_chunk(loaded.engine, chunk, loaded.spec.llm_config.thinking_budget)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

