"""``EvalRunner`` and ``evaluate``: grade a whole dataset as chunked engine workloads, with
SQLite checkpoints, resume, progress and timing (AutoRubric's README, "Batch Evaluation with EvalRunner").

How a run goes:

1. The dataset is checked and planned (:func:`~.checkpoint.plan_dataset`); a malformed dataset is
   refused before anything is loaded or written. The plan keeps each item's key, hash and
   judgment count only (:class:`~.checkpoint.PlannedItems`): items are built again chunk by
   chunk, so with a ``.jsonl`` file read when used a run holds only the chunk in flight
   (the Ray executor cuts every chunk up front and holds them all). The judges' engines are loaded (a missing
   model is refused before a database is created).
2. The run is opened (:func:`~.job.drive_job`, which opens sweeps too): resumed when the
   database has a run of that name (and ``resume``), after
   checking its content hash; otherwise started, with every planned item stored as pending.
   Opening takes the run's lease (:mod:`autorubric_local.store.leases`): one writer per run.
   While another live process holds it the run is refused with :class:`RunLockedError` before
   anything is graded; a stale lease (its holder killed, or silent for ``lease_timeout_seconds``)
   is taken over, with a warning in the log. The lease is renewed with every committed chunk and
   every ``lease_heartbeat_seconds`` by a background thread, and released when the run ends.
3. Pending items are cut into chunks (``chunk_judgments`` judgments, ``max_concurrent_items``
   items at most; in this process also sized from the pace so far to take about
   ``chunk_seconds``, starting with one item: :class:`~.chunking.TimedChunks`) and each chunk
   goes through the grader as one engine workload; its items, reports and judgments are
   committed in one transaction, after which the C heap's free pages go back to the operating
   system (:mod:`.heap`: fragmentation otherwise strands them). A kill loses at most the chunk in flight; a resume computes only items without a stored report, so no judgment is missing or
   duplicated (rows are keyed by run, item, criterion, judge and permutation).
4. The result is rebuilt from the database (:func:`~.results.result_from_store`), the same way
   for a resumed run and an uninterrupted one.

An item that fails at run time (the engine raises for it, or every judgment fails) is stored
with its error and the run goes on, unless ``fail_fast``. Ctrl-C stops a sync run at once
(``KeyboardInterrupt``; the chunk in flight is dropped) and an async one after the chunk in
flight is committed; either way the run is marked ``interrupted`` and can be resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from autorubric_local.core.errors import AutorubricError, InputError
from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.data.dataset import RubricDataset, rubric_to_json
from autorubric_local.graders.criterion_grader import CriterionGrader, GradedItem
from autorubric_local.graders.records import (
    contextual_prior_records,
    graded_item_records,
)
from autorubric_local.graders.result_records import (
    criterion_result_records,
    prompt_text_records,
)
from autorubric_local.runner.checkpoint import (
    PlannedItem,
    PlannedItems,
    PlannedRows,
    adopt_stored_seed,
    check_resumable,
    content_hash,
    plan_dataset,
)
from autorubric_local.runner.chunking import TimedChunks, make_chunks
from autorubric_local.runner.config import MEMORY_DB, EvalConfig, auto_name
from autorubric_local.runner.executors import (
    RUN_TIME_ERRORS,
    ChunkExecutor,
    EngineRecord,
    LocalExecutor,
    failed_item,
)
from autorubric_local.runner.heap import release_free_heap
from autorubric_local.runner.job import (
    RUN_LEASE,
    LeaseHeartbeat,
    database_write_error,
    drive_job,
    first_handbacks,
    mark_end,
    probe_lease,
)
from autorubric_local.runner.progress import RunProgress
from autorubric_local.runner.results import EvalResult
from autorubric_local.runner.stored import StoredRun
from autorubric_local.store import Store
from autorubric_local.store.leases import LeaseOwner
from autorubric_local.store.transaction import is_write_failure


__all__ = ["RUN_TIME_ERRORS", "ChunkReport", "EvalAbortedError", "EvalInterruptedError", "EvalRunner",
           "LeaseHeartbeat", "evaluate", "failed_item", "make_chunks"]


class EvalInterruptedError(AutorubricError):
    """The run was stopped before it finished; committed chunks are kept for a resume."""


class EvalAbortedError(AutorubricError):
    """``fail_fast``: an item failed; the run stopped after committing its chunk."""


@dataclass(frozen=True)
class ChunkReport:
    """Sent to ``on_chunk`` after each committed chunk."""

    run_id: str
    experiment_name: str
    chunk_index: int
    items: int
    judgments: int
    failed_items: int
    completed_items: int
    total_items: int
    graded: tuple[tuple[str, EnsembleEvaluationReport], ...] = ()
    """The chunk's items as ``(item id, report)``, in the chunk's order (already committed)."""


class EvalRunner:
    """Grade a dataset with a grader as chunked, checkpointed engine workloads (AutoRubric's
    ``EvalRunner``; README, "Batch Evaluation with EvalRunner").

    Building a runner loads and writes nothing; :meth:`run` (async), :meth:`run_sync` or
    :meth:`run_to_store` grade the run, resuming a stored run of the same name (see the module
    docstring for the steps).

    Parameters
    ----------
    dataset : RubricDataset
        The items to grade (planned and checked when a run starts, not here).
    grader : CriterionGrader
        The judge (or judges) and scoring settings.
    config : EvalConfig or None, default None
        How the run goes (name, database, chunk sizes, leases, progress); None:
        ``EvalConfig()``, every default (a generated name under ``experiments/``).
    data_path : str or None, default None
        Recorded with the run (where the dataset came from); not read.
    on_chunk : callable, optional
        Called with a :class:`ChunkReport` after each committed chunk.
    executor : ChunkExecutor, optional
        Where chunks are graded (:mod:`.executors`); default: this process
        (:class:`~.executors.LocalExecutor`), or Ray actors when ``config.distributed`` is set
        (:class:`~.distributed.RayExecutor`). Planning, chunking and commits stay here.

    Notes
    -----
    A grader with ``escalation`` (a live cascade) is stored as any run: each item's report holds
    both stages (superseded first-stage votes, ``escalated`` criteria), its judgment rows both
    stages' judgments (the escalation judges' keyed by their own judge id and the criterion's
    position in the full rubric); chunk sizes and the progress bar count first-stage judgments.
    """

    def __init__(
        self,
        dataset: RubricDataset,
        grader: CriterionGrader,
        config: EvalConfig | None = None,
        *,
        data_path: str | None = None,
        on_chunk: Callable[[ChunkReport], None] | None = None,
        executor: ChunkExecutor | None = None,
    ) -> None:
        self.dataset = dataset
        self.grader = grader
        self.config = config or EvalConfig()
        self.data_path = data_path
        self.on_chunk = on_chunk
        self.executor = executor
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask the run to stop after the chunk in flight (thread-safe)."""
        self._stop.set()

    async def run(self) -> EvalResult:
        """Run (or resume) in a worker thread and return the run's result.

        Returns
        -------
        EvalResult
            As :meth:`run_sync`.

        Raises
        ------
        InputError, EvalAbortedError, EvalInterruptedError, RunLockedError
            As :meth:`run_sync`.
        asyncio.CancelledError
            The awaiting task was cancelled: the run stops after the chunk in flight is
            committed (as :meth:`stop`) and the cancellation is re-raised.
        """
        worker = asyncio.ensure_future(asyncio.to_thread(self.run_sync))
        try:
            return await asyncio.shield(worker)
        except asyncio.CancelledError:
            self._stop.set()
            with contextlib.suppress(EvalInterruptedError):
                await worker
            raise

    def run_sync(self) -> EvalResult:
        """Run (or resume) in this thread and return the run's result.

        A finished stored run of this name (with ``config.resume`` and the same content) is
        read back without grading.

        Returns
        -------
        EvalResult
            Every item's result, rebuilt from the database (:meth:`run_to_store` then
            ``result()``).

        Raises
        ------
        InputError
            Malformed dataset, or a stored run of this name whose content differs.
        EvalAbortedError
            ``fail_fast`` and an item failed.
        EvalInterruptedError
            :meth:`stop` was called.
        RunLockedError
            Another live process is grading this run (nothing was graded), or took the run's
            lease over from this one (the chunk in flight was not committed).
        """
        return self.run_to_store().result()

    def run_to_store(self) -> StoredRun:
        """Run (or resume) as :meth:`run_sync` does, without building the result in memory.

        Returns
        -------
        StoredRun
            Where the run's results are: its ``graded()`` reads them back a page at a time,
            ``result()`` as one :class:`EvalResult`.

        Raises
        ------
        InputError, EvalAbortedError, EvalInterruptedError, RunLockedError
            As :meth:`run_sync`.
        """
        finished = self.finished_run()
        if finished is not None:
            return finished
        planned = plan_dataset(self.dataset, self.grader.judgment_count)
        with self._executor() as executor:
            return self._run_on(executor, planned)

    def refuse_if_locked(self) -> None:
        """Refuse now, before a caller loads the judges itself, a stored run of this name that
        another live process is grading (:func:`~.job.probe_lease`); :meth:`run_to_store` checks
        this again under the lease. Nothing is created.

        Raises
        ------
        RunLockedError
            Another live writer holds the run's lease (the message names its pid, host and heartbeat).
        """
        name = self.config.experiment_name
        if name is not None:
            probe_lease(self.config.database_path(name), RUN_LEASE, name, self.config)

    def _executor(self) -> ChunkExecutor:
        if self.executor is not None:
            return self.executor
        if self.config.distributed is not None:
            # the one place ray is imported, and only for a distributed run
            from autorubric_local.runner.distributed import RayExecutor

            return RayExecutor(self.config.distributed)
        return LocalExecutor()

    def _run_on(self, executor: ChunkExecutor, planned: PlannedItems) -> StoredRun:
        """Open the run and grade what is pending (:func:`~.job.drive_job`: a stored run is
        claimed, its lease taken and its content checked, before the executor loads any judge,
        so a locked or changed run is refused without starting Ray actors or loading models; a
        new run's engines load first, before the database is created, as its row names them)."""
        name = self.config.experiment_name or auto_name(self.dataset.name)
        path = self.config.database_path(name)
        return drive_job(_RunJob(self, executor, planned, name, str(path)), RUN_LEASE, name, path, self.config)

    def finished_result(self) -> EvalResult | None:
        """The stored result, read without loading a judge, when the run this runner would
        resume is already finished with this content (same content hash, every item graded
        without an error); None otherwise (including a run whose content differs, which
        :meth:`run_sync` then refuses, naming what changed): :meth:`finished_run`, read whole.

        Raises
        ------
        InputError
            Malformed dataset (checked here only when a finished run of this name exists).
        """
        finished = self.finished_run()
        return None if finished is None else finished.result()

    def finished_run(self) -> StoredRun | None:
        """Where the finished run :meth:`finished_result` would read is, or None (its rules).

        Nothing is written and no lease is taken; a database that does not exist is not
        created.

        Raises
        ------
        InputError
            Malformed dataset (checked here only when a finished run of this name exists).
        """
        name = self.config.experiment_name
        if name is None or not self.config.resume:
            return None
        path = self.config.database_path(name)
        if str(path) == MEMORY_DB or not Path(path).is_file():
            return None
        store = Store.open(path)
        try:
            existing = store.find_run(name)
            if existing is None or existing["status"] != "finished":
                return None  # the common case: nothing planned or hashed here, run_sync does that once
            planned = plan_dataset(self.dataset)
            adopt_stored_seed(self.grader, json.loads(existing.get("grader_json") or "{}"))
            if existing.get("content_hash") != content_hash(planned.item_hashes, self.grader.describe()):
                return None
            if store.done_item_ids(existing["id"]) != set(planned.keys):
                return None
            if not _stored_as_planned(existing, store, planned, self.dataset):
                return None  # ground truth or metadata changed: a resume refreshes them (under the lease)
            return StoredRun.read(store, existing["id"], str(path), len(planned))
        finally:
            store.close()

    # ------------------------------------------------------------------------------ run rows

    def _check_run(self, store: Store, run_id: str, where: str, planned: PlannedItems) -> None:
        """Check, under the lease of the stored run ``run_id``, that it can be resumed with this
        content (:func:`~.checkpoint.check_resumable`; the grader adopts the run's stored seed
        first); nothing is loaded.

        Raises
        ------
        InputError
            The stored run's content differs (the message says what changed).
        """
        existing = store.find_run(run_id)  # read again under the lease
        assert existing is not None
        adopt_stored_seed(self.grader, json.loads(existing.get("grader_json") or "{}"))
        description = self.grader.describe()
        expected = content_hash(planned.item_hashes, description)
        if existing.get("content_hash") != expected:  # the stored rows are read only to say what changed
            stored = [row for page in store.item_pages(run_id, ("item_id", "item_hash")) for row in page]
            check_resumable(existing, expected, description, planned, stored, where)

    def _start_run(
        self,
        store: Store,
        name: str,
        planned: PlannedItems,
        engines: dict[str, EngineRecord],
        owner: LeaseOwner,
    ) -> str:
        """A new run holding ``owner``'s lease, with every planned item pending."""
        description = self.grader.describe()
        return store.start_run(
            name=name, judges=self._judges(engines), grader=description,
            rubric=None if self.dataset.rubric is None else rubric_to_json(self.dataset.rubric),
            data_path=self.data_path, content_hash=content_hash(planned.item_hashes, description),
            dataset=_header(self.dataset), items=PlannedRows(planned),
            lease=owner, unique_name=self.config.resume,
        )

    def _reopen_run(self, store: Store, run_id: str, planned: PlannedItems, engines: dict[str, EngineRecord]) -> int:
        """Reopen the claimed run with the loaded engines; returns how many items are already done.

        ``engines`` gets each judge's fallbacks recorded before the stop added to its own (a
        freshly loaded engine has none), so the judges record still says which paths the stored
        judgments took."""
        store.plan_items(run_id, PlannedRows(planned))  # refreshes ground truth; keeps reports
        stored = json.loads((store.find_run(run_id) or {}).get("judges_json") or "[]")
        earlier = {judge["judge_id"]: judge.get("fallbacks") or [] for judge in stored}
        engines.update(_with_fallbacks(engines, earlier))
        store.update_run(run_id, status="running", finished_utc=None, judges_json=json.dumps(self._judges(engines)),
                         dataset_json=json.dumps(_header(self.dataset)))
        return len(store.done_item_ids(run_id))

    def _record_fallbacks(self, store: Store, run_id: str, engines: dict[str, EngineRecord],
                          fallbacks: Mapping[str, list[str]]) -> dict[str, EngineRecord]:
        """``engines`` with each judge's ``fallbacks`` as the executor reports them now added to
        those recorded (a resumed run keeps the reasons from before its stop); when they changed,
        the run's ``judges_json`` is rewritten, so a run that left a faster path
        (:mod:`autorubric_local.engine.transformers.paths`) says so in its judges record."""
        merged = _with_fallbacks(engines, fallbacks)
        if merged == engines:
            return engines
        store.update_run(run_id, judges_json=json.dumps(self._judges(merged)))
        return merged

    def _judges(self, engines: dict[str, EngineRecord]) -> list[dict[str, Any]]:
        """The run's ``judges_json``: per judge its id, model, loaded model id, weight, and the rest
        of its engine's record (:func:`~.executors.engine_records`: ``backend``, e.g.
        ``"transformers"``; ``attention_path``; ``prompt_format``; vLLM's ``score_method``;
        ``dtype``, e.g. ``"float32"``; ``fallbacks``, why its engine left a faster path). A live
        cascade's escalation judges follow the grader's own, marked ``"stage": "escalation"``."""
        own = {j.judge_id for j in self.grader.judges}
        return [{"judge_id": j.judge_id, "model": j.llm_config.model, "model_id": engines[j.judge_id]["model_id"],
                 "weight": j.weight, **({} if j.judge_id in own else {"stage": "escalation"}),
                 **{k: v for k, v in engines[j.judge_id].items() if k != "model_id"}}
                for j in self.grader.all_judges]

    # ------------------------------------------------------------------------------- grading

    def _grade_pending(
        self,
        store: Store,
        run_id: str,
        name: str,
        planned: PlannedItems,
        engines: dict[str, EngineRecord],
        owner: LeaseOwner,
        executor: ChunkExecutor,
    ) -> None:
        done = store.done_item_ids(run_id)
        pending = planned.subset([position for position, key in enumerate(planned.keys) if key not in done])
        counts = (planned.judgments if planned.judgments is not None
                  else [self.grader.judgment_count(entry.grade_item) for entry in planned])
        estimates = dict(zip(planned.keys, counts, strict=True))
        chunks: TimedChunks[PlannedItem] | list[Sequence[PlannedItem]]
        if getattr(executor, "in_order", False):  # one chunk at a time, in order: cut as graded, each sized by time
            chunks = TimedChunks(pending, estimates, self.config.chunk_judgments, self.config.max_concurrent_items,
                                 self.config.chunk_seconds)
        else:  # Ray actors (or another executor) may take several at once: cut up front, by size
            chunks = make_chunks(pending, estimates, self.config.chunk_judgments, self.config.max_concurrent_items)
        progress = RunProgress(
            enabled=self.config.show_progress, style=self.config.progress_style,
            total_items=len(planned), total_judgments=sum(estimates.values()),
            done_items=len(planned) - len(pending),
            done_judgments=sum(estimates[key] for key in planned.keys if key in done),
            total_chunks=None if isinstance(chunks, TimedChunks) else len(chunks),
        )
        completed = len(planned) - len(pending)
        started = time.perf_counter()
        status = "failed"
        try:
            with progress, contextlib.closing(
                first_handbacks(executor.graded_chunks(self.grader, chunks, progress.judgments_done, self._stop),
                                f"run {name!r}")
            ) as graded_chunks:
                for index, graded in graded_chunks:
                    chunk = list(chunks[index])  # a cut-up-front chunk is lazy: its items built once here
                    self._commit(store, run_id, chunk, graded, engines, owner)
                    reported = getattr(executor, "fallbacks", None)  # an executor of ours always reports them
                    if reported is not None:
                        engines = self._record_fallbacks(store, run_id, engines, reported(self.grader))
                    if isinstance(chunks, TimedChunks):
                        chunks.forget(index)  # only the chunk in flight stays in memory
                    release_free_heap()  # else fragmentation keeps what the chunk freed (.heap)
                    completed += len(chunk)
                    progress.items_done(len(chunk), chunks=1)
                    failures = [(e, g) for e, g in zip(chunk, graded, strict=True) if g.report.error is not None]
                    if self.on_chunk is not None:
                        self.on_chunk(ChunkReport(run_id, name, index, len(chunk), sum(len(g.results) for g in graded),
                                                  len(failures), completed, len(planned),
                                                  tuple((e.key, g.report) for e, g in zip(chunk, graded, strict=True))))
                    if failures and self.config.fail_fast:
                        entry, failed = failures[0]
                        raise EvalAbortedError(
                            f"item {entry.index} ({entry.key!r}) failed: {failed.report.error} "
                            f"(fail_fast; {completed} items committed in run {name!r})"
                        )
            if completed < len(planned):  # the executor stopped early: stop() was called
                status = "interrupted"
                raise EvalInterruptedError(
                    f"run {name!r} stopped after {completed} of {len(planned)} items; run it again to resume"
                )
            status = "finished"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except sqlite3.OperationalError as exc:
            if not is_write_failure(exc):
                raise
            status = "interrupted"
            raise database_write_error(exc, f"run {name!r}", f"{completed} of {len(planned)} items were committed") from exc
        finally:
            mark_end(lambda: store.finish_run(run_id, status, wall_seconds=time.perf_counter() - started, lease=owner),
                     f"run {name!r}", status)

    def _commit(
        self,
        store: Store,
        run_id: str,
        chunk: Sequence[PlannedItem],
        graded: Sequence[GradedItem],
        engines: dict[str, EngineRecord],
        owner: LeaseOwner,
    ) -> None:
        """Store a chunk's items, reports, judgments and contextual priors in one transaction that
        also renews the run's lease (and writes nothing if ``owner`` lost it: :class:`RunLockedError`)."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        extras = [
            {
                "item_index": entry.index,
                "report_json": result.report.model_dump_json(),
                "engine_seconds": sum(r.seconds for r in result.results),
                "judgment_count": len(result.results),
                "graded_utc": now,
            }
            for entry, result in zip(chunk, graded, strict=True)
        ]
        model_ids = {judge_id: record["model_id"] for judge_id, record in engines.items()}
        items, judgments = graded_item_records(
            graded, model_ids, first_index=0, judge_ids=[j.judge_id for j in self.grader.all_judges], item_extras=extras
        )
        criteria = criterion_result_records([g.report for g in graded], [row["item_id"] for row in items],
                                            self.grader.cannot_assess_config)
        store.record_items(run_id, items, judgments, lease=owner, priors=contextual_prior_records(graded),
                           prompts=prompt_text_records(graded), criteria=criteria)


@dataclass(frozen=True)
class _RunJob:
    """An :class:`EvalRunner`'s run as the :class:`~.job.Job` that :func:`~.job.drive_job` drives."""

    runner: EvalRunner
    executor: ChunkExecutor
    planned: PlannedItems
    name: str
    where: str

    def load(self) -> dict[str, EngineRecord]:
        return self.executor.engines(self.runner.grader)

    def start(self, store: Store, loaded: dict[str, EngineRecord], owner: LeaseOwner) -> str:
        return self.runner._start_run(store, self.name, self.planned, loaded, owner)

    def check(self, store: Store, job_id: str) -> None:
        self.runner._check_run(store, job_id, self.where, self.planned)

    def reopen(self, store: Store, job_id: str, loaded: dict[str, EngineRecord]) -> int:
        return self.runner._reopen_run(store, job_id, self.planned, loaded)

    def work(self, store: Store, job_id: str, loaded: dict[str, EngineRecord], owner: LeaseOwner,
             resumed: int) -> None:
        self.runner._grade_pending(store, job_id, self.name, self.planned, loaded, owner, self.executor)

    def result(self, store: Store, job_id: str, done: None, resumed: int) -> StoredRun:
        return StoredRun.read(store, job_id, self.where, resumed)


def _with_fallbacks(engines: dict[str, EngineRecord], more: Mapping[str, list[str]]) -> dict[str, EngineRecord]:
    """``engines`` with each judge's reasons in ``more`` appended to its ``fallbacks`` (in order,
    each reason once); judges not in ``engines`` are ignored."""
    merged = {}
    for judge_id, record in engines.items():
        reasons = list(record.get("fallbacks") or [])
        reasons += [reason for reason in dict.fromkeys(more.get(judge_id, ())) if reason not in reasons]
        merged[judge_id] = {**record, "fallbacks": reasons}
    return merged


def _stored_as_planned(run: Mapping[str, Any], store: Store, planned: PlannedItems, dataset: RubricDataset) -> bool:
    """Whether the stored run already holds what resuming it would write again: the dataset
    header and every item's index, JSON and ground truth (none of which the content hash covers).
    The stored rows are read a page at a time."""
    if run.get("dataset_json") != json.dumps(_header(dataset)):
        return False
    fields = ("item_index", "item_json", "ground_truth_json")
    position_of = {key: position for position, key in enumerate(planned.keys)}
    matched = 0
    for page in store.item_pages(run["id"], ("item_id", *fields)):
        for row in page:
            position = position_of.get(row["item_id"])
            if position is None:
                continue
            planned_row = planned[position].row()
            if tuple(row[f] for f in fields) != tuple(planned_row[f] for f in fields):
                return False
            matched += 1
    return matched == len(planned)


def _header(dataset: RubricDataset) -> dict[str, Any]:
    header: dict[str, Any] = {}
    for key in ("name", "prompt"):
        if getattr(dataset, key) is not None:
            header[key] = getattr(dataset, key)
    header["rubric"] = None if dataset.rubric is None else rubric_to_json(dataset.rubric)
    if dataset.reference_submission is not None:
        header["reference_submission"] = dataset.reference_submission
    return header


async def evaluate(
    dataset: RubricDataset,
    grader: CriterionGrader,
    *,
    fail_fast: bool = False,
    show_progress: bool = True,
    progress_style: Literal["simple", "detailed"] = "simple",
    max_concurrent_items: int | None = None,
    experiment_name: str | None = None,
    experiments_dir: str | Path = "experiments",
    resume: bool = True,
    **config: Any,
) -> EvalResult:
    """Grade every item of ``dataset`` with ``grader`` and return the run's result (AutoRubric's
    ``evaluate``; README, "Batch Evaluation with EvalRunner").

    The keyword arguments build one :class:`EvalConfig` (validated when built) and the run is
    ``await EvalRunner(dataset, grader, config).run()``: the grading happens in a worker
    thread, committed to SQLite chunk by chunk, so a killed run resumes where it stopped.

    Parameters
    ----------
    dataset : RubricDataset
        The items to grade; its rubric (or each item's own rubric) gives the criteria. Checked
        and planned before any judge is loaded or any file written.
    grader : CriterionGrader
        The judge (or judges) and scoring settings; one grader per run.
    fail_fast : bool, default False
        Stop at the first item that fails at run time (after committing its chunk) and raise
        :class:`EvalAbortedError`; False stores the item's error and goes on.
    show_progress : bool, default True
        Show a progress bar of judgments and items on stderr.
    progress_style : {"simple", "detailed"}, default "simple"
        ``"detailed"`` adds rates and the time remaining.
    max_concurrent_items : int >= 1 or None, default None
        Most items per engine chunk; None: chunks limited by ``chunk_judgments`` only.
    experiment_name : str or None, default None
        The run's name (letters, digits, ``.``, ``_``, ``-``); None: a generated
        ``<dataset name or "eval">-<UTC date>-<time>-<4 hex>``. The same name again resumes that run.
    experiments_dir : str or Path, default "experiments"
        The run's database is ``experiments_dir/<experiment_name>/results.sqlite`` (unless
        ``db_path`` is given in ``**config``).
    resume : bool, default True
        Continue the latest run of this name if its database has one (a finished run is read
        back without grading); False starts a new run.
    **config
        Any further :class:`EvalConfig` field: ``db_path``, ``chunk_judgments``,
        ``chunk_seconds``, ``lease_timeout_seconds``, ``lease_heartbeat_seconds``,
        ``distributed`` (see :class:`EvalConfig` for each one's meaning, unit and default).

    Returns
    -------
    EvalResult
        Every item's result (failed items with their error), counts, token usage and cost
        where the engine reports them, and timing, rebuilt from the database.

    Raises
    ------
    InputError
        A setting out of range (the message names the :class:`EvalConfig` field), a malformed
        dataset, or a stored run of this name whose content (items or grader) differs.
    TypeError
        A keyword in ``**config`` that is not an :class:`EvalConfig` field.
    EvalAbortedError
        ``fail_fast`` and an item failed.
    RunLockedError
        Another live process is grading this run (nothing was graded), or took its lease over.

    Notes
    -----
    Cancelling the awaiting task stops the run after the chunk in flight is committed; the run
    is marked interrupted and the same call resumes it. See the :mod:`module docstring
    <autorubric_local.runner.runner>` for how a run is planned, chunked, leased and committed.

    Examples
    --------
    >>> result = await evaluate(dataset, grader, show_progress=False)  # doctest: +SKIP
    """
    settings = EvalConfig(fail_fast=fail_fast, show_progress=show_progress, progress_style=progress_style,
                          max_concurrent_items=max_concurrent_items, experiment_name=experiment_name,
                          experiments_dir=experiments_dir, resume=resume, **config)
    return await EvalRunner(dataset, grader, settings).run()
