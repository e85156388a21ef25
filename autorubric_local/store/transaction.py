"""Write transactions that are safe with several processes on one database file.

Every write of the store goes through :func:`write_transaction`, which starts with
``BEGIN IMMEDIATE``: the write lock is taken before the first read, so a transaction never
reads a snapshot that another writer then invalidates (SQLite answers such an upgrade with
``SQLITE_BUSY`` at once, without waiting). A writer that finds the lock held waits up to the
connection's ``busy_timeout`` (set by :func:`~.schema.open_db`), then fails with
``sqlite3.OperationalError: database is locked``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import sqlite_utils

DEFAULT_BUSY_TIMEOUT_SECONDS = 30.0
"""How long a connection waits for another process's write lock before failing."""


def set_busy_timeout(db: sqlite_utils.Database, seconds: float) -> None:
    """Make ``db`` wait up to ``seconds`` for a lock held by another connection."""
    db.execute(f"PRAGMA busy_timeout = {max(0, round(seconds * 1000))}")


def busy_timeout_seconds(db: sqlite_utils.Database) -> float:
    """The connection's busy timeout, in seconds."""
    return float(db.execute("PRAGMA busy_timeout").fetchone()[0]) / 1000.0


@contextmanager
def write_transaction(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """One transaction holding the database's write lock from its first statement.

    Commits when the block ends, rolls back when it raises. Inside an open transaction it
    nests as a savepoint (:meth:`sqlite_utils.Database.atomic`).

    Raises
    ------
    sqlite3.OperationalError
        ``database is locked`` when another writer holds the lock past the busy timeout.
    """
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    try:
        db.conn.execute("COMMIT")
    except sqlite3.Error:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise


WRITE_FAILURES: tuple[str, ...] = ("database or disk is full", "disk i/o error", "attempt to write a readonly database")
"""SQLite's messages for a write the storage refused (SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY)."""


def is_write_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite refusing a write for lack of space or access (:data:`WRITE_FAILURES`),
    not a bug or a lock."""
    return isinstance(exc, sqlite3.OperationalError) and any(text in str(exc).lower() for text in WRITE_FAILURES)
