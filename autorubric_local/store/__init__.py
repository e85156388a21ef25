"""The results store: one SQLite file per project of runs, sweeps and metrics (sqlite-utils).

This package owns the whole schema (:mod:`.schema`, one numbered sequence of migrations) and
the read/write API, :class:`Store`. It imports no grading logic: callers hand it finished
records (plain dicts keyed by column), built by :mod:`autorubric_local.graders.records` and
:mod:`autorubric_local.bias.records`.

Several processes may share one file: connections wait for each other's locks (busy
timeout), every write is a ``BEGIN IMMEDIATE`` transaction (:mod:`.transaction`), and a run
has one writer at a time, the holder of its lease (:mod:`.leases`; acquire, renew and release
on :class:`Store`). Which writer takes a lease and when is the caller's decision (the runner).

Example
-------
>>> store = Store.open(":memory:")
>>> run_id = store.start_run(name="demo", judges=[], grader={}, rubric=None, data_path=None)
>>> store.find_run("demo")["status"]
'running'
"""

from __future__ import annotations

from pathlib import Path

import sqlite_utils

from autorubric_local.store.calibrations import CalibrationTables
from autorubric_local.store.indeterminacy import IndeterminacyTables
from autorubric_local.store.labels import LabelTables
from autorubric_local.store.metrics import MetricsTables
from autorubric_local.store.runs import RUN_STATUSES, RunTables
from autorubric_local.store.schema import MIGRATIONS, SCHEMA_VERSION, open_db, open_db_read_only
from autorubric_local.store.sweeps import SweepTables

__all__ = ["MIGRATIONS", "RUN_STATUSES", "SCHEMA_VERSION", "Store", "open_db"]


class Store(RunTables, SweepTables, MetricsTables, CalibrationTables, IndeterminacyTables, LabelTables):
    """Reads and writes runs, items, judgments, run leases, sweeps, metrics, threshold
    calibrations, indeterminacy analyses, human labels and label selections in one database.

    Parameters
    ----------
    db : sqlite_utils.Database
        From :func:`open_db` (schema up to date).
    """

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db

    @classmethod
    def open(cls, path: str | Path) -> Store:
        """Open (creating and migrating if needed) the database at ``path``.

        Raises
        ------
        InputError
            If the file is not an SQLite database; SchemaVersionError (an InputError) if a newer
            version wrote it.
        """
        return cls(open_db(path))

    @classmethod
    def open_read_only(cls, path: str | Path) -> Store:
        """Open the existing database at ``path`` for reading
        (:func:`~.schema.open_db_read_only`: a read-only file, folder or mount is read without
        writing anything to it).

        Raises
        ------
        InputError
            As :func:`~.schema.open_db_read_only`.
        """
        return cls(open_db_read_only(path))

    def close(self) -> None:
        """Close the connection."""
        self.db.close()
