"""Run leases: which process is writing a run, and whether that process is still alive.

A run has at most one writer. The writer holds the run's lease, a row of ``run_leases``
(migration 5, :mod:`.schema`), and renews its heartbeat while it works; a second writer is
refused while the lease is live. A lease is *stale*, and may be taken over, when its heartbeat
is older than the lease timeout, or when its holder ran on this host and its process no longer
exists (killed, crashed, or a zombie waiting to be reaped). Sweeps have the same leases in
``sweep_leases`` (migration 12). :class:`LeaseTable` holds the SQL of one lease table, run
inside the caller's transaction; :class:`~.runs.RunTables` (``acquire_run_lease``,
``renew_run_lease``, ``release_run_lease``) and :class:`~.sweeps.SweepTables` wrap it. This
module also holds the values and the liveness rule.

Heartbeats are compared with this host's clock: across hosts sharing one file, clocks should
agree to well within the lease timeout.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from autorubric_local.store.provenance import utc_now

DEFAULT_LEASE_TIMEOUT_SECONDS = 60.0
"""A lease whose heartbeat is older than this is stale."""


@dataclass(frozen=True)
class LeaseOwner:
    """One writer: ``owner`` is ``<host>:<pid>:<random hex>``, unique per writer (two runners
    in one process have different owners)."""

    owner: str
    pid: int
    host: str

    @classmethod
    def for_this_process(cls) -> LeaseOwner:
        """A new owner for a writer in this process."""
        host, pid = socket.gethostname(), os.getpid()
        return cls(f"{host}:{pid}:{secrets.token_hex(8)}", pid, host)


@dataclass(frozen=True)
class LeaseHolder:
    """A stored lease: its owner, where that process runs, and when it was taken and renewed."""

    run_id: str
    owner: str
    pid: int
    host: str
    acquired_utc: str
    heartbeat_utc: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> LeaseHolder:
        """The holder of a ``run_leases`` row."""
        return cls(row["run_id"], row["owner"], int(row["pid"]), row["host"], row["acquired_utc"],
                   row["heartbeat_utc"])

    def heartbeat_age_seconds(self, now: datetime | None = None) -> float:
        """Seconds since the last heartbeat (negative if the holder's clock is ahead)."""
        return ((now or datetime.now(UTC)) - datetime.fromisoformat(self.heartbeat_utc)).total_seconds()

    def stale_reason(self, timeout_seconds: float, now: datetime | None = None) -> str | None:
        """Why the lease may be taken over, or ``None`` while it is live."""
        age = self.heartbeat_age_seconds(now)
        if age > timeout_seconds:
            return f"its last heartbeat is {age:.0f} s old (timeout {timeout_seconds:g} s)"
        if self.host == socket.gethostname() and not pid_alive(self.pid):
            return f"its process {self.pid} on this host has ended"
        return None

    def describe(self, now: datetime | None = None) -> str:
        """``pid 123 on host h, last heartbeat <utc> (4 s ago)``."""
        return (f"pid {self.pid} on host {self.host}, last heartbeat {self.heartbeat_utc} "
                f"({self.heartbeat_age_seconds(now):.0f} s ago)")


@dataclass(frozen=True)
class Takeover:
    """A stale lease that a writer took over: its former holder and why it was stale."""

    previous: LeaseHolder
    reason: str


@dataclass(frozen=True)
class LeaseTable:
    """The SQL of one lease table (``run_leases`` keyed by ``run_id``, ``sweep_leases`` by
    ``sweep_id``): each method runs inside the caller's write transaction."""

    table: str
    key: str

    def holder(self, db: sqlite_utils.Database, key: str) -> LeaseHolder | None:
        """The lease of ``key`` (live or stale), or None when nobody holds it."""
        rows = list(db[self.table].rows_where(f"{self.key} = ?", [key]))
        return LeaseHolder.from_row({**rows[0], "run_id": key}) if rows else None

    def take(
        self, db: sqlite_utils.Database, key: str, owner: LeaseOwner, timeout_seconds: float, refusal: Any
    ) -> Takeover | None:
        """Give ``owner`` the lease of ``key``: at once when it is free or ``owner``'s, by
        takeover when it is stale (returned); ``refusal(holder)`` is raised when it is live."""
        holder = self.holder(db, key)
        takeover = None
        if holder is not None and holder.owner != owner.owner:
            reason = holder.stale_reason(timeout_seconds)
            if reason is None:
                raise refusal(holder)
            takeover = Takeover(holder, reason)
        self.write(db, key, owner)
        return takeover

    def write(self, db: sqlite_utils.Database, key: str, owner: LeaseOwner) -> None:
        """Set ``owner`` as the holder of ``key``'s lease, acquired and renewed now."""
        now = utc_now()
        db[self.table].upsert({self.key: key, "owner": owner.owner, "pid": owner.pid, "host": owner.host,
                               "acquired_utc": now, "heartbeat_utc": now}, pk=self.key)

    def touch(self, db: sqlite_utils.Database, key: str, owner: LeaseOwner) -> bool:
        """Renew ``owner``'s heartbeat; False when ``owner`` does not hold the lease."""
        cursor = db.execute(f"update {self.table} set heartbeat_utc = ? where {self.key} = ? and owner = ?",
                            [utc_now(), key, owner.owner])
        return cursor.rowcount == 1

    def delete(self, db: sqlite_utils.Database, key: str, owner: LeaseOwner) -> bool:
        """Drop ``owner``'s lease of ``key``; False when ``owner`` did not hold it."""
        cursor = db.execute(f"delete from {self.table} where {self.key} = ? and owner = ?", [key, owner.owner])
        return cursor.rowcount == 1


RUN_LEASES = LeaseTable("run_leases", "run_id")
SWEEP_LEASES = LeaseTable("sweep_leases", "sweep_id")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host and is not a zombie.

    ``os.kill(pid, 0)`` sends no signal; it fails with ``ESRCH`` when there is no such process.
    A killed child that its parent has not reaped yet still exists, as a zombie; on Linux its
    state in ``/proc/<pid>/stat`` is ``Z`` and it counts as ended.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    # The command name (field 2) is in parentheses and may contain spaces; the state follows it.
    return stat[stat.rfind(")") + 1 :].split()[:1] == ["Z"]
