"""``grade`` prints a run from its database a page at a time, never the run built whole (issue 33:
memory flat in the run's size), and prints exactly what the whole result gives.

The CLI no longer builds an :class:`EvalResult` after grading (``StoredRun.result`` is made to
fail here): items are read back in keyset pages (``Store.graded_item_pages``), tables are
printed in parts of ``TABLE_ITEMS`` items, and the JSON array is written item by item, equal
byte for byte to ``json.dumps([...], indent=2)`` of the whole result.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from click.testing import CliRunner
from test_cli import DATA_FILE, RUBRIC_FILE, invoke_grade

from autorubric_local.cli import grade_output
from autorubric_local.cli.grade_output import _item_json
from autorubric_local.runner import load_result
from autorubric_local.runner.stored import StoredRun
from autorubric_local.store import Store


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env={"COLUMNS": "240"})


@pytest.fixture
def no_whole_result(monkeypatch: pytest.MonkeyPatch) -> None:
    def whole(self: StoredRun) -> Any:
        raise AssertionError("grade built the whole result")

    monkeypatch.setattr(StoredRun, "result", whole)


def _grade(runner: CliRunner, model: Path, db: Path, *args: str) -> Any:
    return invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--model", model, "--db", db, "--run", "r", "--limit", "5",
                        *args)


def test_json_output_is_the_whole_results_json_written_item_by_item(
    runner: CliRunner, tmp_path: Path, tiny_model_dir: Path, no_whole_result: None
) -> None:
    db = tmp_path / "r.sqlite"
    printed = _grade(runner, tiny_model_dir, db, "--json")
    assert printed.exit_code == 0, printed.output
    result, _ = load_result(db, "r")  # the reference, read whole (not through StoredRun.result)
    expected = json.dumps([_item_json(r.item_id, r.report) for r in result.item_results], indent=2) + "\n"
    assert printed.stdout == expected
    assert len(json.loads(printed.stdout)) == 5
    # Finished: read back from the database, again without the whole result.
    again = _grade(runner, tiny_model_dir, db, "--json")
    assert again.exit_code == 0 and again.stdout == expected
    assert "results read from the database" in again.stderr


def test_tables_come_in_parts_with_every_item_once(
    runner: CliRunner, tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, no_whole_result: None
) -> None:
    monkeypatch.setattr(grade_output, "TABLE_ITEMS", 2)
    printed = _grade(runner, tiny_model_dir, tmp_path / "r.sqlite")
    assert printed.exit_code == 0, printed.output
    assert printed.stdout.count("Grades: each criterion's verdict") == 3  # 2 + 2 + 1 items
    ids = [json.loads(line)["id"] for line in DATA_FILE.read_text(encoding="utf-8").splitlines()[:5]]
    assert all(printed.stdout.count(f" {item_id} ") == 1 for item_id in ids)
    assert "run r (" in printed.stderr and ": 5 items, 40 judgments in " in printed.stderr


def test_graded_reads_keyset_pages_in_item_order(runner: CliRunner, tmp_path: Path, tiny_model_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "r.sqlite"
    assert _grade(runner, tiny_model_dir, db, "--jsonl").exit_code == 0
    pages: list[int] = []
    original = Store.graded_item_pages

    def spy(self: Store, run_id: str, page_size: int = 500) -> Any:
        for page in original(self, run_id, page_size):
            pages.append(len(page))
            yield page

    monkeypatch.setattr(Store, "graded_item_pages", spy)
    store = Store.open(db)
    try:
        run = store.find_run("r")
        assert run is not None
        stored = StoredRun.read(store, run["id"], str(db), resumed_items=0)
    finally:
        store.close()
    paged = list(stored.graded(page_size=2))
    assert pages == [2, 2, 1]
    whole = stored.result()
    assert [g.item_id for g in paged] == [r.item_id for r in whole.item_results]
    assert [g.report for g in paged] == [r.report for r in whole.item_results]
    assert stored.total_judgments == whole.total_judgments == 40


def test_ctrl_c_while_printing_exits_130_and_keeps_the_run(
    runner: CliRunner, tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: StoredRun, page_size: int = 500) -> Any:
        raise KeyboardInterrupt
        yield  # a generator, as the real one

    monkeypatch.setattr(StoredRun, "graded", interrupted)
    db = tmp_path / "r.sqlite"
    result = _grade(runner, tiny_model_dir, db)
    assert result.exit_code == 130
    assert "interrupted while printing; the run is stored in" in result.stderr
    assert load_result(db, "r")[0].status == "finished"


def test_a_random_seed_is_printed_and_is_the_one_recorded(runner: CliRunner, tiny_model_dir: Path,
                                                         tmp_path: Path) -> None:
    db = tmp_path / "seeded.sqlite"
    result = invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", db, "--run", "r",
                          "--limit", "1", "--no-progress")
    assert result.exit_code == 0, result.output
    printed = re.search(r"^seed (\d+) \(random; --seed \1 shuffles the options the same way again\)$",
                        result.output, re.M)
    assert printed, result.output
    stored = json.loads(next(iter(sqlite_utils.Database(db)["runs"].rows))["grader_json"])["seed"]
    assert stored == int(printed.group(1))
    seeded = invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", db, "--run", "s",
                          "--limit", "1", "--no-progress", "--seed", "42")
    assert "random;" not in seeded.output  # a given seed is not announced as random


def _scripted_grade(runner: CliRunner, tmp_path: Path, *args: str | Path) -> Any:
    """``grade`` of two example items with a scripted engine for every judge (answers from a hash of
    the prompt, so a judge with another system prompt votes otherwise on some criteria)."""
    import hashlib
    import math

    from autorubric_local.engine import ScoreRequest, ScriptedEngine
    from autorubric_local.graders import criterion_grader

    def policy(request: ScoreRequest) -> list[float]:
        digest = hashlib.sha256((request.prefix + request.suffix).encode()).digest()
        weights = [1.0 + digest[k] % 5 for k in range(len(request.labels))]
        return [math.log(w / sum(weights)) for w in weights]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(criterion_grader, "load_engine", lambda config: ScriptedEngine(policy=policy))
        return invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--db", tmp_path / "r.sqlite", "--limit", "2",
                            "--seed", "3", "--no-progress", *args)


def _header(table: str) -> list[str]:
    line = next(line for line in table.splitlines() if " criterion " in line and " verdict " in line)
    return [cell.strip() for cell in re.split(r"[┃│|]", line) if cell.strip()]


def test_agree_is_shown_and_explained_only_for_an_ensemble(runner: CliRunner, tmp_path: Path) -> None:
    """Issue 51: with one judge ``agree`` is always 1.00 and was never explained; it is left out
    then, and with several judges the caption says what it is."""
    (tmp_path / "one").mkdir()
    alone = _scripted_grade(runner, tmp_path / "one")
    assert alone.exit_code == 0, alone.output
    assert _header(alone.stdout) == ["item", "score", "criterion", "weight", "verdict", "P"]
    assert "agree" not in alone.stdout
    judges = tmp_path / "judges.yaml"
    judges.write_text("judges:\n  - judge_id: a\n    model: smollm2-135m-instruct\n"
                      "  - judge_id: b\n    model: smollm2-135m-instruct\n    system_prompt: Grade strictly.\n"
                      "  - judge_id: c\n    model: smollm2-135m-instruct\n    system_prompt: Grade kindly.\n",
                      encoding="utf-8")
    (tmp_path / "three").mkdir()
    panel = _scripted_grade(runner, tmp_path / "three", "--judges", judges)
    assert panel.exit_code == 0, panel.output
    assert _header(panel.stdout) == ["item", "score", "criterion", "weight", "verdict", "P", "agree"]
    assert "agree: the share of the ensemble's judges whose vote is the final verdict" in panel.stdout
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in panel.stdout.splitlines()
            if line.startswith("│")]
    result, _ = load_result(tmp_path / "three" / "r.sqlite")
    agreements = [f"{c.agreement:.2f}" for r in result.item_results for c in r.report.report or []]
    assert [row[6] for row in rows] == agreements
    assert set(agreements) - {"1.00"}  # the judges disagree somewhere: the column carries information
