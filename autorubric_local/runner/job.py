"""The lease life cycle that grade runs (:class:`~.runner.EvalRunner`) and position-bias sweeps
(:func:`autorubric_local.bias.stored.run_stored_sweep`) share, written once.

A resumable job has one writer at a time, the holder of its lease (:mod:`autorubric_local.store.leases`;
runs in ``run_leases``, sweeps in ``sweep_leases``: a :class:`JobLease` says which). A stored job
is claimed (:func:`claim_job`: lease taken, content checked) before any judge loads, so a locked
or changed job loads nothing; :func:`leased` keeps the lease fresh with a :class:`LeaseHeartbeat`
while the judges load and the chunks are committed, and gives it back at the end; after the
judges loaded, :func:`renew_after_load` refuses a writer that lost the lease meanwhile, before
it changes anything.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Self, TypeVar

from autorubric_local.core.errors import DatabaseWriteError, RunLockedError
from autorubric_local.runner.config import MEMORY_DB, EvalConfig
from autorubric_local.store import Store
from autorubric_local.store.jobs import RUNS, SWEEPS, JobKind, find_job, stored_job_id
from autorubric_local.store.leases import LeaseOwner, Takeover
from autorubric_local.store.transaction import is_write_failure

__all__ = ["RUN_LEASE", "SWEEP_LEASE", "Job", "JobLease", "LeaseHeartbeat", "claim_job", "database_write_error",
           "drive_job", "first_handbacks", "leased", "mark_end", "open_or_remove", "probe_lease", "renew_after_load"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
LoadedT = TypeVar("LoadedT")
ResultT = TypeVar("ResultT")
DoneT = TypeVar("DoneT")
ResultT_co = TypeVar("ResultT_co", covariant=True)


@dataclass(frozen=True)
class JobLease:
    """How one kind of job takes, renews and gives back its lease in a :class:`~autorubric_local.store.Store`.

    Attributes
    ----------
    noun : str
        What holds the lease, in messages (``"run"``, ``"sweep"``).
    kind : JobKind
        The job's table and lease table in the store.
    acquire : callable
        ``(store, job_id, owner, timeout_seconds) -> Takeover | None``; raises
        :class:`RunLockedError` while another live writer holds the lease.
    renew, release : callable
        ``(store, job_id, owner) -> bool``; False when ``owner`` does not hold the lease.
    """

    noun: str
    kind: JobKind
    acquire: Callable[[Store, str, LeaseOwner, float], Takeover | None]
    renew: Callable[[Store, str, LeaseOwner], bool]
    release: Callable[[Store, str, LeaseOwner], bool]


RUN_LEASE = JobLease(
    "run", RUNS, lambda store, job_id, owner, timeout: store.acquire_run_lease(job_id, owner, timeout_seconds=timeout),
    lambda store, job_id, owner: store.renew_run_lease(job_id, owner),
    lambda store, job_id, owner: store.release_run_lease(job_id, owner),
)
"""A grade run's lease (``run_leases``)."""

SWEEP_LEASE = JobLease(
    "sweep", SWEEPS, lambda store, job_id, owner, timeout: store.acquire_sweep_lease(job_id, owner, timeout_seconds=timeout),
    lambda store, job_id, owner: store.renew_sweep_lease(job_id, owner),
    lambda store, job_id, owner: store.release_sweep_lease(job_id, owner),
)
"""A position-bias sweep's lease (``sweep_leases``)."""


class Job(Protocol[LoadedT, DoneT, ResultT_co]):
    """What one resumable job (a grade run, a sweep) supplies to :func:`drive_job`: how it loads
    its judges, starts its row, checks a stored row, reopens it, does its work, and reads its
    result once its lease is given back."""

    def load(self) -> LoadedT:
        """Load the judges (engines, Ray actors); called once, before a new job's row is written
        or after a stored job was claimed."""
        ...

    def start(self, store: Store, loaded: LoadedT, owner: LeaseOwner) -> str:
        """Write a new job's row holding ``owner``'s lease; its id."""
        ...

    def check(self, store: Store, job_id: str) -> None:
        """Under the lease, before anything loads: raise (``InputError``, naming what changed)
        unless the stored job can be resumed with this content."""
        ...

    def reopen(self, store: Store, job_id: str, loaded: LoadedT) -> int:
        """Mark the claimed job running again with its judges as loaded now; how much of it is
        already stored (items of a run, rotations of a sweep)."""
        ...

    def work(self, store: Store, job_id: str, loaded: LoadedT, owner: LeaseOwner, resumed: int) -> DoneT:
        """Judge and commit what is pending (each chunk in a transaction that renews ``owner``'s
        lease) and mark the job's end; what it returns goes to :meth:`result`."""
        ...

    def result(self, store: Store, job_id: str, done: DoneT, resumed: int) -> ResultT_co:
        """The caller's result, read after the lease heartbeat has stopped (so no beat can find
        the lease the job's end gave back and warn that it was lost)."""
        ...


def drive_job(job: Job[LoadedT, DoneT, ResultT], lease: JobLease, name: str, path: str | Path,
              config: EvalConfig) -> ResultT:
    """Open the job ``name`` in the database at ``path`` and run it under its lease.

    With ``config.resume`` and a stored job of that name, the job is claimed (:func:`claim_job`,
    ``job.check``) before ``job.load``, so a locked or changed job loads nothing; the lease is
    renewed while the judges load, and :func:`renew_after_load` refuses a writer that lost it
    meanwhile, before ``job.reopen`` changes anything. Otherwise the judges load first (a new
    row names the loaded models; a missing model is refused before a database is created) and
    ``job.start`` writes the row. ``job.work`` runs inside :func:`leased` (heartbeat, lease
    given back at the end); ``job.result`` after it.

    Returns
    -------
    What ``job.result`` returns.

    Raises
    ------
    RunLockedError
        Another live writer holds the job's lease, or took it over from this one.
    Exception
        Whatever ``job.check``, ``job.load`` or ``job.work`` raise.
    """
    existing = stored_job_id(path, lease.kind, name) if config.resume else None
    fresh = (job.load(),) if existing is None else None
    if str(path) != MEMORY_DB:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    owner = LeaseOwner.for_this_process()
    store = open_or_remove(path, f"{lease.noun} {name!r}")
    try:
        if fresh is not None:
            (loaded,) = fresh
            job_id = job.start(store, loaded, owner)
            with leased(store, lease, path, job_id, owner, config.lease_heartbeat_seconds):
                done = job.work(store, job_id, loaded, owner, 0)
            return job.result(store, job_id, done, 0)
        assert existing is not None
        stored_id = existing
        claim_job(store, lease, name, stored_id, owner, config.lease_timeout_seconds,
                  lambda: job.check(store, stored_id))
        with leased(store, lease, path, stored_id, owner, config.lease_heartbeat_seconds):
            loaded = job.load()
            renew_after_load(store, lease, name, stored_id, owner)
            resumed = job.reopen(store, stored_id, loaded)
            done = job.work(store, stored_id, loaded, owner, resumed)
        return job.result(store, stored_id, done, resumed)
    finally:
        store.close()


def open_or_remove(path: str | Path, job: str) -> Store:
    """The store at ``path`` (:meth:`~autorubric_local.store.Store.open`, creating it if needed).

    When SQLite cannot write a file this call created (a disk already full, an I/O error), the
    half-made file and its ``-wal``/``-shm``/``-journal`` files are removed, so nothing is left
    that a later command would take for a results database.

    Raises
    ------
    DatabaseWriteError
        SQLite refused to create or migrate the file (:func:`~autorubric_local.store.transaction.is_write_failure`);
        the message names ``job`` and says that nothing was written.
    """
    created = str(path) != MEMORY_DB and not Path(path).exists()
    try:
        return Store.open(path)
    except sqlite3.OperationalError as exc:
        if not is_write_failure(exc):
            raise
        if created:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        left = "the half-made file was removed" if created else "the file is as it was"
        raise DatabaseWriteError(f"{job}: the results database {path} could not be written ({exc}); nothing was "
                                 f"graded and {left}. Free space (or make the folder writable) and run the same "
                                 "command again") from None


def probe_lease(path: str | Path, lease: JobLease, name: str, config: EvalConfig) -> None:
    """Refuse, before any judge loads, the stored job ``name`` at ``path`` while another live
    writer holds its lease: the lease is taken (a stale one taken over, as :func:`claim_job`
    does) and given back at once, so the refusal is the one :func:`drive_job` would give after
    loading. A new job, ``config.resume`` off, or an in-memory database: nothing to check.

    Raises
    ------
    RunLockedError
        Another live writer holds the job's lease (the message names its pid, host and heartbeat).
    """
    existing = stored_job_id(path, lease.kind, name) if config.resume else None
    if existing is None:
        return
    owner = LeaseOwner.for_this_process()
    store = Store.open(path)
    try:
        lease.acquire(store, existing, owner, config.lease_timeout_seconds)
        lease.release(store, existing, owner)
    finally:
        store.close()


def claim_job(store: Store, lease: JobLease, name: str, job_id: str, owner: LeaseOwner, timeout_seconds: float,
              check: Callable[[], None]) -> None:
    """Take the lease of the stored job ``job_id`` for ``owner`` (a stale one is taken over, with a
    warning in the log) and run ``check`` under it; the lease is given back if ``check`` raises.

    Raises
    ------
    RunLockedError
        Another live writer holds the job's lease.
    Exception
        Whatever ``check`` raises (an :class:`~autorubric_local.core.errors.InputError` naming
        what changed, for a job whose content differs).
    """
    takeover = lease.acquire(store, job_id, owner, timeout_seconds)
    if takeover is not None:
        logger.warning("%s %r (%s): taking over a stale lease from pid %d on host %s: %s", lease.noun, name, job_id,
                       takeover.previous.pid, takeover.previous.host, takeover.reason)
    try:
        check()
    except BaseException:
        lease.release(store, job_id, owner)
        raise


def renew_after_load(store: Store, lease: JobLease, name: str, job_id: str, owner: LeaseOwner) -> None:
    """Renew the claimed job's lease once its judges have loaded.

    Raises
    ------
    RunLockedError
        ``owner`` lost the lease while the judges loaded (the caller has changed nothing yet).
    """
    if not lease.renew(store, job_id, owner):
        raise RunLockedError(f"{lease.noun} {name!r} ({job_id}): this writer (pid {owner.pid} on host {owner.host}) "
                             f"lost the {lease.noun}'s lease while its judges loaded; nothing was changed")


def first_handbacks(handed: Iterable[tuple[int, T]], job: str) -> Iterator[tuple[int, T]]:
    """Each ``(chunk index, result)`` of an executor the first time its index comes. A chunk
    handed back again (an executor's bug: committing it again would rewrite its rows and count
    its items twice) is dropped with a warning naming ``job`` (e.g. ``"run 'x'"``). Closing this
    iterator closes ``handed``."""
    seen: set[int] = set()
    try:
        for index, result in handed:
            if index in seen:
                logger.warning("%s: chunk %d was handed back twice; kept the first", job, index)
                continue
            seen.add(index)
            yield index, result
    finally:
        close = getattr(handed, "close", None)
        if close is not None:
            close()


def database_write_error(exc: sqlite3.OperationalError, job: str, kept: str) -> DatabaseWriteError:
    """The :class:`DatabaseWriteError` a job raises when SQLite refused its write (``exc``, a
    :func:`~autorubric_local.store.transaction.is_write_failure`): ``job`` names it, ``kept``
    says what was committed before."""
    return DatabaseWriteError(f"{job}: the results database could not be written ({exc}) after {kept}; they are "
                              "kept. Free space (or make the file writable) and run the same command again to resume")


def mark_end(finish: Callable[[], None], job: str, status: str) -> None:
    """Run ``finish`` (the job's last write: its status, its lease given back); when the storage
    still refuses writes, log it and leave the job as it is (its lease runs out)."""
    try:
        finish()
    except sqlite3.OperationalError as exc:
        if not is_write_failure(exc):
            raise
        logger.warning("%s: could not mark it %s (%s); its lease runs out after the lease timeout", job, status, exc)


@contextmanager
def leased(store: Store, lease: JobLease, path: str | Path, job_id: str, owner: LeaseOwner,
           heartbeat_seconds: float) -> Iterator[None]:
    """Hold ``owner``'s lease of ``job_id`` for the ``with`` block: a :class:`LeaseHeartbeat`
    renews it, and it is given back at the end (a no-op when the job's last write already did)."""
    try:
        with LeaseHeartbeat(path, job_id, owner, heartbeat_seconds, lease):
            yield
    finally:  # on a full disk the job's own error says what happened; the lease then runs out
        mark_end(lambda: lease.release(store, job_id, owner), f"{lease.noun} {job_id}", "given back")


class LeaseHeartbeat:
    """Renews a job's lease every ``interval_seconds`` from a daemon thread, while in its ``with``
    block, so a chunk that takes longer than the lease timeout does not make the job look
    abandoned. The thread has its own connection; an in-memory database needs no heartbeat (no
    other process can see it).

    Parameters
    ----------
    path : str or Path
        The job's database.
    job_id : str
    owner : LeaseOwner
    interval_seconds : float
    lease : JobLease, default RUN_LEASE
        Which kind of job (a run's lease, or :data:`SWEEP_LEASE`).
    """

    def __init__(self, path: str | Path, job_id: str, owner: LeaseOwner, interval_seconds: float,
                 lease: JobLease = RUN_LEASE) -> None:
        self.path = path
        self.job_id = job_id
        self.owner = owner
        self.interval_seconds = interval_seconds
        self.lease = lease
        self.beats = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        if str(self.path) != MEMORY_DB:
            self._thread = threading.Thread(target=self._run, name=f"lease-heartbeat-{self.job_id}", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        what = self.lease.noun
        try:
            store = Store.open(self.path)
        except sqlite3.Error as exc:
            logger.warning("%s %s: lease heartbeat could not open %s: %s", what, self.job_id, self.path, exc)
            return
        try:
            while not self._stop.wait(self.interval_seconds):
                try:
                    held = self.lease.renew(store, self.job_id, self.owner)
                except sqlite3.OperationalError as exc:  # locked past the busy timeout: try again next beat
                    logger.warning("%s %s: lease heartbeat failed: %s", what, self.job_id, exc)
                    continue
                if not held:
                    if _still_running(store, self.lease.kind, self.job_id):  # else its own end gave it back
                        logger.warning("%s %s: this process no longer holds the %s's lease", what, self.job_id, what)
                    return
                self.beats += 1
        finally:
            store.close()


def _still_running(store: Store, kind: JobKind, job_id: str) -> bool:
    """Whether the job ``job_id`` is still marked running: a lease that cannot be renewed then was
    taken by another writer; otherwise the job's end (which gives its lease back in the same
    transaction) came first and nothing was lost."""
    row = find_job(store.db, kind, job_id)
    return row is not None and row.get("status") == "running"
