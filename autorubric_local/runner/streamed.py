"""A stored run read a page at a time, for analyses that go over it item by item (issue 33).

:func:`~.results.load_result` builds a run's whole :class:`~.results.EvalResult`: every item's
parsed report and every submission, 4 GB for a run of 10^5 items. :func:`open_graded_run` gives
the same run as a :class:`StoredGradedRun` and a dataset whose items are sequences read from the
database when used, in keyset pages of ``items`` rows (:meth:`Store.item_pages
<autorubric_local.store.Store.item_pages>`):

- ``StoredGradedRun.item_results`` yields the same :class:`~.results.ItemResult` values as
  ``load_result``'s, in item order, each report parsed as it is reached and dropped after;
- the dataset's ``items`` (:class:`StoredItems`) hold one page of items and the position of
  every row (8 bytes an item); each item is checked against the run's rubric as it is read.

So a reader holds one page, whatever the size of the run; each pass over ``item_results``
reads and parses the reports again. :func:`~autorubric_local.metrics.compute_metrics` takes
the pair as it takes ``load_result``'s and gives the same metrics.
"""

from __future__ import annotations

import json
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import DATASET_FIELDS, DataItem, RubricDataset
from autorubric_local.runner.results import ITEM_COLUMNS, ItemResult, _open_run, dataset_header, stored_item
from autorubric_local.store import Store

__all__ = ["PAGE_SIZE", "StoredGradedRun", "StoredItemResults", "StoredItems", "graded_run", "open_graded_run"]

PAGE_SIZE = 500
"""Item rows read a query, by default."""


class StoredItems(Sequence[DataItem]):
    """The dataset items of a stored run, read a page at a time when used.

    Indexing by position (0-based, item order) reads the page that starts there unless the
    page held holds it, so reading in item order costs one query a page. Each item is built
    and checked as :meth:`RubricDataset.from_dict` does (``checked_against`` is the rubric it
    was checked against; a :class:`RubricDataset` with that rubric does not read it whole).

    Raises
    ------
    InputError
        On reading an item that no longer validates (the message names the run and item).
    """

    def __init__(self, store: Store, run_id: str, header: Mapping[str, Any], rubric: Rubric | None,
                 source: str, page_size: int = PAGE_SIZE) -> None:
        self.store, self.run_id, self.header, self.source = store, run_id, dict(header), source
        self.checked_against = rubric
        self.page_size = page_size
        self._indexes = array("q", (row[0] for row in store.db.execute(
            "select item_index from items where run_id = ? order by item_index", [run_id])))
        self._start = 0
        self._page: list[DataItem] = []

    def __len__(self) -> int:
        return len(self._indexes)

    @overload
    def __getitem__(self, index: int) -> DataItem: ...

    @overload
    def __getitem__(self, index: slice) -> list[DataItem]: ...

    def __getitem__(self, index: int | slice) -> DataItem | list[DataItem]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        position = range(len(self))[index]  # IndexError as a list gives it
        if not self._start <= position < self._start + len(self._page):
            self._read_page(position)
        return self._page[position - self._start]

    def __iter__(self) -> Iterator[DataItem]:
        return (self[position] for position in range(len(self)))

    def position_of(self, item_index: int) -> int:
        """The position of the row whose ``item_index`` is ``item_index``."""
        return bisect_left(self._indexes, item_index)

    def _read_page(self, position: int) -> None:
        rows = list(self.store.db["items"].rows_where(
            "run_id = ? and item_index >= ?", [self.run_id, self._indexes[position]],
            select=", ".join(ITEM_COLUMNS), order_by="item_index", limit=self.page_size))
        where = [f"item {position + k}" for k in range(len(rows))]
        checked = RubricDataset._build(self.header, [stored_item(row) for row in rows], where, self.source, None,
                                       allowed=DATASET_FIELDS)
        self._start, self._page = position, list(checked.items)


class StoredItemResults(Sequence[ItemResult]):
    """The graded items of a stored run as :class:`~.results.ItemResult`, in item order, each
    report parsed when reached (a page of rows at a time; see the module docstring)."""

    def __init__(self, store: Store, run_id: str, items: StoredItems, page_size: int = PAGE_SIZE) -> None:
        self.store, self.run_id, self.items, self.page_size = store, run_id, items, page_size
        self._count = int(store.db.execute(
            "select count(*) from items where run_id = ? and report_json is not null", [run_id]).fetchone()[0])

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> ItemResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[ItemResult]: ...

    def __getitem__(self, index: int | slice) -> ItemResult | list[ItemResult]:
        if isinstance(index, slice):
            wanted = range(len(self))[index]
            return [self[k] for k in wanted]
        offset = range(len(self))[index]  # IndexError as a list gives it
        rows = list(self.store.db["items"].rows_where(
            "run_id = ? and report_json is not null", [self.run_id],
            select="item_index, item_id, engine_seconds, report_json", order_by="item_index", limit=1, offset=offset))
        return self._result(rows[0])

    def __iter__(self) -> Iterator[ItemResult]:
        for page in self.store.graded_item_pages(self.run_id, self.page_size):
            for row in page:
                yield self._result(row)

    def _result(self, row: Mapping[str, Any]) -> ItemResult:
        position = self.items.position_of(row["item_index"])
        return ItemResult(
            item_idx=position,
            item=self.items[position],
            report=EnsembleEvaluationReport.model_validate_json(row["report_json"]),
            duration_seconds=float(row.get("engine_seconds") or 0.0),
            item_id=row["item_id"],
        )


@dataclass(frozen=True)
class StoredGradedRun:
    """A stored run as metrics read it (:class:`~autorubric_local.metrics.types.GradedRun`),
    its items streamed from the database (module docstring); the names of
    :class:`~.results.EvalResult`'s fields it shares."""

    item_results: StoredItemResults
    grader_settings: dict[str, Any] | None
    experiment_name: str
    run_id: str
    db_path: str
    status: str


def graded_run(store: Store, run: Mapping[str, Any], db_path: str, *,
               page_size: int | None = None) -> tuple[StoredGradedRun, RubricDataset]:
    """``run`` (a ``runs`` row) of the open ``store`` as a streamed run and its dataset; both read
    the store when used, so it must stay open while they are. ``page_size``: item rows a query
    (default :data:`PAGE_SIZE`).

    Raises
    ------
    InputError
        ``page_size`` < 1, or a stored dataset header that no longer validates.
    """
    page_size = PAGE_SIZE if page_size is None else page_size
    if page_size < 1:
        raise InputError(f"page_size must be >= 1, got {page_size}")
    source = f"{db_path}: run {run['name']!r}"
    header = dataset_header(run)
    shell = RubricDataset.from_dict({**header, "items": []}, source=source)
    items = StoredItems(store, run["id"], header, shell.rubric, source, page_size)
    dataset = RubricDataset(prompt=shell.prompt, rubric=shell.rubric, items=items,  # type: ignore[arg-type]
                            name=shell.name, reference_submission=shell.reference_submission,
                            metadata=shell.metadata)
    result = StoredGradedRun(
        item_results=StoredItemResults(store, run["id"], items, page_size),
        grader_settings=json.loads(run["grader_json"]) if run.get("grader_json") else None,
        experiment_name=run["name"], run_id=run["id"], db_path=db_path, status=run["status"],
    )
    return result, dataset


@contextmanager
def open_graded_run(db_path: str | Path, run: str | None = None, *,
                    page_size: int | None = None) -> Iterator[tuple[StoredGradedRun, RubricDataset]]:
    """The stored run ``run`` (name or id; default the latest) as :func:`graded_run` gives it,
    with the database open for the ``with`` block.

    Example::

        with open_graded_run("results.sqlite", "essays-v1") as (result, dataset):
            metrics = compute_metrics(result, dataset)

    Raises
    ------
    InputError
        No database at ``db_path``, no such run, or stored rows that no longer validate.
    """
    store, row, path = _open_run(db_path, run)
    try:
        yield graded_run(store, row, str(path), page_size=page_size)
    finally:
        store.close()
