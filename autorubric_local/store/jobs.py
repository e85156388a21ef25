"""What grade runs and position-bias sweeps share in the store, written once: a job row's end
(:meth:`JobRows._finish_job`), finding one by id or name, and its lease (take, renew, give back,
read: :mod:`.leases`). :mod:`.runs` and :mod:`.sweeps` keep their own names and messages and
call these with their :class:`JobKind`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from autorubric_local.core.errors import InputError, RunLockedError
from autorubric_local.store.leases import RUN_LEASES, SWEEP_LEASES, LeaseHolder, LeaseOwner, LeaseTable, Takeover
from autorubric_local.store.provenance import utc_now
from autorubric_local.store.schema import open_db
from autorubric_local.store.transaction import write_transaction

JOB_STATUSES: tuple[str, ...] = ("running", "finished", "failed", "interrupted")
"""Values of ``runs.status`` and ``sweeps.status``."""


@dataclass(frozen=True)
class JobKind:
    """A kind of resumable job in the store: its table and its lease table."""

    table: str
    leases: LeaseTable


RUNS = JobKind("runs", RUN_LEASES)
SWEEPS = JobKind("sweeps", SWEEP_LEASES)


def find_job(db: sqlite_utils.Database, kind: JobKind, key: str | None) -> dict[str, Any] | None:
    """The job whose id or name is ``key`` (the latest of that name; ``None``: the latest)."""
    where, args = ("id = ? or name = ?", [key, key]) if key is not None else (None, [])
    rows = db[kind.table].rows_where(where, args, order_by="started_utc desc, rowid desc", limit=1)
    return next(iter(rows), None)


def stored_job_id(path: str | Path, kind: JobKind, name: str) -> str | None:
    """The id of the job named ``name`` in the database at ``path``, read without creating one:
    None for ``":memory:"``, a file that does not exist, or no such job."""
    if str(path) == ":memory:" or not Path(path).is_file():
        return None
    db = open_db(path)
    try:
        found = find_job(db, kind, name)
    finally:
        db.close()
    return None if found is None else str(found["id"])


class JobRows:
    """The shared half of :class:`~.runs.RunTables` and :class:`~.sweeps.SweepTables`."""

    db: sqlite_utils.Database

    def _find_job(self, kind: JobKind, key: str | None) -> dict[str, Any] | None:
        """:func:`find_job` in this database."""
        return find_job(self.db, kind, key)

    def _finish_job(self, kind: JobKind, job_id: str, status: str, wall_seconds: float,
                    lease: LeaseOwner | None) -> bool:
        """Mark a job ``status`` with its end time, adding ``wall_seconds``; with ``lease``, give
        the lease back in the same transaction, writing nothing when ``lease`` no longer holds it.

        Raises
        ------
        InputError
            ``status`` is not one of :data:`JOB_STATUSES`.
        """
        if status not in JOB_STATUSES:
            raise InputError(f"status: expected one of {', '.join(JOB_STATUSES)}, got {status!r}")
        with write_transaction(self.db):
            if lease is not None and not kind.leases.delete(self.db, job_id, lease):
                return False
            self.db.execute(
                f"update {kind.table} set finished_utc = ?, status = ?, "
                "wall_seconds = coalesce(wall_seconds, 0) + ? where id = ?",
                [utc_now(), status, wall_seconds, job_id],
            )
        return True

    def _take_job_lease(self, kind: JobKind, job_id: str, owner: LeaseOwner, timeout_seconds: float,
                        refusal: Callable[[LeaseHolder], RunLockedError]) -> Takeover | None:
        with write_transaction(self.db):
            return kind.leases.take(self.db, job_id, owner, timeout_seconds, refusal)

    def _renew_job_lease(self, kind: JobKind, job_id: str, owner: LeaseOwner) -> bool:
        with write_transaction(self.db):
            return kind.leases.touch(self.db, job_id, owner)

    def _release_job_lease(self, kind: JobKind, job_id: str, owner: LeaseOwner) -> bool:
        with write_transaction(self.db):
            return kind.leases.delete(self.db, job_id, owner)
