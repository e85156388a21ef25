"""`runs`, `show`, `export` and the `grade` polish of issue 19, on databases written by real
`grade` runs of the bundled example with the tiny random judge (``tiny_model_dir``)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlite_utils
from click.testing import CliRunner, Result
from test_cli import DATA_FILE, RUBRIC_FILE, example_ids, invoke, invoke_grade

from autorubric_local.core.rubric import Rubric
from autorubric_local.store import Store

CRITERIA = [c.name for c in Rubric.from_file(str(RUBRIC_FILE)).rubric]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> tuple[Path, Result]:
    """`grade --limit 2 --jsonl`, one item per chunk, in a database of its own."""
    db_path = tmp_path_factory.mktemp("runs") / "results.sqlite"
    result = invoke_grade(CliRunner(env={"COLUMNS": "80"}), RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir,
                          "--db", db_path, "--limit", "2", "--seed", "5", "--run", "runs-test", "--jsonl",
                          "--chunk-judgments", "8")
    assert result.exit_code == 0, result.output
    return db_path, result


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env={"COLUMNS": "80"})  # as narrow as a default terminal: nothing may fold


def stored(db_path: Path, sql: str) -> list[dict[str, Any]]:
    return list(sqlite_utils.Database(db_path).query(sql))


def test_grade_jsonl_streams_one_line_per_item(graded: tuple[Path, Result]) -> None:
    db_path, result = graded
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["item_id"] for line in lines] == example_ids(2)
    scores = {row["item_id"]: row["score"] for row in stored(db_path, "select item_id, score from items")}
    assert {line["item_id"]: line["score"] for line in lines} == scores
    assert all(len(line["criteria"]) == len(CRITERIA) for line in lines)


def test_a_finished_run_is_answered_from_the_database_without_a_judge(
    graded: tuple[Path, Result], runner: CliRunner, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path, first = graded

    def no_loading(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a judge was loaded for a finished run")

    monkeypatch.setattr("autorubric_local.graders.criterion_grader.load_engine", no_loading)
    again = invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", db_path, "--limit", "2",
                         "--seed", "5", "--run", "runs-test", "--jsonl")
    assert again.exit_code == 0, again.output
    assert "no judge loaded" in again.stderr
    assert [json.loads(line) for line in again.stdout.splitlines()] == [
        json.loads(line) for line in first.stdout.splitlines()]
    assert len(stored(db_path, "select id from runs")) == 1


def test_a_changed_run_is_refused_before_a_judge_loads(
    graded: tuple[Path, Result], runner: CliRunner, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run is claimed and its content checked before the library loads the judges (grade
    used to load them first, then learn that the run had changed)."""
    db_path, _ = graded

    def no_loading(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a judge was loaded for a run that cannot resume")

    monkeypatch.setattr("autorubric_local.graders.criterion_grader.load_engine", no_loading)
    changed = invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", db_path, "--limit", "3",
                           "--seed", "5", "--run", "runs-test")
    assert changed.exit_code == 1, changed.output
    assert "run 'runs-test'" in changed.stderr and "cannot be resumed" in changed.stderr


def test_runs_lists_the_run_with_items_and_mean_score(graded: tuple[Path, Result], runner: CliRunner) -> None:
    db_path, _ = graded
    table = invoke(runner, "runs", "--db", db_path)
    assert table.exit_code == 0, table.output
    assert "runs-test" in table.stdout and "2/2" in table.stdout and "finished" in table.stdout
    (line,) = [json.loads(text) for text in invoke(runner, "runs", "--db", db_path, "--json").stdout.splitlines()]
    scores = [row["score"] for row in stored(db_path, "select score from items")]
    assert (line["run_name"], line["items_done"], line["total_items"], line["items_failed"]) == ("runs-test", 2, 2, 0)
    assert line["mean_score"] == pytest.approx(sum(scores) / 2)
    assert line["judgments"] == 16 and line["judges"] and line["metrics"] == {}


def test_show_prints_every_criterion_whole_with_its_verdict(graded: tuple[Path, Result], runner: CliRunner) -> None:
    db_path, _ = graded
    result = invoke(runner, "show", "runs-test", "--db", db_path)
    assert result.exit_code == 0, result.output
    for name in CRITERIA:
        assert name in result.stdout  # whole, though COLUMNS is 80
    lines = [json.loads(text) for text in invoke(runner, "show", "runs-test", "--db", db_path, "--json").stdout.splitlines()]
    view = stored(db_path, "select item_id, criterion_name, verdict, passed, contribution from criterion_results "
                           "order by item_index, criterion_index")
    assert [(x["item_id"], x["criterion_name"], x["verdict"], x["passed"], x["contribution"]) for x in lines] == [
        (v["item_id"], v["criterion_name"], v["verdict"], v["passed"], v["contribution"]) for v in view]
    assert len(lines) == 2 * len(CRITERIA)


def test_show_one_item_with_votes_and_prompts(graded: tuple[Path, Result], runner: CliRunner) -> None:
    db_path, _ = graded
    item = example_ids(2)[1]
    result = invoke(runner, "show", "runs-test", "--db", db_path, "--item", item, "--json", "--prompt")
    rows = [json.loads(text) for text in result.stdout.splitlines()]
    assert len(rows) == len(CRITERIA) and {row["item_id"] for row in rows} == {item}
    store = Store.open(db_path)
    run_id = store.find_run("runs-test")["id"]  # type: ignore[index]
    for row in rows:
        assert row["prompt"] == store.judgment_prompt(run_id, item, row["criterion_index"], row["judge_id"])
        assert row["prompt"] and "<submission>" in row["prompt"]
    table = invoke(runner, "show", "runs-test", "--db", db_path, "--item", item, "--votes", "--prompt")
    assert table.exit_code == 0 and "Votes" in table.stdout and rows[0]["prompt"].splitlines()[0] in table.stdout


def test_show_and_export_name_a_missing_run_item_or_database(graded: tuple[Path, Result], runner: CliRunner) -> None:
    db_path, _ = graded
    missing = invoke(runner, "show", "nope", "--db", db_path)
    assert missing.exit_code == 1 and "no run named or with id 'nope'" in missing.output
    assert "'runs-test'" in missing.output and str(db_path) in missing.output
    item = invoke(runner, "show", "runs-test", "--db", db_path, "--item", "ghost")
    assert item.exit_code == 1 and "has no item 'ghost'" in item.output
    nofile = invoke(runner, "export", "runs-test", "--db", db_path.parent / "absent.sqlite")
    assert nofile.exit_code == 1 and "no such results database" in nofile.output
    assert not (db_path.parent / "absent.sqlite").exists()
    binary = invoke(runner, "export", "runs-test", "--db", db_path, "--format", "parquet")
    assert binary.exit_code == 2 and "needs --out" in binary.output


def test_export_per_judgment_csv_has_every_judgment(graded: tuple[Path, Result], runner: CliRunner) -> None:
    db_path, _ = graded
    result = invoke(runner, "export", "runs-test", "--db", db_path)
    frame = pd.read_csv(io.StringIO(result.stdout))
    votes = stored(db_path, "select * from judge_votes order by item_index, criterion_index, judge_id")
    assert len(frame) == len(votes) == 16
    assert list(frame["vote"]) == [v["vote"] for v in votes]
    assert list(frame["requirement"]) == [v["requirement"] for v in votes]


def test_export_per_criterion_jsonl_and_per_item_parquet(
    graded: tuple[Path, Result], runner: CliRunner, tmp_path: Path
) -> None:
    db_path, _ = graded
    lines = [json.loads(text) for text in
             invoke(runner, "export", "runs-test", "--db", db_path, "--format", "jsonl", "--per", "criterion")
             .stdout.splitlines() if text.strip()]
    assert len(lines) == 2 * len(CRITERIA)
    assert {line["criterion_name"] for line in lines} == set(CRITERIA)
    out = tmp_path / "items.parquet"
    result = invoke(runner, "export", "runs-test", "--db", db_path, "--format", "parquet", "--per", "item", "--out", out)
    assert result.exit_code == 0 and "wrote 2 rows" in result.stderr
    frame = pd.read_parquet(out)
    assert list(frame["item_id"]) == example_ids(2)
    by_item = {(line["item_id"], line["criterion_name"]): line["verdict"] for line in lines}
    for _, row in frame.iterrows():
        for name in CRITERIA:
            assert row[f"verdict[{name}]"] == by_item[(row["item_id"], name)]


def test_explain_mode_table_shows_explanations_and_no_loading_bar(
    runner: CliRunner, tmp_path: Path, tiny_model_dir: Path
) -> None:
    result = invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", tmp_path / "r.sqlite",
                          "--limit", "1", "--mode", "explain", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "explanation" in result.stdout
    reasons = [row["explanation"] for row in stored(tmp_path / "r.sqlite", "select explanation from criterion_results")
               if row["explanation"]]
    assert reasons and all(reason.splitlines()[0].strip()[:20] in result.stdout for reason in reasons)
    assert "Loading weights" not in result.stderr
