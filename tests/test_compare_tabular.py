"""`compare` reads CSV and Parquet tables (issue 54): the long form a row per response, columns
mapped by --id-column/--system-column/--response-column/--query-column/--reference-column, the
same prompts as from JSONL; --system files that are tables honour the same flags; every bad
row is named by file, row and column, and the file is refused whole as JSONL is."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.comparisons.data import ComparisonColumns, ComparisonPrompt, load_comparisons
from autorubric_local.comparisons.judging import load_comparison
from autorubric_local.core.errors import InputError
from autorubric_local.engine import ScriptedEngine
from test_compare import EXAMPLE, judge, quality_policy

LONG = [
    {"id": "p1", "system": "a", "response": "A1", "query": "q1", "reference": None},
    {"id": "p1", "system": "b", "response": "B1", "query": None, "reference": None},
    {"id": "p2", "system": "b", "response": "B2", "query": "q2", "reference": "r2"},
    {"id": "p2", "system": "a", "response": "A2", "query": "q2", "reference": None},
    {"id": "p2", "system": "c", "response": "C2", "query": None, "reference": None},
]
EXPECTED = [ComparisonPrompt("p1", "q1", {"a": "A1", "b": "B1"}),
            ComparisonPrompt("p2", "q2", {"b": "B2", "a": "A2", "c": "C2"}, "r2")]


def write_csv(path: Path, rows: list[dict[str, Any]], rename: dict[str, str] | None = None) -> Path:
    rename = rename or {}
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([rename.get(c, c) for c in rows[0]])
        writer.writerows([["" if v is None else v for v in row.values()] for row in rows])
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]], rename: dict[str, str] | None = None) -> Path:
    rename = rename or {}
    pq.write_table(pa.Table.from_pylist([{rename.get(k, k): v for k, v in row.items()} for row in rows]), path)
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def problems(path: Path, columns: ComparisonColumns | None = None) -> list[str]:
    with pytest.raises(InputError) as caught:
        load_comparisons(path, columns)
    return str(caught.value).splitlines()


# ---------------------------------------------------------------------------- the same data, three formats


def test_jsonl_csv_and_parquet_of_one_comparison_load_equal(tmp_path: Path) -> None:
    loaded = [load_comparisons(write_jsonl(tmp_path / "c.jsonl", LONG)),
              load_comparisons(write_csv(tmp_path / "c.csv", LONG)),
              load_comparisons(write_parquet(tmp_path / "c.parquet", LONG))]
    assert loaded == [EXPECTED, EXPECTED, EXPECTED]


def test_integer_ids_and_a_table_without_a_reference_column(tmp_path: Path) -> None:
    rows = [{"id": 7, "system": "a", "response": "x", "query": "q"},
            {"id": 7, "system": "b", "response": "y", "query": "q"}]
    expected = [ComparisonPrompt("7", "q", {"a": "x", "b": "y"})]
    assert load_comparisons(write_parquet(tmp_path / "c.parquet", rows)) == expected  # int64 column
    assert load_comparisons(write_csv(tmp_path / "c.csv", rows)) == expected  # text "7"
    assert load_comparisons(write_jsonl(tmp_path / "c.jsonl", rows)) == expected


def test_column_flags_map_renamed_columns_and_other_columns_are_ignored(tmp_path: Path) -> None:
    rename = {"id": "prompt_id", "system": "model", "response": "output", "query": "question", "reference": "gold"}
    rows = [{**row, "latency_ms": 12} for row in LONG]
    columns = ComparisonColumns(id="prompt_id", system="model", response="output", query="question", reference="gold")
    for path in (write_csv(tmp_path / "r.csv", rows, rename), write_parquet(tmp_path / "r.parquet", rows, rename)):
        assert load_comparisons(path, columns) == EXPECTED
        assert problems(path) == [f"{path}: no column 'id' (for the id; the columns: 'prompt_id', 'model', 'output', "
                                  "'question', 'gold', 'latency_ms')"]


def test_cli_compares_a_parquet_table_with_renamed_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import autorubric_local.cli.compare as compare_cli

    rows = [{"prompt_id": r["id"], "model": system, "output": text, "question": r["query"]}
            for r in map(json.loads, EXAMPLE.read_text().splitlines()) for system, text in r["responses"].items()]
    data = write_parquet(tmp_path / "outputs.parquet", rows)
    monkeypatch.setattr(compare_cli, "judge_specs",
                        lambda model, path: [judge(ScriptedEngine("s", policy=quality_policy()))])
    db = tmp_path / "r.sqlite"
    done = CliRunner().invoke(main, ["compare", str(data), "--id-column", "prompt_id", "--system-column", "model",
                                     "--response-column", "output", "--query-column", "question", "--db", str(db),
                                     "--run", "tab", "--json", "--bootstrap", "20"])
    assert done.exit_code == 0, done.output
    assert len(load_comparison(db, "tab").description["pairs"]) == 8 * 3  # 8 prompts, 3 pairs of 3 systems each
    assert [s["system"] for s in json.loads(done.stdout)["judges"]["s"]["ranking"]] == ["careful", "terse", "wrong"]
    unnamed = CliRunner().invoke(main, ["compare", str(data), "--db", str(db)])
    assert unnamed.exit_code == 1 and f"{data}: no column 'id' (for the id; the columns: 'prompt_id'" in unnamed.output


# ---------------------------------------------------------------------------- --system files that are tables


def test_system_tables_honour_the_column_flags(tmp_path: Path) -> None:
    from autorubric_local.comparisons.data import SystemFiles
    from autorubric_local.data.tables import Columns

    a = write_csv(tmp_path / "a.csv", [{"key": "p1", "text": "A1", "q": "q1"}, {"key": "p2", "text": "A2", "q": "q2"}])
    b = write_parquet(tmp_path / "b.parquet", [{"key": "p2", "text": "B2", "q": "q2"},
                                                {"key": "p1", "text": "B1", "q": "q1"}])
    columns = Columns(submission="text", id="key", query="q")
    assert SystemFiles((("a", str(a)), ("b", str(b))), columns).load() == [
        ComparisonPrompt("p1", "q1", {"a": "A1", "b": "B1"}), ComparisonPrompt("p2", "q2", {"a": "A2", "b": "B2"})]
    with pytest.raises(InputError, match=f"{a}: no column 'submission' \\(for the submission"):
        SystemFiles((("a", str(a)), ("b", str(b))), Columns(id="key", query="q")).load()  # grade's default names


def test_cli_builds_each_layouts_columns_from_the_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import autorubric_local.cli.compare as compare_cli

    seen: list[Any] = []
    monkeypatch.setattr(compare_cli, "_judge", lambda *args: seen.append(args[-1]))
    runner = CliRunner()
    assert runner.invoke(main, ["compare", "x.csv"]).exit_code == 0
    assert runner.invoke(main, ["compare", "x.csv", "--id-column", "k", "--system-column", "m", "--response-column",
                                "o", "--query-column", "q", "--reference-column", "g"]).exit_code == 0
    refused = runner.invoke(main, ["compare", "--system", "a=a.csv", "--system", "b=b.csv", "--system-column", "m"])
    assert refused.exit_code == 2 and "--system-column names a DATA table's column" in refused.output
    from autorubric_local.data.tables import Columns

    assert len(seen) == 2
    assert seen[0] == (ComparisonColumns(), Columns())  # --system files keep grade's names by default
    assert seen[1] == (ComparisonColumns(id="k", system="m", response="o", query="q", reference="g"),
                       Columns(submission="o", id="k", query="q", reference="g"))


# ---------------------------------------------------------------------------- strict errors


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_every_bad_row_is_named_with_its_file_row_and_column(tmp_path: Path, suffix: str) -> None:
    rows = [
        {"pid": "p1", "sys": "a", "out": "A1", "q": "q1"},
        {"pid": "", "sys": "b", "out": "B1", "q": "q1"},  # row 2: empty id
        {"pid": "p1", "sys": "b", "out": "", "q": None},  # row 3: empty response
        {"pid": "p1", "sys": "b", "out": "B1", "q": "another"},  # row 4: a different query
        {"pid": "p1", "sys": "a", "out": "again", "q": None},  # row 5: (p1, a) twice
        {"pid": "p1", "sys": "", "out": "C1", "q": None},  # row 6: empty system
        {"pid": "p2", "sys": "a", "out": "A2", "q": None},  # row 7: the first row of p2 has no query
        {"pid": "p3", "sys": "a", "out": "A3", "q": "q3"},  # row 8: p3 has one system only
        {"pid": "p1", "sys": "c", "out": "C1", "q": "q1"},
    ]
    path = (write_csv if suffix == ".csv" else write_parquet)(tmp_path / f"bad{suffix}", rows)
    columns = ComparisonColumns(id="pid", system="sys", response="out", query="q")
    assert problems(path, columns) == [
        f"{path}: row 2: column 'pid': empty",
        f"{path}: row 3: column 'out': empty",
        f"{path}: row 4: column 'q': differs from prompt 'p1''s query on row 1",
        f"{path}: row 5: column 'sys': prompt 'p1' already has a response of 'a'",
        f"{path}: row 6: column 'sys': empty",
        f"{path}: row 7: column 'q': missing",
        f"{path}: row 8: column 'sys': prompt 'p3' has only one system ('a')",
    ]


def test_non_text_cells_are_named_with_row_and_column(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "typed.parquet", [
        {"id": 1.5, "system": "a", "response": "x", "query": "q"},
        {"id": 2.0, "system": "a", "response": "x", "query": "q"},
    ])
    assert problems(path) == [
        f"{path}: row 1: column 'id': expected a non-empty string or an integer, got 1.5",
        f"{path}: row 2: column 'id': expected a non-empty string or an integer, got 2.0",
    ]
    numbers = write_parquet(tmp_path / "numbers.parquet", [
        {"id": "p1", "system": "a", "response": 3, "query": "q"},
        {"id": "p1", "system": "b", "response": 4, "query": "q"},
    ])
    assert problems(numbers) == [f"{numbers}: row 1: column 'response': expected a string, got number",
                                 f"{numbers}: row 2: column 'response': expected a string, got number"]


def test_missing_columns_name_the_file_and_column(tmp_path: Path) -> None:
    no_system = write_csv(tmp_path / "wide.csv", [{"id": "p1", "query": "q", "responses": "{}"}])
    assert problems(no_system) == [f"{no_system}: no column 'system' (for the system; the columns: 'id', 'query', "
                                   "'responses')"]
    plain = write_csv(tmp_path / "plain.csv", LONG)
    assert problems(plain, ComparisonColumns(reference="gold")) == [  # an optional column, but named: required
        f"{plain}: no column 'gold' (for the reference; the columns: 'id', 'system', 'response', 'query', 'reference')"]
    header_only = tmp_path / "empty.csv"
    header_only.write_text("id,system,response,query\n", encoding="utf-8")
    assert problems(header_only) == [f"{header_only}: no comparison prompts found (no rows)"]
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("id,system,response,query\np1,a,x,q\np1,b,y\n", encoding="utf-8")
    assert problems(ragged) == [f"{ragged}: row 2 (line 3): 3 cells, the header has 4"]
