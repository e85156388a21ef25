"""Sweeps on the grading runner's path: chunks committed one by one, resume, one writer.

How :func:`run_stored_sweep` goes (as :class:`~autorubric_local.runner.EvalRunner` does for a run):

1. The input is checked (:func:`.sweep.check_sweep_input`) and the unrelated options drawn.
2. The sweep is opened as a run is (:func:`~autorubric_local.runner.job.drive_job`, the same
   code): resumed when the database has a sweep of that name (and ``resume``),
   after checking its content hash (:func:`.checkpoint.check_sweep_resumable`: a changed
   rubric, setting, judge or item is refused with what changed); otherwise started. Opening
   takes the sweep's lease (``sweep_leases``; the rules of :mod:`autorubric_local.store.leases`):
   a second live writer is refused with :class:`RunLockedError`, a stale lease (its holder
   killed) is taken over with a warning. A heartbeat thread renews it while the sweep runs.
   Every judge's engine is loaded (in this process, or with ``EvalConfig.distributed`` in Ray
   actors, which then judge the chunks while this process commits them: :mod:`.executors`,
   :mod:`.distributed`): for a stored sweep after it is claimed, so a refused one loads
   nothing; for a new sweep before its row is written (the row names the loaded models).
3. Per judge, the items whose rotations are not all stored without error are cut into chunks
   of whole items (:func:`.sweep.sweep_chunks`, ``chunk_judgments`` rotations) and each chunk
   is judged as one engine workload (:func:`.sweep.judge_chunk`: an engine failure becomes an
   error on each of the chunk's rotations, and the other chunks go on); its rotation and cell
   rows are committed in one transaction that renews the lease. A kill loses at most the chunk
   in flight.
4. Cell scores and aggregates are computed from the stored rotation rows
   (:func:`.records.results_from_rows`) and replace the sweep's ``sweep_scores`` and
   ``sweep_aggregates``, the same way for a resumed sweep and an uninterrupted one, so both
   give the same rows.

A resumed sweep judges failed rotations' items again (as a resumed run grades failed items
again). Ctrl-C, or setting the ``stop`` event (after the chunks in flight are committed), marks
the sweep ``interrupted``; run it again with the same name to resume.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autorubric_local.bias.aggregate import aggregate_cells
from autorubric_local.bias.cells import SweepCell, SweepSettings
from autorubric_local.bias.checkpoint import (
    check_sweep_resumable,
    sweep_content_hash,
    sweep_plan,
)
from autorubric_local.bias.executors import (
    LocalSweepExecutor,
    PlannedJudge,
    SweepExecutor,
)
from autorubric_local.bias.records import (
    aggregate_rows,
    judgment_rows,
    results_from_rows,
    score_rows,
)
from autorubric_local.bias.sweep import (
    PlannedRotation,
    SweepResult,
    build_cells,
    check_sweep_input,
    sweep_chunks,
)
from autorubric_local.bias.unrelated import UnrelatedOption, sample_unrelated_options
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.planning import GradeItem
from autorubric_local.runner.config import EvalConfig, auto_name
from autorubric_local.runner.job import SWEEP_LEASE, database_write_error, drive_job, first_handbacks, mark_end
from autorubric_local.runner.runner import EvalInterruptedError
from autorubric_local.store import Store
from autorubric_local.store.leases import LeaseOwner
from autorubric_local.store.transaction import is_write_failure

__all__ = ["StoredSweep", "SweepChunkReport", "run_stored_sweep"]



@dataclass(frozen=True)
class SweepChunkReport:
    """Sent to ``on_chunk`` after each committed chunk.

    ``completed_items`` and ``total_items`` count this judge's items; ``failed_rotations`` are
    the chunk's rotations stored with an error.
    """

    sweep_id: str
    name: str
    judge_id: str
    chunk_index: int
    items: int
    rotations: int
    failed_rotations: int
    completed_items: int
    total_items: int


@dataclass(frozen=True)
class StoredSweep:
    """A finished stored sweep: its id and name, the result (scored from the stored rows), and
    how many rotation rows were already stored when this session began (0 for a new sweep)."""

    sweep_id: str
    name: str
    result: SweepResult
    resumed_rotations: int


def run_stored_sweep(
    items: Sequence[GradeItem],
    judges: Sequence[JudgeSpec],
    settings: SweepSettings | None = None,
    config: EvalConfig | None = None,
    *,
    name: str | None = None,
    preferred: Sequence[int | None] | None = None,
    rubric: Any = None,
    data_path: str | None = None,
    on_chunk: Callable[[SweepChunkReport], None] | None = None,
    stop: threading.Event | None = None,
) -> StoredSweep:
    """Sweep ``items`` as :func:`.sweep.run_sweep` does, committing each chunk to the database
    and resuming a stored sweep of the same name (module docstring).

    Parameters
    ----------
    items, judges, settings, preferred
        As :func:`.sweep.run_sweep`.
    config : EvalConfig, optional
        The grading runner's settings, read for ``db_path`` (or ``experiments_dir``),
        ``experiment_name`` (the sweep's name; generated as ``sweep-<utc>-<hex>`` when None),
        ``resume``, ``chunk_judgments`` (most rotations per chunk) and the lease timings.
    name : str, optional
        Overrides ``config.experiment_name`` with any name (the CLI's deprecated ``--name``).
    rubric : JSON-able, optional
        Stored as ``sweeps.rubric_json``.
    data_path : str, optional
        Where the items came from (stored).
    on_chunk : callable, optional
        Called with a :class:`SweepChunkReport` after each committed chunk.
    stop : threading.Event, optional
        Once set (from any thread), no new chunk is started: the sweep stops after the chunks
        in flight are committed, is marked ``interrupted`` and raises
        :class:`~autorubric_local.runner.EvalInterruptedError`, as :meth:`EvalRunner.stop
        <autorubric_local.runner.EvalRunner.stop>` stops a run.

    Returns
    -------
    StoredSweep

    Raises
    ------
    InputError
        Bad input (:func:`.sweep.check_sweep_input`), or a stored sweep of this name whose
        content differs (the message says what changed).
    RunLockedError
        Another live process is writing this sweep, or took its lease over from this one.
    EvalInterruptedError
        ``stop`` was set before every chunk was committed (committed chunks are kept for a resume).
    """
    settings = settings or SweepSettings()
    config = config or EvalConfig(show_progress=False)
    check_sweep_input(items, judges, preferred, config.chunk_judgments, settings.criteria)
    unrelated = sample_unrelated_options(items, settings.seed) if settings.unrelated_option else None
    name = name or config.experiment_name or auto_name("sweep")
    path = config.database_path(name)
    plan = sweep_plan(items, judges, settings, preferred)
    with sweep_executor(config) as executor:
        job = _SweepJob(items, judges, settings, config, unrelated, preferred, rubric, data_path, on_chunk,
                        stop or threading.Event(), executor, plan, name, str(path))
        return drive_job(job, SWEEP_LEASE, name, path, config)


@dataclass(frozen=True)
class _SweepJob:
    """A stored sweep as the :class:`~autorubric_local.runner.job.Job` that
    :func:`~autorubric_local.runner.job.drive_job` drives (the arguments of :func:`run_stored_sweep`)."""

    items: Sequence[GradeItem]
    judges: Sequence[JudgeSpec]
    settings: SweepSettings
    config: EvalConfig
    unrelated: Mapping[tuple[int, int], UnrelatedOption] | None
    preferred: Sequence[int | None] | None
    rubric: Any
    data_path: str | None
    on_chunk: Callable[[SweepChunkReport], None] | None
    stop: threading.Event
    executor: SweepExecutor
    plan: Mapping[str, Any]
    name: str
    where: str

    def load(self) -> list[PlannedJudge]:
        return self.executor.load(self.items, self.judges, self.settings, self.unrelated)

    def start(self, store: Store, loaded: list[PlannedJudge], owner: LeaseOwner) -> str:
        return store.start_sweep(name=self.name, content_hash=sweep_content_hash(self.plan), plan=dict(self.plan),
                                 lease=owner, unique_name=self.config.resume, **self._row(loaded))

    def check(self, store: Store, job_id: str) -> None:
        check_sweep_resumable(store.find_sweep(job_id) or {"id": job_id, "name": self.name}, self.plan, self.where)

    def reopen(self, store: Store, job_id: str, loaded: list[PlannedJudge]) -> int:
        """Mark the sweep running again with its judges as loaded now; the rotation rows already stored."""
        store.reopen_sweep(job_id, self._row(loaded)["judges"])
        return len(store.sweep_judgments(job_id))

    def work(self, store: Store, job_id: str, loaded: list[PlannedJudge], owner: LeaseOwner,
             resumed: int) -> StoredSweep:
        result = _sweep(store, job_id, self.name, self.items, loaded, self.settings, self.config, self.unrelated,
                        self.preferred, owner, self.on_chunk, self.executor, self.stop)
        return StoredSweep(job_id, self.name, result, resumed)

    def result(self, store: Store, job_id: str, done: StoredSweep, resumed: int) -> StoredSweep:
        return done

    def _row(self, loaded: Sequence[PlannedJudge]) -> dict[str, Any]:
        return _row(self.settings, self.judges, loaded, self.rubric, self.data_path, len(self.items))


def _row(settings: SweepSettings, judges: Sequence[JudgeSpec], loaded: Sequence[Any], rubric: Any,
         data_path: str | None, total_items: int) -> dict[str, Any]:
    """The ``sweeps`` row fields beyond name, content and plan (the judges with their loaded models)."""
    judges_json = [{"judge_id": j.judge_id, "model": j.llm_config.model, "system_prompt": j.system_prompt,
                    "model_id": loaded[k].model_id, "backend": loaded[k].backend} for k, j in enumerate(judges)]
    return {"kind": settings.kind.value, "config": settings.to_dict(), "judges": judges_json, "rubric": rubric,
            "data_path": data_path, "total_items": total_items}


def sweep_executor(config: EvalConfig) -> SweepExecutor:
    """:class:`~.executors.LocalSweepExecutor`, or a :class:`~.distributed.RaySweepExecutor`
    when ``config.distributed`` is set (the only place a sweep imports that module)."""
    if config.distributed is None:
        return LocalSweepExecutor()
    from autorubric_local.bias.distributed import RaySweepExecutor

    return RaySweepExecutor(config.distributed)


def _pending(planned: Sequence[PlannedRotation], stored: Sequence[Mapping[str, Any]],
             item_ids: Sequence[str]) -> list[PlannedRotation]:
    """The rotations of items that have a planned rotation not stored, or stored with an error."""
    ok: dict[str, int] = {}
    for row in stored:
        if row["error"] is None:
            ok[row["item_id"]] = ok.get(row["item_id"], 0) + 1
    needed: dict[int, int] = {}
    for task, _ in planned:
        needed[task.item_index] = needed.get(task.item_index, 0) + 1
    return [pair for pair in planned if ok.get(item_ids[pair[0].item_index], 0) < needed[pair[0].item_index]]


def _sweep(
    store: Store, sweep_id: str, name: str, items: Sequence[GradeItem], judges: Sequence[PlannedJudge],
    settings: SweepSettings, config: EvalConfig, unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    preferred: Sequence[int | None] | None, owner: LeaseOwner, on_chunk: Callable[[SweepChunkReport], None] | None,
    executor: SweepExecutor, stop: threading.Event,
) -> SweepResult:
    """Judge and commit every pending chunk, then score every cell from the stored rows."""
    item_ids = [item.item_id or f"item-{i}" for i, item in enumerate(items)]
    started = time.perf_counter()
    seconds: dict[str, float] = {}
    status = "failed"
    try:
        for judge_index, judge in enumerate(judges):
            judge_id = judge.spec.judge_id
            pending = _pending(judge.planned, store.sweep_judgments(sweep_id, judge_id), item_ids)
            total = len({task.item_index for task, _ in judge.planned})
            completed = total - len({task.item_index for task, _ in pending})
            judge_started = time.perf_counter()
            chunks = sweep_chunks(pending, config.chunk_judgments)
            for index, results in first_handbacks(executor.judged_chunks(judge_index, chunks, stop),
                                                  f"sweep {name!r}, judge {judge_id!r}"):
                chunk = chunks[index]
                cells = build_cells(items, judge_id, chunk, results, unrelated, preferred)
                store.record_sweep_chunk(sweep_id, judgment_rows(cells), score_rows(cells), lease=owner)
                n_items = len({task.item_index for task, _ in chunk})
                completed += n_items
                if on_chunk is not None:
                    on_chunk(SweepChunkReport(sweep_id, name, judge_id, index, n_items, len(chunk),
                                              sum(r.error is not None for r in results), completed, total))
            if completed < total:  # the executor stopped early: ``stop`` was set
                status = "interrupted"
                raise EvalInterruptedError(f"sweep {name!r} stopped after {completed} of {total} items of judge "
                                           f"{judge_id!r}; run it again to resume")
            seconds[judge_id] = time.perf_counter() - judge_started
        cells: list[SweepCell] = []
        for judge in judges:
            stored = store.sweep_judgments(sweep_id, judge.spec.judge_id)
            results = results_from_rows(item_ids, judge.planned, stored)
            cells.extend(build_cells(items, judge.spec.judge_id, judge.planned, results, unrelated, preferred))
        judge_ids = tuple(j.spec.judge_id for j in judges)
        aggregates = aggregate_cells(cells, settings, judge_ids)
        store.replace_sweep_results(sweep_id, score_rows(cells), aggregate_rows(aggregates), lease=owner)
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except sqlite3.OperationalError as exc:
        if not is_write_failure(exc):
            raise
        status = "interrupted"
        raise database_write_error(exc, f"sweep {name!r}", "the committed chunks") from exc
    finally:
        mark_end(lambda: store.finish_sweep(sweep_id, status, wall_seconds=time.perf_counter() - started, lease=owner),
                 f"sweep {name!r}", status)
    return SweepResult(settings=settings, judge_ids=judge_ids, items=tuple(items), cells=tuple(cells),
                       aggregates=tuple(aggregates), seconds=seconds)
