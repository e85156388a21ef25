"""A run as it lies in its database, read back page by page instead of whole.

:meth:`EvalRunner.run_to_store <autorubric_local.runner.runner.EvalRunner.run_to_store>` returns
a :class:`StoredRun`; :meth:`StoredRun.result` builds the whole
:class:`~autorubric_local.runner.results.EvalResult` (every item and report in memory, as
:meth:`~autorubric_local.runner.runner.EvalRunner.run_sync` returns), while
:meth:`StoredRun.graded` yields one item's report at a time, so a caller that only prints or
counts (``autorubric-local grade``) holds one page of reports, whatever the run's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.runner.config import MEMORY_DB
from autorubric_local.runner.results import PAGE_SIZE, EvalResult, result_from_store
from autorubric_local.store import Store


@dataclass(frozen=True)
class GradedReport:
    """One graded item of a stored run: its id, engine seconds and report."""

    item_id: str
    engine_seconds: float
    report: EnsembleEvaluationReport


@dataclass(frozen=True)
class StoredRun:
    """Where a run's results are.

    Attributes
    ----------
    db_path : str
        The database file (``":memory:"`` for an in-memory run, whose result is then kept in
        ``in_memory``: the database goes with the runner's connection).
    run_id, name : str
        The run's id and name.
    resumed_items : int
        Items already graded when this runner started (read from the checkpoint).
    wall_seconds : float
        The run's wall-clock seconds as stored.
    total_judgments : int
        Judgment rows of the run.
    in_memory : EvalResult or None
        The built result of an in-memory run; None for a run in a file.
    """

    db_path: str
    run_id: str
    name: str
    resumed_items: int
    wall_seconds: float
    total_judgments: int
    in_memory: EvalResult | None = None

    @classmethod
    def read(cls, store: Store, run_id: str, db_path: str, resumed_items: int) -> StoredRun:
        """The :class:`StoredRun` of ``run_id`` in the open ``store`` (built whole for ``":memory:"``).

        Raises
        ------
        KeyError
            No run ``run_id`` in ``store`` (a bug: callers pass a run they just wrote).
        """
        row = store.find_run(run_id)
        if row is None:
            raise KeyError(f"{db_path}: no run {run_id}")
        in_memory = result_from_store(store, row, db_path)[0] if db_path == MEMORY_DB else None
        return cls(db_path, run_id, row["name"], resumed_items, float(row.get("wall_seconds") or 0.0),
                   store.judgment_count(run_id), in_memory)

    def result(self) -> EvalResult:
        """The whole result (every item's report in memory), with ``resumed_items`` set."""
        if self.in_memory is not None:
            return replace(self.in_memory, resumed_items=self.resumed_items)
        store = Store.open_read_only(self.db_path)
        try:
            row = store.find_run(self.run_id)
            if row is None:
                raise KeyError(f"{self.db_path}: no run {self.run_id}")
            result, _ = result_from_store(store, row, self.db_path)
        finally:
            store.close()
        return replace(result, resumed_items=self.resumed_items)

    def graded(self, page_size: int = PAGE_SIZE) -> Iterator[GradedReport]:
        """Every graded item's report, in item order, read ``page_size`` items a query."""
        if self.in_memory is not None:
            for item in self.in_memory.item_results:
                yield GradedReport(item.item_id, item.duration_seconds, item.report)
            return
        store = Store.open_read_only(self.db_path)
        try:
            for page in store.graded_item_pages(self.run_id, page_size):
                for row in page:
                    yield GradedReport(row["item_id"], float(row.get("engine_seconds") or 0.0),
                                       EnsembleEvaluationReport.model_validate_json(row["report_json"]))
        finally:
            store.close()
