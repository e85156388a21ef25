"""CSV and Parquet submissions (issue 54: "data in the formats people keep"): a table graded
by `grade` gives the items, prompts and scores the same submissions give as JSONL; columns are
mapped by flags and the others kept as metadata; bad rows are named by file, row and column;
`export --per item --format parquet` output can be graded again."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from test_report import policy

from autorubric_local.cli import main
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.data.tables import Columns
from autorubric_local.engine import ScriptedEngine
from autorubric_local.graders import criterion_grader

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RUBRIC = EXAMPLES / "battery_rubric.yaml"
ROWS = [{"id": f"s{i}", "submission": text, "query": "Compare NMC and LFP cathodes."}
        for i, text in enumerate(["NMC reaches 250-280 Wh/kg; LFP is cheaper and has no cobalt.",
                                  "LFP has higher energy density than NMC.", "Both are fine, \"quoted\", with, commas."])]


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> list[ScriptedEngine]:
    engines: list[ScriptedEngine] = []

    def load(config: Any) -> ScriptedEngine:
        engines.append(ScriptedEngine(policy=policy))
        return engines[-1]

    monkeypatch.setattr(criterion_grader, "load_engine", load)
    return engines


def graded(data: Path, db: Path, *flags: str) -> list[dict[str, Any]]:
    done = CliRunner().invoke(main, ["grade", str(RUBRIC), str(data), "--db", str(db), "--json", "--no-progress",
                                     "--seed", "3", *flags])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def test_csv_and_parquet_grade_as_the_same_jsonl_does(tmp_path: Path, scripted: list[ScriptedEngine]) -> None:
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    table = tmp_path / "s.csv"
    with table.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["key", "question", "output", "model"])
        writer.writerows([[r["id"], r["query"], r["submission"], "m-1"] for r in ROWS])
    parquet = tmp_path / "s.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in ROWS], "submission": [r["submission"] for r in ROWS],
                             "query": [r["query"] for r in ROWS], "tokens": [11, 12, 13]}), parquet)
    expected = graded(jsonl, tmp_path / "a.sqlite")
    from_csv = graded(table, tmp_path / "b.sqlite", "--id-column", "key", "--query-column", "question",
                      "--submission-column", "output")
    from_parquet = graded(parquet, tmp_path / "c.sqlite")
    prompts = [[r.prefix + r.suffix for r in engine.history] for engine in scripted]
    assert prompts[0] == prompts[1] == prompts[2]  # the judge saw the same prompts
    for rows in (from_csv, from_parquet):
        assert [(r["item_id"], r["score"]) for r in rows] == [(r["item_id"], r["score"]) for r in expected]
    rubric = Rubric.from_file(str(RUBRIC))
    assert load_grading_data(table, rubric, columns=Columns(submission="output", id="key", query="question")
                             )[0].metadata == {"model": "m-1"}
    assert load_grading_data(parquet, rubric, limit=2)[1].metadata == {"tokens": 12}
    assert len(load_grading_data(parquet, rubric, limit=2)) == 2


def test_export_per_item_parquet_is_graded_again(tmp_path: Path, scripted: list[ScriptedEngine]) -> None:
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text("".join(json.dumps({"id": r["id"], "submission": r["submission"]}) + "\n" for r in ROWS),
                     encoding="utf-8")
    db = tmp_path / "r.sqlite"
    first = graded(jsonl, db, "--run", "one")
    out = tmp_path / "items.parquet"
    done = CliRunner().invoke(main, ["export", "one", "--db", str(db), "--per", "item", "--format", "parquet",
                                     "--out", str(out)])
    assert done.exit_code == 0, done.output
    again = graded(out, tmp_path / "again.sqlite", "--id-column", "item_id")
    assert [(r["item_id"], r["score"]) for r in again] == [(r["item_id"], r["score"]) for r in first]


def _csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize(("make", "message"), [
    (lambda d: _csv(d / "e.csv", ["id", "submission"], [["a", "text"], ["b", ""]]),
     "e.csv: row 2: column 'submission': empty"),
    (lambda d: _csv(d / "n.csv", ["id", "answer"], [["a", "text"]]),
     "n.csv: no column 'submission' (for the submission; the columns: 'id', 'answer')"),
    (lambda d: _csv(d / "w.csv", ["id", "submission"], [["a", "text"], ["b", "text", "extra"]]),
     "w.csv: row 2 (line 3): 3 cells, the header has 2"),
    (lambda d: _csv(d / "d.csv", ["id", "submission"], [["a", "x"], ["a", "y"]]), "d.csv: row 2"),
    (lambda d: (pq.write_table(pa.table({"submission": ["ok", None]}), d / "p.parquet"), d / "p.parquet")[1],
     "p.parquet: row 2: column 'submission': empty"),
    (lambda d: (pq.write_table(pa.table({"submission": [1.5]}), d / "f.parquet"), d / "f.parquet")[1],
     "f.parquet: row 1: column 'submission': expected text, got float 1.5"),
    (lambda d: ((d / "x.parquet").write_bytes(b"not parquet"), d / "x.parquet")[1], "x.parquet: cannot be read as Parquet"),
])
def test_bad_rows_are_named_by_file_row_and_column(tmp_path: Path, make: Any, message: str) -> None:
    path = make(tmp_path)
    with pytest.raises(InputError) as raised:
        load_grading_data(path, Rubric.from_file(str(RUBRIC)))
    assert message in str(raised.value)


def test_column_names_for_a_jsonl_file_are_refused(tmp_path: Path) -> None:
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="column names apply to a table"):
        load_grading_data(jsonl, Rubric.from_file(str(RUBRIC)), columns=Columns(submission="output"))
