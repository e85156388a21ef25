"""A stored run's results as flat rows, for ``show``, ``export`` and reports, read a page of
items at a time so that a reader of a 10^5-item run holds one page, never the whole run.

Three shapes, each a stream of pages (lists of plain dicts, JSON-able values), in item order:

- :func:`criterion_row_pages`: one row per item and criterion (the ``criterion_results`` view of
  migration 11: final verdict, ``probability`` of that verdict, ``passed``, ``contribution``,
  explanation, error). For runs recorded before migration 11 the same rows are rebuilt from
  the items' stored reports with the run's own scoring settings, so every run can be shown.
- :func:`judgment_row_pages`: one row per judgment (the ``judge_votes`` view): each judge's vote
  in each option order, its label probabilities, explanation and error.
- :func:`item_row_pages`: one row per item: score, error, the submission, and per criterion its
  verdict and contribution as columns ``verdict[<criterion>]`` / ``contribution[<criterion>]``;
  :func:`item_columns` names those columns up front (a writer's header).

:func:`criterion_rows`, :func:`judgment_rows` and :func:`item_rows` are the same rows as one list.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.types import CannotAssessConfig
from autorubric_local.graders.result_records import criterion_result_records
from autorubric_local.store import Store

__all__ = ["ITEM_COLUMNS", "PAGE_ITEMS", "criterion_columns", "criterion_row_pages", "criterion_rows", "item_columns",
           "item_row_pages", "item_rows", "judgment_columns", "judgment_row_pages", "judgment_rows",
           "shown_item_count", "storage_classes"]

PAGE_ITEMS = 500
"""Items a page: the rows of 500 items (their criteria or judgments) are read in one query."""

ITEM_COLUMNS = ("run_name", "item_index", "item_id", "score", "raw_score", "cannot_assess_count", "error",
                "submission")
"""The columns of an :func:`item_row_pages` row before its per-criterion columns."""

_WANTED = "item_id in (select value from json_each(?))"  # any number of ids in one bound parameter


def _item_ranges(store: Store, run_id: str, item_ids: Sequence[str] | None,
                 page_items: int | None) -> Iterator[tuple[int, int]]:
    """``(first, last)`` item indexes of consecutive pages of ``page_items`` (default
    :data:`PAGE_ITEMS`) items of the run (only ``item_ids`` when given), from the store's one
    paged reader of items (:meth:`Store.item_pages <autorubric_local.store.Store.item_pages>`)."""
    for page in store.item_pages(run_id, (), PAGE_ITEMS if page_items is None else page_items, item_ids=item_ids):
        yield page[0]["item_index"], page[-1]["item_index"]


def _page_query(store: Store, view: str, run_id: str, span: tuple[int, int], item_ids: Sequence[str] | None,
                order_by: str) -> list[dict[str, Any]]:
    where = "run_id = ? and item_index between ? and ?" + (f" and {_WANTED}" if item_ids is not None else "")
    params: list[Any] = [run_id, *span] + ([json.dumps(list(item_ids))] if item_ids is not None else [])
    return list(store.db.query(f"select * from {view} where {where} order by {order_by}", params))


def criterion_row_pages(store: Store, run: Mapping[str, Any], item_ids: Sequence[str] | None = None, *,
                        page_items: int | None = None) -> Iterator[list[dict[str, Any]]]:
    """The rows of :func:`criterion_rows`, ``page_items`` items a page (default
    :data:`PAGE_ITEMS`; pages without rows are skipped)."""
    rebuilt = _recorded_before_criteria(store, run["id"])
    for span in _item_ranges(store, run["id"], item_ids, page_items):
        rows = _criterion_page(store, run, span, item_ids, rebuilt)
        if rows:
            yield rows


def _criterion_page(store: Store, run: Mapping[str, Any], span: tuple[int, int], item_ids: Sequence[str] | None,
                    rebuilt: bool) -> list[dict[str, Any]]:
    if rebuilt:
        rows = _rebuilt_rows(store, run, span, item_ids)
    else:
        rows = _page_query(store, "criterion_results", run["id"], span, item_ids, "item_index, criterion_index")
    for row in rows:
        probabilities = json.loads(row.get("label_probabilities_json") or "{}")
        row["probability"] = probabilities.get(row["verdict"]) if row["verdict"] is not None else None
    return rows


def criterion_rows(store: Store, run: Mapping[str, Any], item_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per item and criterion of ``run`` (a ``runs`` row), by item index and criterion;
    only ``item_ids`` when given. Items still pending have none.

    Columns: those of the ``criterion_results`` view (:data:`autorubric_local.store.schema.VIEWS`)
    plus ``probability``, the final verdict's share of the ensemble's label distribution (None
    when the verdict is missing or the judge gave no distribution).
    """
    return list(chain.from_iterable(criterion_row_pages(store, run, item_ids)))


def _recorded_before_criteria(store: Store, run_id: str) -> bool:
    """The run has reports but no ``item_criteria`` rows (recorded before migration 11)."""
    has = "select exists(select 1 from {} where run_id = ?{})"
    return not store.db.execute(has.format("item_criteria", ""), [run_id]).fetchone()[0] and bool(
        store.db.execute(has.format("items", " and report_json is not null"), [run_id]).fetchone()[0])


def shown_item_count(store: Store, run: Mapping[str, Any], item_ids: Sequence[str] | None = None) -> int:
    """How many items :func:`criterion_row_pages` gives rows for (only ``item_ids`` when given)."""
    table = "items" if _recorded_before_criteria(store, run["id"]) else "item_criteria"
    done = " and report_json is not null" if table == "items" else ""
    where = f"run_id = ?{done}" + (f" and {_WANTED}" if item_ids is not None else "")
    params: list[Any] = [run["id"]] + ([json.dumps(list(item_ids))] if item_ids is not None else [])
    return int(store.db.execute(f"select count(distinct item_id) from {table} where {where}", params).fetchone()[0])


_RECORD_COLUMNS = ("item_id", "criterion_index", "criterion_name", "requirement", "weight", "scale_type")
_SCORE_COLUMNS = ("selected_index", "score_value", "is_na", "passed", "contribution", "agreement",
                  "label_probabilities_json")


def _rebuilt_rows(store: Store, run: Mapping[str, Any], span: tuple[int, int],
                  item_ids: Sequence[str] | None) -> list[dict[str, Any]]:
    """``criterion_results`` rows of items ``span`` of a run recorded before migration 11, from
    their reports."""
    grader = json.loads(run.get("grader_json") or "{}")
    cannot_assess = CannotAssessConfig.model_validate(grader.get("cannot_assess_config") or {})
    rows: list[dict[str, Any]] = []
    for item in _page_query(store, "items", run["id"], span, item_ids, "item_index"):
        if item.get("report_json") is None:
            continue
        report = EnsembleEvaluationReport.model_validate_json(item["report_json"])
        for record in criterion_result_records([report], [item["item_id"]], cannot_assess):
            rows.append({
                "run_name": run["name"], "run_id": run["id"], "item_index": item["item_index"],
                **{column: record[column] for column in _RECORD_COLUMNS},
                "verdict": record["verdict"] if record["verdict"] is not None else record["selected_label"],
                **{column: record[column] for column in _SCORE_COLUMNS},
                "explanation": record["final_reason"], "error": record["error"], "item_score": item["score"],
            })
    return rows


def judgment_row_pages(store: Store, run_id: str, item_ids: Sequence[str] | None = None, *,
                       page_items: int | None = None) -> Iterator[list[dict[str, Any]]]:
    """The rows of :func:`judgment_rows`, ``page_items`` items a page (default
    :data:`PAGE_ITEMS`; pages without rows are skipped)."""
    for span in _item_ranges(store, run_id, item_ids, page_items):
        rows = _page_query(store, "judge_votes", run_id, span, item_ids,
                           "item_index, criterion_index, judge_id, permutation_index")
        if rows:
            yield rows


def judgment_rows(store: Store, run_id: str, item_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per judgment of the run (the ``judge_votes`` view), by item index, criterion,
    judge and option order; only ``item_ids`` when given."""
    return list(chain.from_iterable(judgment_row_pages(store, run_id, item_ids)))


def _view_columns(store: Store, view: str) -> list[str]:
    return [column[0] for column in store.db.execute(f"select * from {view} limit 0").description]


def criterion_columns(store: Store) -> list[str]:
    """The columns of a :func:`criterion_row_pages` row: the ``criterion_results`` view's, then
    ``probability``."""
    return [*_view_columns(store, "criterion_results"), "probability"]


def judgment_columns(store: Store) -> list[str]:
    """The columns of a :func:`judgment_row_pages` row: the ``judge_votes`` view's."""
    return _view_columns(store, "judge_votes")


def storage_classes(columns: Sequence[str], pages: Iterable[Sequence[Mapping[str, Any]]]) -> dict[str, str]:
    """For each of ``columns``, the SQLite storage classes of its values in ``pages`` (``typeof()``'s
    names joined by commas, e.g. ``"integer,null"``; ``""`` for a column no row has): what
    :func:`autorubric_local.runner.export_files.arrow_schema` types a Parquet column by."""
    seen: dict[str, set[str]] = {column: set() for column in columns}
    for page in pages:
        for row in page:
            for column, classes in seen.items():
                if column in row:
                    classes.add(_STORAGE_CLASS.get(type(row[column]), "text"))
    return {column: ",".join(sorted(classes)) for column, classes in seen.items()}


_STORAGE_CLASS = {type(None): "null", int: "integer", bool: "integer", float: "real", str: "text", bytes: "blob"}


def _criterion_column(row: Mapping[str, Any]) -> str:
    return row["criterion_name"] or f"criterion {row['criterion_index'] + 1}"


def item_columns(store: Store, run: Mapping[str, Any]) -> list[str]:
    """The columns of the run's :func:`item_row_pages` rows: :data:`ITEM_COLUMNS`, then
    ``verdict[<name>]``, ``passed[<name>]`` and ``contribution[<name>]`` of each criterion in
    the order the items first name them."""
    if _recorded_before_criteria(store, run["id"]):
        named = (_criterion_column(row) for page in criterion_row_pages(store, run) for row in page)
    else:
        named = (_criterion_column({"criterion_name": name, "criterion_index": index}) for name, index in
                 store.db.execute("select c.criterion_name, c.criterion_index from item_criteria c join items i "
                                  "on i.run_id = c.run_id and i.item_id = c.item_id where c.run_id = ? "
                                  "order by i.item_index, c.criterion_index", [run["id"]]))
    names = dict.fromkeys(named)
    return [*ITEM_COLUMNS, *(f"{what}[{name}]" for name in names for what in ("verdict", "passed", "contribution"))]


def item_row_pages(store: Store, run: Mapping[str, Any], *,
                   page_items: int | None = None) -> Iterator[list[dict[str, Any]]]:
    """The rows of :func:`item_rows`, ``page_items`` items a page (default :data:`PAGE_ITEMS`;
    pages without rows are skipped)."""
    rebuilt = _recorded_before_criteria(store, run["id"])
    for span in _item_ranges(store, run["id"], None, page_items):
        by_item: dict[str, list[dict[str, Any]]] = {}
        for row in _criterion_page(store, run, span, None, rebuilt):
            by_item.setdefault(row["item_id"], []).append(row)
        out = []
        for item in _page_query(store, "items", run["id"], span, None, "item_index"):
            if item.get("report_json") is None:
                continue
            row = {"run_name": run["name"], **{column: item[column] for column in ITEM_COLUMNS[1:]}}
            for criterion in by_item.get(item["item_id"], []):
                name = _criterion_column(criterion)
                row[f"verdict[{name}]"] = criterion["verdict"]
                row[f"passed[{name}]"] = criterion["passed"]
                row[f"contribution[{name}]"] = criterion["contribution"]
            out.append(row)
        if out:
            yield out


def item_rows(store: Store, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per graded item of ``run``: ``run_name``, ``item_index``, ``item_id``, ``score``,
    ``raw_score``, ``cannot_assess_count``, ``error``, ``submission``, then per criterion
    ``verdict[<name>]``, ``passed[<name>]`` and ``contribution[<name>]`` (a criterion without a
    name is ``criterion <n>``, 1-based). Pending items are left out."""
    return list(chain.from_iterable(item_row_pages(store, run)))
