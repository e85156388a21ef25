"""Results of an evaluation run, and the one reader of them from the run's database.

Source: AutoRubric's README (github.com/delip/autorubric), "Batch Evaluation with EvalRunner" ("EvalResult
Fields", "Timing Statistics"). Extensions: ``judgments_per_second`` and p50 latency in
:class:`EvalTimingStats`; ``total_judgments``, ``resumed_items`` and ``status`` in
:class:`EvalResult`. Rates are per wall-clock second of the run, summed over the sessions of a
resumed run; per-item durations are the engine's own time (its judgments' seconds).

Reading a stored run: every reader goes through :meth:`Store.item_pages
<autorubric_local.store.Store.item_pages>`, keyset pages of ``items`` rows.

- :func:`open_graded_run` / :func:`graded_run` give a run as a :class:`StoredGradedRun` and a
  dataset whose items are sequences read from the database when used (issue 33):
  ``StoredGradedRun.item_results`` yields :class:`ItemResult` values in item order, each report
  parsed as it is reached and dropped after; the dataset's ``items`` (:class:`StoredItems`) hold
  one page of items and the position of every row (8 bytes an item), each item checked against
  the run's rubric as it is read. A reader holds one page, whatever the size of the run (a
  whole :class:`EvalResult` of 10^5 items is 4 GB); each pass over ``item_results`` reads the
  reports again. :func:`~autorubric_local.metrics.compute_metrics` takes the pair as it takes
  ``load_result``'s and gives the same metrics.
- :func:`load_result` (and :func:`result_from_store`, which the runner uses for its own result)
  is that reader read to the end: the whole result and its dataset, every planned item included,
  so a resumed run and an uninterrupted one are assembled by the same code from the same rows.
- :func:`load_manifest` reads the items' hashes and graded flags, not their reports.

The flat rows of ``show``, ``export`` and reports (:mod:`.inspection`) and a just-finished run's
handle (:class:`~.stored.StoredRun`) page through the same reader.
"""

from __future__ import annotations

import json
import math
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, overload

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import EnsembleEvaluationReport, TokenUsage
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.usage import aggregate_completion_cost, aggregate_token_usage
from autorubric_local.data.dataset import DATASET_FIELDS, DataItem, RubricDataset
from autorubric_local.store import Store


@dataclass(frozen=True)
class ItemResult:
    """The result of grading one dataset item.

    Attributes
    ----------
    item_idx : int
        Index of the item in the dataset.
    item : DataItem
    report : EnsembleEvaluationReport
        The item's report; a failed item has ``report.score is None`` and ``report.error`` set.
    duration_seconds : float
        The item's share of engine time: the sum of its judgments' engine seconds.
    error : str or None
        Why grading the item failed (AutoRubric's field): ``report.error`` unless given; None
        when it was graded.
    item_id : str
        The item's id (``DataItem.id``, or ``"item-<idx>"``).
    """

    item_idx: int
    item: DataItem
    report: EnsembleEvaluationReport
    duration_seconds: float
    error: str | None = None
    item_id: str = ""

    def __post_init__(self) -> None:
        if self.error is None and self.report.error is not None:
            object.__setattr__(self, "error", self.report.error)  # frozen: set once, while built


@dataclass(frozen=True)
class EvalTimingStats:
    """Timing of a run (seconds; rates per wall-clock second of the run).

    ``judgments_per_second`` is this package's (0.0 when not given, as AutoRubric builds the
    stats without it)."""

    total_duration_seconds: float
    mean_item_duration_seconds: float
    min_item_duration_seconds: float
    max_item_duration_seconds: float
    p50_item_duration_seconds: float
    p95_item_duration_seconds: float
    items_per_second: float
    judgments_per_second: float = 0.0


@dataclass
class EvalResult:
    """Everything a run produced (spec: "EvalResult Fields").

    ``errors`` lists ``(item_idx, error_message)`` of the failed items.
    """

    item_results: list[ItemResult]
    total_items: int
    successful_items: int
    failed_items: int
    total_token_usage: TokenUsage | None
    total_completion_cost: float | None
    timing_stats: EvalTimingStats
    started_at: datetime
    completed_at: datetime
    errors: list[tuple[int, str]] = field(default_factory=list)
    experiment_name: str | None = None
    experiment_dir: Path | None = None
    """The run's experiment folder (``<experiments_dir>/<experiment_name>``, holding
    ``results.sqlite``), as AutoRubric has it; None for a database given as ``db_path`` under
    another file name, or in memory."""
    run_id: str | None = None
    db_path: str | None = None
    total_judgments: int = 0
    resumed_items: int = 0
    status: str | None = None
    grader_settings: dict[str, Any] | None = None
    """The grader's description as stored with the run (``CriterionGrader.describe()`` plus its
    scoring settings ``normalize``, ``cannot_assess_config``, ``length_penalty``); metrics
    score the ground truth with the same scoring settings."""

    @classmethod
    def from_experiment(cls, path: str | Path, run: str | None = None) -> EvalResult:
        """Load a stored run: ``path`` is an experiment folder (``<dir>/<name>``, holding
        ``results.sqlite``) or a database file; ``run`` a run name or id (default: the latest).

        Raises
        ------
        InputError
            No such database or run.
        """
        return load_result(path, run)[0]

    def compute_metrics(self, dataset: RubricDataset, **kwargs: Any) -> Any:
        """Agreement with the dataset's ground truth: :func:`autorubric_local.metrics.compute_metrics`."""
        from autorubric_local.metrics import compute_metrics

        return compute_metrics(self, dataset, **kwargs)


@dataclass(frozen=True, kw_only=True)
class ExperimentManifest:
    """What a stored run is: name, id, where, its content hash and how far it got.

    AutoRubric's fields, from the stored run (:func:`load_manifest`): ``created_at`` and
    ``started_at`` (its start), ``completed_at`` (its end; None while unfinished),
    ``dataset_name``, ``dataset_path`` (the file it was read from, when known), ``dataset_hash``
    (``sha256:`` of the canonical JSON of its items' content hashes, scheme
    ``autorubric-local/dataset``; None for runs stored before items had hashes),
    ``completed_indices`` (the graded items' indices), ``total_duration_seconds`` (wall time,
    summed over sessions), ``grader_config`` (the stored grader description). ``status`` is this
    package's (``"running"``, ``"finished"``, ...), not AutoRubric's ``"completed"``;
    ``error`` and ``eval_config`` are not stored and stay None.
    This package's: ``run_id``, ``db_path``, ``content_hash``, ``started_utc``,
    ``finished_utc`` (ISO strings) and ``completed_items`` (``len(completed_indices)``).
    """

    experiment_name: str
    total_items: int
    status: str
    created_at: datetime | None = None
    dataset_name: str | None = None
    dataset_hash: str | None = None
    completed_indices: frozenset[int] = frozenset()
    error: str | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    total_duration_seconds: float | None = None
    dataset_path: str | None = None
    grader_config: dict[str, Any] | None = None
    eval_config: dict[str, Any] | None = None
    run_id: str | None = None
    db_path: str | None = None
    content_hash: str | None = None
    started_utc: str | None = None
    finished_utc: str | None = None
    completed_items: int = 0


def resolve_db_path(path: str | Path) -> Path:
    """A database file, or ``<folder>/results.sqlite`` for an experiment folder.

    Raises
    ------
    InputError
        Neither exists.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "results.sqlite"
    if not path.is_file():
        raise InputError(f"{path}: no results database here")
    return path


def _open_run(db_path: str | Path, run: str | None) -> tuple[Store, dict[str, Any], Path]:
    path = resolve_db_path(db_path)
    store = Store.open_read_only(path)
    row = store.find_run(run)
    if row is None:
        names = ", ".join(repr(n) for n in store.run_names()) or "none"
        what = f"no run named {run!r}" if run is not None else "no runs"
        store.close()
        raise InputError(f"{path}: {what} (runs: {names})")
    return store, row, path


def load_result(db_path: str | Path, run: str | None = None) -> tuple[EvalResult, RubricDataset]:
    """The stored run ``run`` (name or id; default the latest) as a result and its dataset.

    ``item_results[i].item_idx`` indexes the returned dataset, which holds every planned item
    (with the ground truth last stored), including items an interrupted run did not reach.
    The whole run is read into memory (every item and report: 4 GB for 10^5 items); for a
    large run, :func:`open_graded_run` reads it a page at a time and gives the same metrics.
    The database is opened read-only (:meth:`Store.open_read_only
    <autorubric_local.store.Store.open_read_only>`) and closed before returning.

    Parameters
    ----------
    db_path : str or Path
        A results database file, or an experiment folder holding ``results.sqlite``
        (:func:`resolve_db_path`).
    run : str, optional
        A run id, or a run name (the latest run of that name). Default: the latest run.

    Returns
    -------
    (EvalResult, RubricDataset)
        The result: ``item_results`` (one :class:`ItemResult` per graded item, failed ones
        included, in item order), token and cost totals (USD; 0.0 for local judges only,
        ``None`` when a hosted call's price is unknown), :class:`EvalTimingStats` (seconds),
        ``run_id``, ``status``, ``grader_settings``. The dataset: its prompt, rubric and all
        ``total_items`` planned items.

    Raises
    ------
    InputError
        No database at ``db_path``; the file is not an SQLite database, was written by a newer
        version (``SchemaVersionError``, an ``InputError``), or is read-only here and needs a
        migration; no such run (the message lists the run names); or stored rows that no
        longer validate (named by run and item).
    sqlite3.OperationalError
        SQLite cannot open the file at all.
    """
    store, row, path = _open_run(db_path, run)
    try:
        return result_from_store(store, row, str(path))
    finally:
        store.close()


def dataset_hash(item_hashes: Sequence[str]) -> str:
    """``ExperimentManifest.dataset_hash``: the hash of the run's items' content hashes, in order."""
    from autorubric_local.runner.checkpoint import canonical_hash

    return canonical_hash({"scheme": "autorubric-local/dataset", "items": list(item_hashes)})


def experiment_dir(db_path: str | None) -> Path | None:
    """The experiment folder of a database at ``<folder>/results.sqlite``; None otherwise."""
    if db_path is None or db_path == ":memory:":
        return None
    path = Path(db_path)
    return path.parent if path.name == "results.sqlite" else None


def load_manifest(db_path: str | Path, run: str | None = None) -> ExperimentManifest:
    """Summary of a stored run, without its reports (AutoRubric's ``ExperimentManifest``).

    Reads the run's row and, per item, only its content hash and whether it was graded, a page
    at a time, so it is cheap on a run of any size. The database is opened read-only and
    closed before returning.

    Parameters
    ----------
    db_path : str or Path
        A results database file, or an experiment folder holding ``results.sqlite``.
    run : str, optional
        A run id, or a run name (the latest run of that name). Default: the latest run.

    Returns
    -------
    ExperimentManifest
        Name, id, status, start and end (``datetime`` in UTC, and the ISO strings),
        ``total_duration_seconds`` (wall-clock seconds, summed over sessions; ``None`` until
        recorded), the dataset's name, path and ``dataset_hash``, ``completed_indices`` (the
        0-based indices of the items with a stored report, failed ones included),
        ``total_items`` and ``completed_items``; see :class:`ExperimentManifest`.

    Raises
    ------
    InputError
        No database at ``db_path``; the file is not an SQLite database, was written by a newer
        version, or is read-only here and needs a migration; or no such run (the message lists
        the run names).
    sqlite3.OperationalError
        SQLite cannot open the file at all.
    """
    store, row, path = _open_run(db_path, run)
    try:
        items = [item for page in store.item_pages(row["id"], ("item_hash", "report_json is not null as graded"))
                 for item in page]
        done = frozenset(index for index, item in enumerate(items) if item["graded"])
        hashes = [item.get("item_hash") for item in items]
        started = _parse_utc(row["started_utc"])
        header = dataset_header(row)
        return ExperimentManifest(
            experiment_name=row["name"],
            created_at=started,
            dataset_name=header.get("name"),
            dataset_hash=None if not hashes or None in hashes else dataset_hash(hashes),
            completed_indices=done,
            started_at=started,
            completed_at=_parse_utc(row["finished_utc"]) if row.get("finished_utc") else None,
            total_duration_seconds=float(row["wall_seconds"]) if row.get("wall_seconds") is not None else None,
            dataset_path=row.get("data_path"),
            grader_config=json.loads(row["grader_json"]) if row.get("grader_json") else None,
            run_id=row["id"],
            db_path=str(path),
            status=row["status"],
            content_hash=row.get("content_hash"),
            started_utc=row["started_utc"],
            finished_utc=row["finished_utc"],
            total_items=row.get("total_items") or len(items),
            completed_items=len(done),
        )
    finally:
        store.close()


def _total_cost(run: Mapping[str, Any], results: Sequence[ItemResult]) -> float | None:
    """USD over the items: 0.0 for a run of local judges only (not priced; also for runs stored
    before reports carried 0.0), so AutoRubric's ``f"${cost:.4f}"`` formats; the reports' sum, or
    None when unknown, once a judge is hosted."""
    cost = aggregate_completion_cost(r.report.completion_cost for r in results)
    hosted = any(judge.get("backend") == "hosted" for judge in json.loads(run.get("judges_json") or "[]"))
    return cost if cost is not None or hosted else 0.0


def result_from_store(store: Store, run: Mapping[str, Any], db_path: str) -> tuple[EvalResult, RubricDataset]:
    """The whole result and dataset of ``run`` (a ``runs`` row of the open ``store``).

    It is :func:`graded_run`'s paged reader read to the end (each page of items checked against
    the run's rubric as it is read, then held), so a whole result and a streamed one are built
    by the same code from the same rows; the runner builds its own result this way too.

    Raises
    ------
    InputError
        A stored dataset header or item that no longer validates (named by run and item).
    """
    streamed, dataset = graded_run(store, run, db_path)
    items = dataset.items
    assert isinstance(items, StoredItems)  # graded_run's
    dataset.items = items.read_whole()
    results = list(streamed.item_results)
    judgments = store.judgment_count(run["id"])
    wall = float(run.get("wall_seconds") or 0.0)
    failed = [(r.item_idx, r.report.error) for r in results if r.report.error is not None]
    result = EvalResult(
        item_results=results,
        total_items=run.get("total_items") or len(items),
        successful_items=len(results) - len(failed),
        failed_items=len(failed),
        total_token_usage=aggregate_token_usage(r.report.token_usage for r in results),
        total_completion_cost=_total_cost(run, results),
        timing_stats=timing_stats([r.duration_seconds for r in results], wall, judgments),
        started_at=_parse_utc(run["started_utc"]),
        completed_at=_parse_utc(run["finished_utc"]) if run.get("finished_utc") else datetime.now(UTC),
        errors=[(index, message) for index, message in failed if message is not None],
        experiment_name=run["name"],
        experiment_dir=experiment_dir(db_path),
        run_id=run["id"],
        db_path=db_path,
        total_judgments=judgments,
        status=run["status"],
        grader_settings=streamed.grader_settings,
    )
    return result, dataset


ITEM_COLUMNS: tuple[str, ...] = ("item_id", "submission", "query", "reference_submission", "item_json",
                                 "ground_truth_json")
"""The ``items`` columns :func:`stored_item` reads."""


def dataset_header(run: Mapping[str, Any]) -> dict[str, Any]:
    """The dataset's JSON object without its items, as stored with the run (older runs: the rubric)."""
    header: dict[str, Any] = json.loads(run["dataset_json"]) if run.get("dataset_json") else {
        "rubric": json.loads(run["rubric_json"]) if run.get("rubric_json") else None
    }
    return header


def stored_item(row: Mapping[str, Any]) -> dict[str, Any]:
    """One item's JSON object from its ``items`` row (:data:`ITEM_COLUMNS`), with the ground truth last stored."""
    if row.get("item_json"):
        item = json.loads(row["item_json"])
    else:
        item = {"id": row["item_id"], "submission": row["submission"], "prompt": row["query"],
                "reference_submission": row["reference_submission"]}
        item = {key: value for key, value in item.items() if value is not None}
    item["ground_truth"] = json.loads(row["ground_truth_json"]) if row.get("ground_truth_json") else None
    return item


def _parse_utc(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation (numpy's default); 0.0 if empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def timing_stats(durations: Sequence[float], wall_seconds: float, judgments: int) -> EvalTimingStats:
    """Timing of a run from per-item engine seconds and the run's wall-clock seconds.

    Rates are per wall second (0.0 when no time was measured).
    """
    count = len(durations)
    return EvalTimingStats(
        total_duration_seconds=wall_seconds,
        mean_item_duration_seconds=math.fsum(durations) / count if count else 0.0,
        min_item_duration_seconds=min(durations, default=0.0),
        max_item_duration_seconds=max(durations, default=0.0),
        p50_item_duration_seconds=percentile(durations, 50),
        p95_item_duration_seconds=percentile(durations, 95),
        items_per_second=count / wall_seconds if wall_seconds > 0 else 0.0,
        judgments_per_second=judgments / wall_seconds if wall_seconds > 0 else 0.0,
    )


# ---- reading a stored run a page at a time ---------------------------------------------------

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

    def read_whole(self) -> list[DataItem]:
        """Every item, in order, read a page at a time; then held, so that reading any item
        again (the run's :class:`StoredItemResults`) costs no query. Returns the list held."""
        whole: list[DataItem] = []
        for position in range(0, len(self), self.page_size):
            self._read_page(position)
            whole.extend(self._page)
        self._start, self._page = 0, whole
        return whole

    def _read_page(self, position: int) -> None:
        rows = next(self.store.item_pages(self.run_id, ITEM_COLUMNS, self.page_size,
                                          after=self._indexes[position] - 1), [])
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
