"""Run leases: which process is writing a run, and whether that process is still alive.

A run has at most one writer. The writer holds the run's lease, a row of ``run_leases``
(migration 5, :mod:`.schema`), and renews its heartbeat while it works; a second writer is
refused while the lease is live. A lease is *stale*, and may be taken over, when its heartbeat
is older than the lease timeout, or when its holder ran on this host and its process no longer
exists (killed, crashed, or a zombie waiting to be reaped). The SQL lives in
:class:`~.runs.RunTables` (``acquire_run_lease``, ``renew_run_lease``, ``release_run_lease``);
this module holds the values and the liveness rule.

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
