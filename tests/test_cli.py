"""The ``autorubric-local`` CLI through click's CliRunner: help text, ``grade`` end to end on the
bundled example with a tiny random judge saved as a local Hugging Face folder, clean errors for
bad inputs and a missing model, and ``models``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner, Result

from autorubric_local.cli import main
from autorubric_local.core.rubric import Rubric

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RUBRIC_FILE = EXAMPLES / "battery_rubric.yaml"
DATA_FILE = EXAMPLES / "battery_submissions.jsonl"
BINARY_LABELS = {"MET", "UNMET", "CANNOT_ASSESS"}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env={"COLUMNS": "240"})  # wide tables: no folded item ids


def invoke(runner: CliRunner, *args: str | Path) -> Result:
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


def invoke_grade(runner: CliRunner, *args: str | Path) -> Result:
    """`grade` with torch kept single-threaded.

    Loading a judge sets torch's thread count to every core, process-wide; on a busy 2-core
    machine that makes these tiny matrices ~8x slower (see conftest's ``tiny_model``). The
    loader's call is skipped here, so the suite keeps its one thread.
    """
    import torch

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch, "set_num_threads", lambda n: None)
        return invoke(runner, "grade", *args)


def example_ids(limit: int) -> list[str]:
    lines = [json.loads(line) for line in DATA_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row["id"] for row in lines[:limit]]


# ------------------------------------------------------------------------------------ help


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_command_has_help_with_an_example(runner: CliRunner, command: str) -> None:
    result = invoke(runner, command, "--help")
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output
    assert "autorubric-local " + command in result.output


def test_group_help_lists_every_command(runner: CliRunner) -> None:
    result = invoke(runner, "--help")
    assert result.exit_code == 0, result.output
    for command in main.commands:
        assert command in result.output


def test_group_help_has_an_example(runner: CliRunner) -> None:
    result = invoke(runner, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.output


def test_grade_help_documents_every_option(runner: CliRunner) -> None:
    result = invoke(runner, "grade", "--help")
    for option in ("--model", "--db", "--mode", "--explanation-first", "--seed", "--no-shuffle",
                   "--limit", "--run", "--resume", "--no-resume", "--chunk-judgments", "--json",
                   "--judges", "--permutations"):
        assert option in result.output


# ----------------------------------------------------------------------------------- grade


@pytest.fixture(scope="module")
def graded_db(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> tuple[Path, Result]:
    """One table-mode `grade --limit 2` run of the bundled example with the tiny judge."""
    db_path = tmp_path_factory.mktemp("cli") / "results.sqlite"
    result = invoke_grade(
        CliRunner(env={"COLUMNS": "240"}),
        RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", db_path, "--limit", "2",
        "--seed", "5", "--run", "cli-test",
    )
    return db_path, result


def test_grade_prints_a_table_with_every_item(graded_db: tuple[Path, Result]) -> None:
    _, result = graded_db
    assert result.exit_code == 0, result.output
    for item_id in example_ids(2):
        assert item_id in result.stdout
    for criterion in Rubric.from_file(str(RUBRIC_FILE)).rubric:
        assert criterion.name in result.stdout
    assert "2 items, 16 judgments" in result.stderr


def test_grade_writes_the_database(graded_db: tuple[Path, Result], tiny_model_dir: Path) -> None:
    db_path, result = graded_db
    assert result.exit_code == 0, result.output
    db = sqlite_utils.Database(db_path)
    (run,) = list(db["runs"].rows)
    assert run["name"] == "cli-test"
    assert run["status"] == "finished" and run["finished_utc"]
    assert run["data_path"] == str(DATA_FILE)
    assert json.loads(run["grader_json"])["seed"] == 5
    assert json.loads(run["judges_json"])[0]["model"] == str(tiny_model_dir)
    assert run["id"] in result.stderr
    items = list(db["items"].rows_where(order_by="item_index"))
    assert [i["item_id"] for i in items] == example_ids(2)
    assert all(i["run_id"] == run["id"] and i["score"] is not None for i in items)
    judgments = list(db["judgments"].rows)
    assert len(judgments) == 2 * 8
    assert {(j["item_id"], j["criterion_index"]) for j in judgments} == {
        (item_id, c) for item_id in example_ids(2) for c in range(8)
    }
    assert all(j["error"] is None for j in judgments)
    assert all(j["model_id"] == str(tiny_model_dir) for j in judgments)
    for j in judgments:
        multi_choice = j["criterion_index"] >= 6
        assert (j["verdict"] is None) == multi_choice
        assert (j["selected_index"] is not None) == multi_choice
        assert sum(json.loads(j["label_probabilities_json"]).values()) == pytest.approx(1.0)


def test_grade_json(runner: CliRunner, tmp_path: Path, tiny_model_dir: Path) -> None:
    result = invoke_grade(
        runner, RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", tmp_path / "r.sqlite",
        "--limit", "2", "--json", "--no-shuffle",
    )
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)
    assert [e["item_id"] for e in entries] == example_ids(2)
    rubric = Rubric.from_file(str(RUBRIC_FILE)).rubric
    for entry in entries:
        assert entry["error"] is None
        assert 0.0 <= entry["score"] <= 1.0
        assert [c["name"] for c in entry["criteria"]] == [c.name for c in rubric]
        for criterion, spec in zip(entry["criteria"], rubric):
            valid = BINARY_LABELS if spec.options is None else {o.label for o in spec.options}
            assert criterion["verdict"] in valid
            assert 0.0 <= criterion["probability"] <= 1.0
            assert criterion["probability"] == pytest.approx(criterion["label_probabilities"][criterion["verdict"]])
            assert criterion["error"] is None
    db = sqlite_utils.Database(tmp_path / "r.sqlite")
    assert json.loads(next(iter(db["runs"].rows))["grader_json"])["shuffle_options"] is False
    assert {j["shuffle_order_json"] for j in db["judgments"].rows if j["criterion_index"] >= 6} == {
        "[0, 1, 2, 3]", "[0, 1, 2]"
    }


# --------------------------------------------------------------------------------- errors


def grade_error(runner: CliRunner, rubric: Path, data: Path, tmp_path: Path, *extra: str | Path) -> str:
    """Run `grade` expecting a clean failure; return its message."""
    db_path = tmp_path / "errors.sqlite"
    result = invoke(runner, "grade", rubric, data, "--db", db_path, *extra)
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert result.output.startswith("Error: ") or "\nError: " in result.output
    assert not db_path.exists()  # nothing is recorded for a run that never started
    return result.output


def test_invalid_rubric_criterion(runner: CliRunner, tmp_path: Path) -> None:
    rubric = tmp_path / "bad_rubric.yaml"
    rubric.write_text(
        '- name: ok\n  weight: 1\n  requirement: "x"\n- name: bad\n  weight: high\n  requirement: "y"\n',
        encoding="utf-8",
    )
    message = grade_error(runner, rubric, DATA_FILE, tmp_path)
    assert str(rubric) in message
    assert "index 1" in message
    assert "weight" in message


def test_submission_missing_on_line_2(runner: CliRunner, tmp_path: Path) -> None:
    data = tmp_path / "subs.jsonl"
    data.write_text('{"id": "a", "submission": "NMC is dense."}\n{"id": "b", "query": "q"}\n', encoding="utf-8")
    message = grade_error(runner, RUBRIC_FILE, data, tmp_path)
    assert f"{data}: line 2: field 'submission': missing" in message


def test_an_unreadable_line_fails_only_its_item(runner: CliRunner, tmp_path: Path, tiny_model_dir: Path) -> None:
    """Issue 33: a JSONL line that is not JSON, not valid Unicode or not UTF-8 is that item's
    error, with its line number; the other items are graded and ``grade`` exits 3."""
    data = tmp_path / "subs.jsonl"
    data.write_bytes(
        b'{"id": "a", "submission": "NMC is dense."}\n'
        b'{"id": "b", submission: \n'  # not JSON
        b'{"id": "c", "submission": "\\ud800"}\n'  # valid JSON, not valid Unicode
        b'{"id": "d", "submission": "LFP \xff"}\n'  # not UTF-8
        b'\n{"submission": "LFP is safer."}\n'
    )
    db_path = tmp_path / "r.sqlite"
    result = invoke_grade(runner, RUBRIC_FILE, data, "--model", tiny_model_dir, "--db", db_path, "--no-progress",
                          "--json")
    assert result.exit_code == 3, result.output
    assert "3 of 5 items failed" in result.output
    rows = {row["item_id"]: row for row in json.loads(result.stdout)}
    assert list(rows) == ["a", "item-1", "item-2", "item-3", "item-4"]  # positions kept; unreadable ids unknown
    assert rows["item-1"]["error"].startswith(f"InputError: {data}: line 2: invalid JSON")
    assert rows["item-2"]["error"] == (f"InputError: {data}: line 3: invalid JSON: text at ['submission'] is not "
                                       "valid Unicode (lone surrogate U+D800)")
    assert rows["item-3"]["error"].startswith(f"InputError: {data}: line 4: not UTF-8 text")
    for key in ("item-1", "item-2", "item-3"):
        assert rows[key]["score"] is None and rows[key]["criteria"] == []
    for key in ("a", "item-4"):
        assert rows[key]["error"] is None and rows[key]["score"] is not None
    database = sqlite_utils.Database(db_path)
    judged = {row["item_id"] for row in database["judgments"].rows}
    assert judged == {"a", "item-4"}  # no judge was called for an unreadable line


def test_a_file_with_no_readable_line_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    data = tmp_path / "subs.jsonl"
    data.write_bytes(b'{"id": "b", submission: \n\xff\n')
    message = grade_error(runner, RUBRIC_FILE, data, tmp_path)
    assert f"{data}: no line could be read as an item (2 unreadable): {data}: line 1: invalid JSON" in message
    assert f"{data}: line 2: not UTF-8 text" in message


def test_unknown_field(runner: CliRunner, tmp_path: Path) -> None:
    data = tmp_path / "subs.jsonl"
    data.write_text(
        '{"id": "a", "submission": "NMC is dense."}\n{"id": "b", "sumbission": "LFP"}\n', encoding="utf-8"
    )
    message = grade_error(runner, RUBRIC_FILE, data, tmp_path)
    assert f"{data}: line 2: field 'submission': missing" in message
    assert "unknown field 'sumbission' (did you mean 'submission'?)" in message


def test_missing_model_path(runner: CliRunner, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    message = grade_error(runner, RUBRIC_FILE, DATA_FILE, tmp_path, "--model", missing, "--limit", "1")
    assert "not found" in message
    assert str(missing) in message  # where it looked
    assert "preset folders" in message and "smollm2-135m-instruct" in message


def test_missing_data_file(runner: CliRunner, tmp_path: Path) -> None:
    message = grade_error(runner, RUBRIC_FILE, tmp_path / "absent.jsonl", tmp_path)
    assert "absent.jsonl" in message


# --------------------------------------------------------------------------------- models


def test_models_lists_the_embedded_judge(runner: CliRunner) -> None:
    result = invoke(runner, "models")
    assert result.exit_code == 0, result.output
    assert "smollm2-135m-instruct" in result.stdout
    assert "qwen2.5-7b-instruct" in result.stdout


def test_item_index_counts_across_batches(runner: CliRunner, tmp_path: Path, tiny_model_dir: Path) -> None:
    db_path = tmp_path / "r.sqlite"
    result = invoke_grade(
        runner, RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", db_path, "--limit", "2", "--json",
        "--chunk-judgments", "8",  # 8 criteria per item: one item per committed chunk
    )
    assert result.exit_code == 0, result.output
    items = {i["item_id"]: i["item_index"] for i in sqlite_utils.Database(db_path)["items"].rows}
    assert [items[item_id] for item_id in example_ids(2)] == [0, 1]


def test_grade_resumes_a_named_run_and_refuses_changed_data(
    runner: CliRunner, tmp_path: Path, tiny_model_dir: Path
) -> None:
    db_path = tmp_path / "r.sqlite"
    common = (RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", db_path, "--run", "nightly",
              "--seed", "3", "--no-progress")
    first = invoke_grade(runner, *common, "--limit", "1", "--json")
    assert first.exit_code == 0, first.output
    again = invoke_grade(runner, *common, "--limit", "1", "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == json.loads(first.stdout)
    assert "1 items from the checkpoint" in again.stderr
    db = sqlite_utils.Database(db_path)
    assert db["runs"].count == 1 and db["judgments"].count == 8

    changed = invoke_grade(runner, *common, "--limit", "2")
    assert changed.exit_code != 0
    assert "cannot be resumed" in changed.output and "--no-resume" in changed.output
    assert "the dataset has 2 items, the run has 1" in changed.output

    fresh = invoke_grade(runner, *common, "--limit", "2", "--no-resume")
    assert fresh.exit_code == 0, fresh.output
    assert "2 items, 16 judgments" in fresh.stderr
    assert db["runs"].count == 2


def test_grade_prints_the_timing_summary(graded_db: tuple[Path, Result]) -> None:
    _, result = graded_db
    for part in ("items/s", "judgments/s", "s wall", "p95", "results in"):
        assert part in result.stderr


# ------------------------------------------------------------------------------- ensembles


def test_grade_with_a_judges_file_and_cyclic_permutations(runner: CliRunner, tmp_path: Path, tiny_model_dir: Path) -> None:
    judges = tmp_path / "judges.yaml"
    judges.write_text(
        f"judges:\n  - judge_id: a\n    model: {tiny_model_dir}\n"
        f"  - judge_id: b\n    model: {tiny_model_dir}\n    weight: 2\n    system_prompt: Grade strictly.\n"
        "aggregation: weighted\n",
        encoding="utf-8",
    )
    db_path = tmp_path / "r.sqlite"
    result = invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--judges", judges, "--permutations", "cyclic",
                          "--db", db_path, "--limit", "1", "--json", "--seed", "3")
    assert result.exit_code == 0, result.output
    (item,) = json.loads(result.stdout)
    assert set(item["judge_scores"]) == {"a", "b"}
    for criterion in item["criteria"]:
        assert [v["judge_id"] for v in criterion["votes"]] == ["a", "b"]
        assert [v["weight"] for v in criterion["votes"]] == [1.0, 2.0]
    rubric = Rubric.from_file(str(RUBRIC_FILE))
    rows = list(sqlite_utils.Database(db_path)["judgments"].rows)
    per_judge = sum(len(c.options) if c.options else 1 for c in rubric.rubric)
    assert len(rows) == 2 * per_judge  # one row per criterion x judge x rotation
    assert {r["permutation_index"] for r in rows} == {0, 1, 2, 3}
    run = next(iter(sqlite_utils.Database(db_path)["runs"].rows))
    grader = json.loads(run["grader_json"])
    assert grader["permutations"] == "cyclic" and grader["aggregation"] == "weighted"
    assert [j["judge_id"] for j in grader["judges"]] == ["a", "b"]


def test_model_and_judges_together_is_an_error(runner: CliRunner, tmp_path: Path) -> None:
    judges = tmp_path / "judges.yaml"
    judges.write_text("judges:\n  - model: smollm2-135m-instruct\n", encoding="utf-8")
    result = invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--judges", judges, "--model", "x", "--db", tmp_path / "r.sqlite")
    assert result.exit_code != 0
    assert "give --model or --judges, not both" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("judges:\n  - judge_id: a\n", encoding="utf-8")
    result = invoke_grade(runner, RUBRIC_FILE, DATA_FILE, "--judges", bad, "--db", tmp_path / "r.sqlite")
    assert result.exit_code != 0
    assert f"{bad}: judges[0]: field 'model' is required" in result.output


def test_a_dataset_with_its_own_rubric_needs_no_rubric_argument(
    runner: CliRunner, tmp_path: Path, tiny_model_dir: Path
) -> None:
    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.data.submissions import load_grading_data

    dataset = load_grading_data(DATA_FILE, Rubric.from_file(str(RUBRIC_FILE)))
    labelled = RubricDataset(prompt="Compare NMC and LFP.", rubric=dataset.rubric, items=dataset.items[:1])
    path = tmp_path / "dataset.json"
    labelled.to_file(path)
    result = invoke_grade(runner, path, "--model", tiny_model_dir, "--db", tmp_path / "r.sqlite", "--json")
    assert result.exit_code == 0, result.output
    (item,) = json.loads(result.stdout)
    assert len(item["criteria"]) == len(dataset.rubric.rubric)
    result = invoke_grade(runner, DATA_FILE, "--model", tiny_model_dir, "--db", tmp_path / "r2.sqlite")
    assert result.exit_code != 0 and "rubric" in result.output
    result = invoke_grade(runner, RUBRIC_FILE, DATA_FILE, DATA_FILE)
    assert result.exit_code != 0 and "expected [RUBRIC] DATA" in result.output


def test_grade_then_metrics_end_to_end(runner: CliRunner, tmp_path: Path, tiny_model_dir: Path) -> None:
    """`grade` a labelled dataset, then `metrics` reads the run from the database alone."""
    from dataclasses import replace

    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.data.submissions import load_grading_data

    rubric = Rubric.from_file(str(RUBRIC_FILE))
    dataset = load_grading_data(DATA_FILE, rubric)
    labels = [
        ["MET", "MET", "UNMET", "UNMET", "MET", "UNMET", "3 - Solid, several correct figures", "Matches the trade-offs"],
        ["UNMET", "MET", "MET", "UNMET", "UNMET", "UNMET", "2 - Basic, one or two facts", "NA - No advice given"],
        ["MET", "UNMET", "MET", "MET", "UNMET", "MET", "1 - Vague, no figures", "Contradicts the trade-offs"],
    ]
    items = [replace(item, ground_truth=truth) for item, truth in zip(dataset.items, labels)]
    path = tmp_path / "labelled.json"
    RubricDataset(prompt="Compare NMC and LFP.", rubric=rubric, items=items).to_file(path)
    db_path = tmp_path / "r.sqlite"
    assert invoke_grade(runner, path, "--model", tiny_model_dir, "--db", db_path, "--run", "lab").exit_code == 0

    result = invoke(runner, "metrics", db_path, "--run", "lab", "--json", "--plot", tmp_path / "plots")
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    assert metrics["n_items"] == 3 and metrics["n_criteria"] == 8
    per = {c["name"]: c for c in metrics["per_criterion"]}
    assert per["nmc_energy_density"]["support"] == 3 and per["technical_depth"]["support"] == 3
    assert per["technical_depth"]["scale"] == "ordinal" and per["use_case_advice"]["scale"] == "nominal"
    assert per["use_case_advice"]["support"] + per["use_case_advice"]["n_excluded"] == 3
    assert 0.0 <= metrics["criterion_accuracy"] <= 1.0
    assert sorted(p.name for p in (tmp_path / "plots").iterdir())[-2:] == ["reliability.png", "scores.png"]
    stored = list(sqlite_utils.Database(db_path)["metrics"].rows)
    assert len(stored) == 1


def test_the_results_table_shows_data_as_text_not_markup() -> None:
    from rich.console import Console

    from autorubric_local.cli.grade_output import _results_table
    from autorubric_local.core.reports import (
        EnsembleCriterionReport,
        EnsembleEvaluationReport,
    )
    from autorubric_local.core.types import Criterion

    criterion = Criterion(name="odd[/x] [bold]name", weight=1.0, requirement="r")
    report = EnsembleEvaluationReport(
        score=None, error="failed",
        report=[EnsembleCriterionReport(criterion=criterion, final_verdict=None, final_reason="", error="bad [/red] input")],
    )
    console = Console(record=True, width=200)
    console.print(_results_table([("id[/x]", report)]))  # raised rich.errors.MarkupError before
    text = console.export_text()
    assert "id[/x]" in text and "odd[/x] [bold]name" in text and "bad [/red] input" in text


def test_grade_dtype_loads_the_judge_in_that_precision(
    tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from dataclasses import replace

    from autorubric_local.judges.backends import registry

    loaded = []
    record = registry.backend_named("transformers")

    def recording_load(*args: object, **kwargs: object) -> object:
        engine = record.load(*args, **kwargs)  # type: ignore[arg-type]
        loaded.append(engine.model.dtype)  # type: ignore[attr-defined]
        return engine

    monkeypatch.setitem(registry._REGISTRY, "transformers", replace(record, load=recording_load))
    db_path = tmp_path / "results.sqlite"
    result = invoke_grade(CliRunner(), RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", db_path,
                          "--limit", "1", "--dtype", "bfloat16", "--run", "bf16")
    assert result.exit_code == 0, result.output
    assert loaded == [torch.bfloat16]
    (run,) = sqlite_utils.Database(db_path)["runs"].rows
    assert json.loads(run["judges_json"])[0]["dtype"] == "bfloat16"
    judgments = list(sqlite_utils.Database(db_path)["judgments"].rows)
    assert len(judgments) == 8 and all(j["error"] is None for j in judgments)
    assert all(sum(json.loads(j["label_probabilities_json"]).values()) == pytest.approx(1.0) for j in judgments)
