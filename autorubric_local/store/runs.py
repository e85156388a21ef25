"""Runs, items and judgments: writes and reads of a grading run (tables in :mod:`.schema`).

Writes take finished records (plain dicts whose keys are column names); this module knows
nothing of grading. Every write is one ``BEGIN IMMEDIATE`` transaction
(:func:`~.transaction.write_transaction`), so a crash loses at most the batch in flight and never
leaves half of one, and writers in several processes wait for each other instead of failing.

Run leases (``run_leases``, see :mod:`.leases`): a writer acquires a run's lease before it
writes the run, renews it with every committed batch (and from a heartbeat thread of its own),
and gives it back when the run ends; every check-and-set happens under the write lock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

import sqlite_utils
from sqlite_utils.db import jsonify_if_needed

from autorubric_local.core.errors import RunLockedError
from autorubric_local.store.leases import (
    DEFAULT_LEASE_TIMEOUT_SECONDS,
    RUN_LEASES,
    LeaseHolder,
    LeaseOwner,
    Takeover,
)
from autorubric_local.store.jobs import JOB_STATUSES, RUNS, JobRows
from autorubric_local.store.provenance import package_version, timestamped_id, utc_now
from autorubric_local.store.transaction import write_transaction

RUN_STATUSES = JOB_STATUSES
"""Values of ``runs.status``."""


class RunTables(JobRows):
    """Runs, their items and judgments (part of :class:`autorubric_local.store.Store`)."""

    db: sqlite_utils.Database

    # ------------------------------------------------------------------------------ runs

    def start_run(
        self,
        *,
        name: str | None,
        judges: Sequence[dict[str, Any]],
        grader: dict[str, Any],
        rubric: Any,
        data_path: str | None,
        content_hash: str | None = None,
        dataset: dict[str, Any] | None = None,
        items: Sequence[dict[str, Any]] = (),
        lease: LeaseOwner | None = None,
        unique_name: bool = False,
    ) -> str:
        """Insert a run row (status ``running``) and return its id (``run-<utc>-<hex>``).

        ``items`` are planned item rows (see :meth:`plan_items`) and ``lease`` the writer that
        takes the new run's lease, all in the same transaction, so a checkpointed run never
        exists without its plan or, while it is written, without its lease.

        Parameters
        ----------
        name : str or None
            The run's name (None: its id); several runs may share one, the latest is found by it.
        judges : sequence of dict
            The run's ``judges_json``: per judge its id, model and engine record.
        grader : dict
            The grader's settings (``CriterionGrader.describe()``), stored as ``grader_json``.
        rubric : JSON-able
            The dataset's rubric, stored as ``rubric_json``.
        data_path : str or None
            Where the dataset was read from (recorded, never reopened).
        content_hash : str, optional
            The hash of what a resume must find unchanged (dataset, rubric, grader settings).
        dataset : dict, optional
            The dataset's header (prompt, name, metadata), stored as ``dataset_json``.
        items : sequence of dict, default ()
            Planned item rows, inserted with the run.
        lease : LeaseOwner, optional
            The writer that takes the new run's lease in the same transaction.
        unique_name : bool, default False
            Refuse the insert when a run named ``name`` already exists.

        Returns
        -------
        str
            The new run's id.

        Raises
        ------
        RunLockedError
            ``unique_name`` and a run named ``name`` exists: another writer started it since
            the caller looked (the message names that writer when its lease is live).
        """
        run_id = timestamped_id("run")
        with write_transaction(self.db):
            if unique_name and name is not None:
                taken = self.find_run(name)
                if taken is not None:
                    holder = self.lease_holder(taken["id"])
                    if holder is not None:
                        raise RunLockedError(_locked_message(taken, holder, None))
                    raise RunLockedError(
                        f"run {name!r} ({taken['id']}) was started by another process while this one was "
                        "opening it; run again to resume it"
                    )
            self.db["runs"].insert(
                {
                    "id": run_id,
                    "name": name or run_id,
                    "started_utc": utc_now(),
                    "finished_utc": None,
                    "status": "running",
                    "judges_json": json.dumps(list(judges)),
                    "grader_json": json.dumps(grader),
                    "rubric_json": json.dumps(rubric),
                    "data_path": data_path,
                    "package_version": package_version(),
                    "content_hash": content_hash,
                    "dataset_json": None if dataset is None else json.dumps(dataset),
                    "total_items": len(items) if items else None,
                    "wall_seconds": 0.0,
                }
            )
            if lease is not None:
                RUN_LEASES.write(self.db, run_id, lease)
            self._upsert_items(run_id, items)
        return run_id

    def plan_items(self, run_id: str, items: Sequence[dict[str, Any]]) -> None:
        """Insert or refresh planned item rows in one transaction; stored reports are kept.

        Each row has ``item_id``, ``item_index``, ``submission``, ``query``,
        ``reference_submission``, ``item_json``, ``ground_truth_json`` and ``item_hash``.
        """
        with write_transaction(self.db):
            self._upsert_items(run_id, items)

    def _upsert_items(self, run_id: str, items: Sequence[dict[str, Any]]) -> None:
        if items:  # rows are made as sqlite-utils takes them, a batch at a time
            self.db["items"].upsert_all(({"run_id": run_id, **row} for row in items), pk=("run_id", "item_id"))

    def find_run(self, run: str | None = None) -> dict[str, Any] | None:
        """The run whose id or name is ``run`` (the latest of that name), or the latest run."""
        return self._find_job(RUNS, run)

    def run_names(self) -> list[str]:
        """Names of the runs in the database, oldest first."""
        return [row["name"] for row in self.db["runs"].rows_where(order_by="started_utc, rowid")]

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Set columns of a run row (one transaction)."""
        with write_transaction(self.db):
            self.db["runs"].update(run_id, fields)

    def finish_run(
        self, run_id: str, status: str = "finished", *, wall_seconds: float = 0.0, lease: LeaseOwner | None = None
    ) -> bool:
        """Mark a run ``finished`` (or ``failed`` / ``interrupted``) with its end time.

        ``wall_seconds`` (this session's) is added to the run's total. With ``lease``, the
        writer's lease is released in the same transaction; a writer whose lease was taken over
        leaves the run to its new holder (nothing is written). Returns whether the run was marked.

        Raises
        ------
        InputError
            If ``status`` is not one of :data:`RUN_STATUSES`.
        """
        return self._finish_job(RUNS, run_id, status, wall_seconds, lease)

    # ---------------------------------------------------------------------------- leases

    def acquire_run_lease(
        self, run_id: str, owner: LeaseOwner, *, timeout_seconds: float = DEFAULT_LEASE_TIMEOUT_SECONDS
    ) -> Takeover | None:
        """Take the lease of ``run_id`` for ``owner`` (compare-and-set under the write lock).

        A free lease, or one ``owner`` holds already, is taken at once. A stale lease (heartbeat
        older than ``timeout_seconds``, or a holder on this host whose process has ended) is
        taken over, and returned as a :class:`~.leases.Takeover` for the caller to report.

        Raises
        ------
        RunLockedError
            Another writer holds a live lease; names the run, its pid, host and last heartbeat.
        """
        def refusal(holder: LeaseHolder) -> RunLockedError:
            run = self.find_run(run_id) or {"id": run_id, "name": run_id}
            return RunLockedError(_locked_message(run, holder, timeout_seconds))

        return self._take_job_lease(RUNS, run_id, owner, timeout_seconds, refusal)

    def renew_run_lease(self, run_id: str, owner: LeaseOwner) -> bool:
        """Set the heartbeat of ``owner``'s lease to now; ``False`` if ``owner`` no longer holds it."""
        return self._renew_job_lease(RUNS, run_id, owner)

    def release_run_lease(self, run_id: str, owner: LeaseOwner) -> bool:
        """Give back ``owner``'s lease of ``run_id``; ``False`` if it did not hold it."""
        return self._release_job_lease(RUNS, run_id, owner)

    def lease_holder(self, run_id: str) -> LeaseHolder | None:
        """The current lease of ``run_id`` (live or stale), or ``None`` when nobody holds it."""
        return RUN_LEASES.holder(self.db, run_id)

    # ----------------------------------------------------------------------------- items

    def record_items(
        self,
        run_id: str,
        items: Sequence[dict[str, Any]],
        judgments: Sequence[dict[str, Any]],
        *,
        lease: LeaseOwner | None = None,
        priors: Sequence[dict[str, Any]] = (),
        prompts: Sequence[dict[str, Any]] = (),
        criteria: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Write item rows and their judgment rows in one transaction.

        Rows are finished records (see :mod:`autorubric_local.graders.records`) without
        ``run_id``. Recording an item again replaces its row and every judgment it had, so a
        re-graded item never keeps stale judgments. With ``lease``, the same transaction renews
        that writer's heartbeat, and writes nothing if the writer no longer holds the lease.
        ``priors`` are ``contextual_priors`` rows (without ``run_id``) the judgments refer to,
        inserted or replaced by ``prior_id`` in the same transaction. ``prompts`` are
        ``prompt_texts`` rows (``id``, ``text``; content-addressed, so a known id is left as
        it is) and ``criteria`` the items' ``item_criteria`` rows (without ``run_id``),
        replacing the items' old ones.

        Raises
        ------
        RunLockedError
            ``lease`` was given and another writer has taken the run's lease over.
        """
        item_ids = [row["item_id"] for row in items]
        with write_transaction(self.db):
            if lease is not None and not RUN_LEASES.touch(self.db, run_id, lease):
                raise RunLockedError(self._lost_message(run_id, lease))
            for begin in range(0, len(item_ids), 500):
                part = item_ids[begin : begin + 500]
                for table in ("judgments", "item_criteria"):
                    self.db.execute(
                        f"delete from {table} where run_id = ? and item_id in ({', '.join('?' * len(part))})",
                        [run_id, *part],
                    )
            if prompts:
                self.db["prompt_texts"].insert_all(prompts, pk="id", ignore=True)
            self.db["items"].upsert_all([{"run_id": run_id, **row} for row in items], pk=("run_id", "item_id"))
            _replace_rows(self.db, "judgments", run_id, judgments)
            _replace_rows(self.db, "item_criteria", run_id, criteria)
            if priors:
                self.db["contextual_priors"].upsert_all([{"run_id": run_id, **row} for row in priors],
                                                        pk=("run_id", "prior_id"))

    def item_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Item rows of a run, in item order."""
        return list(self.db["items"].rows_where("run_id = ?", [run_id], order_by="item_index"))

    def graded_item_pages(self, run_id: str, page_size: int = 500) -> Iterator[list[dict[str, Any]]]:
        """The run's graded items (``item_index``, ``item_id``, ``engine_seconds``,
        ``report_json``) in item order, a page at a time (:meth:`item_pages`)."""
        return self.item_pages(run_id, ("item_index", "item_id", "engine_seconds", "report_json"), page_size,
                               graded_only=True)

    def item_pages(
        self, run_id: str, columns: Sequence[str], page_size: int = 500, *, graded_only: bool = False,
        item_ids: Sequence[str] | None = None, after: int = -1,
    ) -> Iterator[list[dict[str, Any]]]:
        """The run's item rows in item order, ``page_size`` rows a query: the one paged reader
        of a stored run's items, under every other (whole results, streamed results, the flat
        rows of ``show`` and ``export``, reports, resume checks).

        Parameters
        ----------
        run_id : str
            The run.
        columns : sequence of str
            The ``items`` columns to read (``item_index``, the page key, always comes first).
        page_size : int, default 500
            Rows a query, so that a reader holds one page at a time.
        graded_only : bool, default False
            Only items with a stored report.
        item_ids : sequence of str, optional
            Only these items (bound as one JSON parameter, so any number of ids).
        after : int, default -1
            Only items whose ``item_index`` is greater (start a page at an item).

        Yields
        ------
        list of dict
            Pages of rows (keyset pages on the ``(run_id, item_index)`` index: no ``OFFSET``
            scan, whatever the run's size).
        """
        select = ", ".join(dict.fromkeys(("item_index", *columns)))  # the page key, then the rest
        where = "run_id = ? and item_index > ?" + (" and report_json is not null" if graded_only else "")
        wanted: list[Any] = []
        if item_ids is not None:
            where += " and item_id in (select value from json_each(?))"
            wanted = [json.dumps(list(item_ids))]
        last = after
        while True:
            page = list(self.db["items"].rows_where(
                where, [run_id, last, *wanted], select=select, order_by="item_index", limit=page_size))
            if not page:
                return
            yield page
            last = page[-1]["item_index"]

    def done_item_ids(self, run_id: str) -> set[str]:
        """Ids of the run's items graded successfully (a stored report without ``error``).

        Items that failed at run time are not done: a resumed run grades them again (their
        old judgment rows are replaced, never duplicated).
        """
        rows = self.db.execute(
            "select item_id from items where run_id = ? and report_json is not null"
            " and json_extract(report_json, '$.error') is null",
            [run_id],
        ).fetchall()
        return {row[0] for row in rows}

    def judgments(self, run_id: str) -> list[dict[str, Any]]:
        """Judgment rows of a run, ordered by item, criterion, judge and permutation."""
        return list(
            self.db["judgments"].rows_where(
                "run_id = ?",
                [run_id],
                order_by="item_id, criterion_index, judge_id, permutation_index",
            )
        )

    def judgment_prompt(
        self, run_id: str, item_id: str, criterion_index: int, judge_id: str, permutation_index: int = 0
    ) -> str | None:
        """The exact prompt text one judgment was answered on, as the model read it (prefix +
        suffix from ``prompt_texts``, the untrusted-span markers removed), or None when the
        judgment does not exist or was recorded before prompts were stored (migration 11)."""
        row = self.db.execute(
            "select prompt from judgment_prompts where run_id = ? and item_id = ? and criterion_index = ?"
            " and judge_id = ? and permutation_index = ?",
            [run_id, item_id, criterion_index, judge_id, permutation_index],
        ).fetchone()
        return None if row is None else row[0]

    def criterion_results(self, run_id: str) -> list[dict[str, Any]]:
        """Rows of the ``criterion_results`` view for one run, by item index and criterion."""
        return list(self.db["criterion_results"].rows_where("run_id = ?", [run_id],
                                                            order_by="item_index, criterion_index"))

    def run_summaries(self) -> list[dict[str, Any]]:
        """Rows of the ``run_summaries`` view, newest run first."""
        return list(self.db["run_summaries"].rows_where(order_by="started_utc desc, run_id desc"))

    def contextual_priors(self, run_id: str) -> list[dict[str, Any]]:
        """The run's ``contextual_priors`` rows (contextual calibration), by judge and prior id."""
        return list(self.db["contextual_priors"].rows_where("run_id = ?", [run_id], order_by="judge_id, prior_id"))

    def judgment_count(self, run_id: str) -> int:
        """Number of judgment rows of a run."""
        return int(self.db.execute("select count(*) from judgments where run_id = ?", [run_id]).fetchone()[0])

    def _lost_message(self, run_id: str, lease: LeaseOwner) -> str:
        run = self.find_run(run_id) or {"name": run_id}
        holder = self.lease_holder(run_id)
        now_held = "nobody holds it now" if holder is None else f"it is held by {holder.describe()}"
        return (
            f"run {run['name']!r} ({run_id}): this writer (pid {lease.pid} on host {lease.host}) lost the run's lease "
            f"({now_held}), most likely after missing heartbeats for longer than the lease timeout; "
            "its last chunk was not committed"
        )


def _locked_message(run: dict[str, Any], holder: LeaseHolder, timeout_seconds: float | None) -> str:
    """Why a second writer is refused: the run, and who holds its lease since when."""
    after = "" if timeout_seconds is None else f" older than {timeout_seconds:g} s"
    return (
        f"run {run['name']!r} ({run['id']}) is being graded by another process: {holder.describe()}. "
        f"Wait for it to finish, or grade under another run name (--run / experiment_name); its lease is "
        f"taken over once its heartbeat is{after or ' stale'} or its process has ended"
    )


_PLAIN = frozenset((str, int, float, bytes, type(None)))


def _replace_rows(db: sqlite_utils.Database, table: str, run_id: str, rows: Sequence[dict[str, Any]]) -> None:
    """``INSERT OR REPLACE`` ``rows`` (each with ``run_id`` added) into the existing ``table``, as
    sqlite-utils' ``insert_all(..., replace=True)`` writes them (columns: the union of the rows'
    keys, first seen first, a missing key NULL; a dict, list or tuple as JSON), in one
    ``executemany``: its per-chunk query building and per-value conversion were most of a
    batch's write time (issue 33 profile). Values are gathered with C-level ``map`` and a row is
    converted value by value only when one of its values is not a plain SQLite type."""
    if not rows:
        return
    keys = dict.fromkeys(chain.from_iterable(rows))  # a dict iterates its keys: the union, first seen first
    keys.pop("run_id", None)
    tail = list(keys)
    names = ", ".join(f"[{name}]" for name in ["run_id", *tail])
    sql = f"INSERT OR REPLACE INTO [{table}] ({names}) VALUES ({', '.join('?' * (len(tail) + 1))})"
    params = []
    for row in rows:
        values = [row.get("run_id", run_id), *map(row.get, tail)]
        if not _PLAIN.issuperset(map(type, values)):
            values = [value if type(value) in _PLAIN else jsonify_if_needed(value) for value in values]
        params.append(values)
    db.conn.executemany(sql, params)
