"""Stored position-bias sweeps on Ray actors: :class:`RaySweepExecutor`, used by
:func:`~autorubric_local.bias.stored.run_stored_sweep` when ``EvalConfig.distributed`` is set.

The same path as a distributed run (:mod:`autorubric_local.runner.distributed`): each actor
(:class:`SweepWorker`) loads every judge from its config and plans its rotations; the driver
sends chunks of whole items through the same bounded queue, and commits each returned chunk's
rotation and cell rows in one transaction, as a local sweep does. Actors are restarted, and their
chunks judged again, by Ray (``max_restarts``, ``max_task_retries``).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from autorubric_local.bias.cells import SweepSettings
from autorubric_local.bias.executors import PlannedJudge
from autorubric_local.bias.sweep import (
    PlannedRotation,
    judge_chunk,
    load_configs,
    load_judge,
)
from autorubric_local.bias.unrelated import UnrelatedOption
from autorubric_local.core.errors import EngineError
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.graders.planning import GradeItem
from autorubric_local.runner.distributed import (
    RayActors,
    refuse_built_engines,
    same_everywhere,
)


class SweepWorker:
    """What one Ray actor holds for a sweep: every judge loaded, with its planned rotations."""

    def __init__(
        self,
        items: Sequence[GradeItem],
        judges: Sequence[JudgeSpec],
        settings: SweepSettings,
        unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    ) -> None:
        configs = load_configs(judges)  # this node's vLLM memory shares
        self.loaded = [load_judge(items, judge, settings, unrelated, configs[judge.judge_id]) for judge in judges]

    def ready(self) -> tuple[str, int, list[tuple[list[PlannedRotation], str | None, str | None]]]:
        """``(host, pid, [(planned rotations, model id, backend) per judge])``."""
        plans = [(planned.planned, planned.model_id, planned.backend) for planned in map(PlannedJudge.of, self.loaded)]
        return socket.gethostname(), os.getpid(), plans

    def judge(self, chunk: Sequence[PlannedRotation], judge_index: int) -> tuple[int, list[JudgmentResult]]:
        """``(pid, results in chunk order)`` of :func:`~.sweep.judge_chunk` by judge ``judge_index``."""
        loaded = self.loaded[judge_index]
        return os.getpid(), judge_chunk(loaded.engine, chunk, loaded.spec.llm_config.thinking_budget)


class RaySweepExecutor(RayActors):
    """Judges a stored sweep's chunks on Ray actors (module docstring; a
    :class:`~.executors.SweepExecutor`)."""

    def load(
        self,
        items: Sequence[GradeItem],
        judges: Sequence[JudgeSpec],
        settings: SweepSettings,
        unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    ) -> list[PlannedJudge]:
        """Start the actors, each loading every judge and planning its rotations.

        Raises
        ------
        InputError
            A judge with ``LLMConfig.engine`` (an engine object cannot be shipped).
        EngineError
            Ray is missing or unreachable, an actor could not load a judge, or two actors
            loaded different models or planned different rotations (named with the judge and
            both actors' host and pid).
        """
        refuse_built_engines(judges)
        answers: list[tuple[str, int, Any]] = self.start(SweepWorker, list(items), list(judges), settings, unrelated)
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
                for spec, (planned, model_id, backend) in zip(judges, answers[0][2], strict=True)]

    def judged_chunks(
        self, judge_index: int, chunks: Sequence[Sequence[PlannedRotation]], stop: threading.Event
    ) -> Iterator[tuple[int, list[JudgmentResult]]]:
        """``(chunk index, results)`` in completion order (:meth:`RayActors.dispatch`)."""
        yield from self.dispatch("judge", chunks, (judge_index,), stop)
