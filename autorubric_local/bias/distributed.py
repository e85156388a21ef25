"""Stored position-bias sweeps on Ray actors: :class:`RaySweepExecutor`, used by
:func:`~autorubric_local.bias.stored.run_stored_sweep` when ``EvalConfig.distributed`` is set.

The same path as a distributed run (:mod:`autorubric_local.runner.distributed`): each actor
(:class:`~.executors.SweepWorker`, the same worker as a local sweep's) loads every judge from its config and plans its rotations; the driver
sends chunks of whole items through the same bounded queue, and commits each returned chunk's
rotation and cell rows in one transaction, as a local sweep does. Actors are restarted, and their
chunks judged again, by Ray (``max_restarts``, ``max_task_retries``).
"""

from __future__ import annotations

from collections.abc import Sequence

from autorubric_local.bias.executors import SweepExecutor, SweepWorker
from autorubric_local.graders.judge_spec import JudgeSpec
from autorubric_local.runner.config import DistributedConfig
from autorubric_local.runner.distributed import RayActors, refuse_built_engines

__all__ = ["RaySweepExecutor", "SweepWorker"]


class RaySweepExecutor(SweepExecutor):
    """Judges a stored sweep's chunks on Ray actors (module docstring): a
    :class:`~.executors.SweepExecutor` on :class:`~autorubric_local.runner.distributed.RayActors`
    of :class:`~.executors.SweepWorker`."""

    def __init__(self, settings: DistributedConfig) -> None:
        self.actors = RayActors(settings)
        super().__init__(self.actors)

    def check_judges(self, judges: Sequence[JudgeSpec]) -> None:
        """Refuse judges with ``LLMConfig.engine``
        (:func:`~autorubric_local.runner.distributed.refuse_built_engines`)."""
        refuse_built_engines(judges)
