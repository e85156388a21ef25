"""`show` and `export` read a run a page of items at a time (issue 33: the read commands of a
10^5-item run held it whole, 1.8-2.9 GB), with the same rows as the run's SQL views."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
import sqlite_utils
from click.testing import CliRunner
from test_cli import DATA_FILE, RUBRIC_FILE, example_ids, invoke, invoke_grade

from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.runner import inspection, results
from autorubric_local.store import Store

ITEMS = 5


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    path = tmp_path_factory.mktemp("paged") / "results.sqlite"
    result = invoke_grade(CliRunner(), RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", path,
                          "--limit", str(ITEMS), "--seed", "3", "--run", "paged", "--jsonl")
    assert result.exit_code == 0, result.output
    return path


def view(db_path: Path, sql: str) -> list[dict[str, Any]]:
    return list(sqlite_utils.Database(db_path).query(sql))


def whole_criterion_rows(db_path: Path) -> list[dict[str, Any]]:
    """The ``criterion_results`` view in one query, with each final verdict's probability."""
    rows = view(db_path, "select * from criterion_results order by item_index, criterion_index")
    for row in rows:
        row["probability"] = json.loads(row["label_probabilities_json"] or "{}").get(row["verdict"])
    return rows


@pytest.fixture
def paged(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pages of 2 items, and no reader that loads a run's rows whole: returns, per page query,
    how many items its rows span."""
    monkeypatch.setattr(inspection, "PAGE_ITEMS", 2)
    for whole in ("item_rows", "criterion_results", "judgments"):
        monkeypatch.setattr(Store, whole, lambda *a, **k: pytest.fail("a whole run was read"))
    spans: list[int] = []
    query = inspection._page_query

    def counted(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        rows = query(*args, **kwargs)
        spans.append(len({row["item_id"] for row in rows}))
        return rows

    monkeypatch.setattr(inspection, "_page_query", counted)
    return spans


def test_pages_of_each_shape_join_to_the_views_rows(db_path: Path) -> None:
    store = Store.open(db_path)
    run = store.find_run("paged")
    assert run is not None
    try:
        for page_items in (1, 2, 500):
            criteria = list(inspection.criterion_row_pages(store, run, page_items=page_items))
            assert all(len({row["item_id"] for row in page}) <= page_items for page in criteria)
            assert [row for page in criteria for row in page] == whole_criterion_rows(db_path)
            votes = list(inspection.judgment_row_pages(store, run["id"], page_items=page_items))
            assert [row for page in votes for row in page] == view(
                db_path, "select * from judge_votes order by item_index, criterion_index, judge_id, permutation_index")
            items = [row for page in inspection.item_row_pages(store, run, page_items=page_items) for row in page]
            assert [row["item_id"] for row in items] == example_ids(ITEMS)
            for row in items:
                assert list(row) == inspection.item_columns(store, run)
        wanted = example_ids(ITEMS)[1::2]
        assert [row["item_id"] for row in inspection.criterion_rows(store, run, wanted)] == [
            row["item_id"] for row in whole_criterion_rows(db_path) if row["item_id"] in wanted]
    finally:
        store.close()


def test_show_reads_a_page_of_items_at_a_time(db_path: Path, paged: list[int]) -> None:
    runner = CliRunner(env={"COLUMNS": "240"})
    table = invoke(runner, "show", "paged", "--db", db_path)
    assert table.exit_code == 0, table.output
    assert f"{ITEMS} items shown" in table.stdout
    assert [line.split(":")[0] for line in table.stdout.splitlines() if line.startswith("item ")] == [
        f"item {item}" for item in example_ids(ITEMS)]
    lines = [json.loads(line) for line in invoke(runner, "show", "paged", "--db", db_path, "--json").stdout.splitlines()]
    assert lines == whole_criterion_rows(db_path)
    votes = invoke(runner, "show", "paged", "--db", db_path, "--votes", "--prompt")
    assert votes.exit_code == 0, votes.output
    assert votes.stdout.count("Votes: each judge, each option order") == 3  # pages of 2, 2 and 1 items
    assert votes.stdout.count("prompt: item ") == len(view(db_path, "select 1 from judgments"))
    one = invoke(runner, "show", "paged", "--db", db_path, "--item", example_ids(ITEMS)[3])
    assert "1 items shown" in one.stdout
    assert paged and max(paged) <= 2


def test_export_writes_a_page_of_items_at_a_time(db_path: Path, paged: list[int], tmp_path: Path) -> None:
    runner = CliRunner()
    votes = view(db_path, "select * from judge_votes order by item_index, criterion_index, judge_id, permutation_index")
    text = invoke(runner, "export", "paged", "--db", db_path).stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [row["vote"] for row in rows] == [v["vote"] for v in votes]
    assert [row["duration_ms"] for row in rows] == ["" if v["duration_ms"] is None else str(v["duration_ms"])
                                                   for v in votes]
    criteria = whole_criterion_rows(db_path)
    jsonl = invoke(runner, "export", "paged", "--db", db_path, "--format", "jsonl", "--per", "criterion").stdout
    assert [json.loads(line) for line in jsonl.splitlines()] == criteria
    passed = [row["passed"] for row in csv.DictReader(io.StringIO(
        invoke(runner, "export", "paged", "--db", db_path, "--per", "criterion").stdout))]
    assert passed == ["" if c["passed"] is None else str(c["passed"]) for c in criteria]  # 1, not 1.0
    out = tmp_path / "criteria.parquet"
    result = invoke(runner, "export", "paged", "--db", db_path, "--format", "parquet", "--per", "criterion",
                    "--out", out)
    assert result.exit_code == 0 and f"wrote {len(criteria)} rows" in result.stderr
    frame = pd.read_parquet(out)
    assert str(frame["criterion_index"].dtype) == "int64" and str(frame["contribution"].dtype) == "float64"
    assert pq.read_table(out).to_pylist() == criteria
    items = tmp_path / "items.parquet"
    assert invoke(runner, "export", "paged", "--db", db_path, "--format", "parquet", "--per", "item",
                  "--out", items).exit_code == 0
    by_item = pd.read_parquet(items)
    assert list(by_item["item_id"]) == example_ids(ITEMS)
    verdicts = {(c["item_id"], c["criterion_name"]): c["verdict"] for c in criteria}
    for _, row in by_item.iterrows():
        for (item_id, name), verdict in verdicts.items():
            if item_id == row["item_id"]:
                assert row[f"verdict[{name}]"] == verdict
    assert paged and max(paged) <= 2


def test_whole_result_and_manifest_are_the_paged_reader_read_to_the_end(
        db_path: Path, paged: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_result`` and ``load_manifest`` go through the one paged reader (``Store.item_pages``),
    never a whole-run read, and give the rows the database holds."""
    monkeypatch.setattr(results, "PAGE_SIZE", 2)
    pages: list[tuple[tuple[str, ...], int]] = []
    item_pages = Store.item_pages

    def counted(self: Store, run_id: str, columns: Any, *args: Any, **kwargs: Any) -> Any:
        for page in item_pages(self, run_id, columns, *args, **kwargs):
            pages.append((tuple(columns), len(page)))
            yield page

    monkeypatch.setattr(Store, "item_pages", counted)
    result, dataset = results.load_result(db_path, "paged")
    stored = view(db_path, "select item_id, report_json from items order by item_index")
    assert [item.id for item in dataset.items] == [row["item_id"] for row in stored] == example_ids(ITEMS)
    assert [r.item_id for r in result.item_results] == example_ids(ITEMS)
    assert [r.report.model_dump_json() for r in result.item_results] == [
        EnsembleEvaluationReport.model_validate_json(row["report_json"]).model_dump_json() for row in stored]
    assert all(r.item is dataset.items[r.item_idx] for r in result.item_results)
    assert max(size for _, size in pages) == 2 and len(pages) >= 6  # 3 pages of items + 3 of reports
    pages.clear()
    manifest = results.load_manifest(db_path, "paged")
    assert manifest.completed_indices == frozenset(range(ITEMS)) and manifest.dataset_hash is not None
    assert pages and all("report_json" not in columns for columns, _ in pages)  # reports are not read
