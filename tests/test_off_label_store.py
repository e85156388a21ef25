"""Raw label logprobs and off-label mass in SQLite (migration 7): ``judgments`` and
``sweep_judgments`` rows keyed by original option label, and a database made at migration 6
brought up to date with every row kept. Scripted engines only."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from test_off_label import BINARY, DEPTH

import autorubric_local.store.schema as schema_module
from autorubric_local.bias import SweepSettings, run_sweep
from autorubric_local.bias.records import sweep_records
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.planning import GradeItem
from autorubric_local.graders.records import graded_item_records
from autorubric_local.judges.config import LLMConfig
from autorubric_local.metrics import compute_metrics
from autorubric_local.runner import EvalConfig, EvalRunner, load_result
from autorubric_local.store import MIGRATIONS, Store, open_db

RAW = {"Vague": 0.05, "Basic": 0.1, "Solid": 0.15, "Expert": 0.2}  # raw probabilities, sum 0.5
BINARY_RAW = (0.5, 0.2, 0.1)  # MET, UNMET, CANNOT_ASSESS: sum 0.8


def shown_options(text: str) -> list[str]:
    block = text.split("</criterion>")[0]
    return [m.group(1) for m in re.finditer(r"^\d+\. (.*)$", block, flags=re.MULTILINE)]


def policy(request: ScoreRequest) -> LabelScores:
    """Raw probabilities fixed per original option wherever it is shown; off-label mass 1 - sum."""
    shown = shown_options(request.suffix)
    if not shown:
        return LabelScores(tuple(math.log(p) for p in BINARY_RAW), off_label_mass=0.2)
    return LabelScores(tuple(math.log(RAW[label]) for label in shown), off_label_mass=0.5)


def start(store: Store) -> str:
    return store.start_run(name="r", judges=[], grader={}, rubric=None, data_path=None)


def graded_rows(permutations: str = "single") -> list[dict[str, Any]]:
    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine(policy=policy)), seed=11,
                             permutations=permutations)  # type: ignore[arg-type]
    items = [GradeItem(submission=f"Answer {i}.", rubric=(BINARY, DEPTH), item_id=f"i{i}") for i in range(3)]
    graded = grader.grade_batch(items)
    store = Store(open_db(":memory:"))
    run_id = start(store)
    store.record_items(run_id, *graded_item_records(graded, {"scripted": "scripted"}))
    return store.judgments(run_id)


# ------------------------------------------------------------------------------ judgments


def test_binary_rows_store_raw_logprobs_and_off_label_mass() -> None:
    rows = [r for r in graded_rows() if r["criterion_index"] == 0]
    assert len(rows) == 3
    for row in rows:
        assert json.loads(row["label_logprobs_json"]) == {
            "MET": math.log(0.5), "UNMET": math.log(0.2), "CANNOT_ASSESS": math.log(0.1)
        }
        assert row["off_label_mass"] == 0.2
        assert json.loads(row["label_probabilities_json"]) == pytest.approx(
            {"MET": 0.625, "UNMET": 0.25, "CANNOT_ASSESS": 0.125})


@pytest.mark.parametrize("permutations", ["single", "cyclic"])
def test_multi_choice_rows_key_raw_logprobs_by_original_option(permutations: str) -> None:
    rows = [r for r in graded_rows(permutations) if r["criterion_index"] == 1]
    assert len(rows) == (3 if permutations == "single" else 3 * 4)
    orders = {tuple(json.loads(r["shuffle_order_json"])) for r in rows}
    assert len(orders) > 1  # shown orders differ, stored keys do not
    for row in rows:
        logprobs = json.loads(row["label_logprobs_json"])
        assert list(logprobs) == list(json.loads(row["label_probabilities_json"])) == list(RAW)
        assert logprobs == {label: math.log(p) for label, p in RAW.items()}
        assert json.loads(row["label_probabilities_json"]) == pytest.approx(
            {"Vague": 0.1, "Basic": 0.2, "Solid": 0.3, "Expert": 0.4})
        assert row["off_label_mass"] == 0.5
        assert row["selected_label"] == "Expert"


# ------------------------------------------------------------------------------ sweeps


def test_sweep_rows_key_probabilities_and_logprobs_by_original_option_and_keep_the_shown_list() -> None:
    engine = ScriptedEngine(policy=policy)
    item = GradeItem(submission="An essay.", rubric=(BINARY, DEPTH), item_id="e0")
    result = run_sweep([item], [JudgeSpec(LLMConfig(model="scripted", engine=engine), "j")],
                       SweepSettings(seed=1, n_bootstrap=0))
    store = Store(open_db(":memory:"))
    sweep_id = store.start_sweep(name="s", kind="rubric", config={}, judges=[], rubric=None, data_path=None)
    store.record_sweep(sweep_id, *sweep_records(result))
    rows = list(store.db["sweep_judgments"].rows_where("sweep_id = ?", [sweep_id], order_by="rotation"))
    assert [r["rotation"] for r in rows] == [0, 1, 2, 3]
    labels = [o.label for o in DEPTH.options or []]
    for row in rows:
        order = json.loads(row["option_order_json"])
        shown = json.loads(row["probabilities_json"])  # shown-position order, as before
        assert shown == pytest.approx([RAW[labels[i]] / 0.5 for i in order])
        by_label = json.loads(row["label_probabilities_json"])
        assert list(by_label) == labels
        assert by_label == pytest.approx({"Vague": 0.1, "Basic": 0.2, "Solid": 0.3, "Expert": 0.4})
        assert json.loads(row["label_logprobs_json"]) == {label: math.log(p) for label, p in RAW.items()}
        assert row["off_label_mass"] == 0.5
        assert labels[row["chosen_option"]] == "Expert"


def test_failed_sweep_rotation_has_no_probabilities() -> None:
    engine = ScriptedEngine(policy=policy)
    engine.enqueue_scores("infrastructure: out of memory")
    item = GradeItem(submission="An essay.", rubric=(DEPTH,), item_id="e0")
    result = run_sweep([item], [JudgeSpec(LLMConfig(model="scripted", engine=engine), "j")],
                       SweepSettings(seed=1, n_bootstrap=0))
    judgments, _, _ = sweep_records(result)
    failed = next(r for r in judgments if r["rotation"] == 0)
    assert failed["error"] == "infrastructure: out of memory"
    assert (failed["probabilities_json"], failed["label_probabilities_json"], failed["label_logprobs_json"],
            failed["off_label_mass"]) == (None, None, None, None)


# ------------------------------------------------------------------------------ migration 7

OLD_JUDGMENT = {
    "run_id": "run-old", "item_id": "a", "criterion_index": 0, "criterion_name": "density", "judge_id": "j",
    "model_id": "m", "permutation_index": 0, "shuffle_order_json": None, "verdict": "MET",
    "selected_index": None, "selected_label": None,
    "label_probabilities_json": '{"MET": 0.7, "UNMET": 0.2, "CANNOT_ASSESS": 0.1}', "explanation": None,
    "explanation_truncated": 0, "prompt_tokens": 12, "completion_tokens": 0, "cached_tokens": 4,
    "duration_ms": 1.5, "error": None, "explanation_error": None,
}
OLD_SWEEP_JUDGMENT = {
    "sweep_id": "sweep-old", "item_id": "a", "item_index": 0, "criterion_index": 1, "criterion_name": "depth",
    "judge_id": "j", "variant": "base", "rotation": 1, "option_order_json": "[1, 2, 0]", "chosen_position": 0,
    "chosen_option": 1, "probabilities_json": "[0.6, 0.3, 0.1]", "prompt_tokens": 20, "cached_tokens": 10,
    "duration_ms": 2.0, "error": None,
}


def make_version_6_database(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file made by the code of migration 6 (the migrations up to 6), with a run and a sweep."""
    with monkeypatch.context() as patch:
        patch.setattr(schema_module, "MIGRATIONS", MIGRATIONS[:6])
        db = open_db(path)
    assert [m["number"] for m in db["_migrations"].rows] == [1, 2, 3, 4, 5, 6]
    assert "off_label_mass" not in {c.name for c in db["judgments"].columns}
    db["runs"].insert({"id": "run-old", "name": "old", "started_utc": "2026-01-01T00:00:00+00:00",
                       "status": "finished"})
    db["items"].insert({"run_id": "run-old", "item_id": "a", "item_index": 0, "submission": "x", "score": 1.0})
    db["judgments"].insert_all([OLD_JUDGMENT, {**OLD_JUDGMENT, "criterion_index": 1, "error": "unknown: boom",
                                               "verdict": None, "label_probabilities_json": None}])
    db["sweeps"].insert({"id": "sweep-old", "kind": "rubric", "started_utc": "2026-01-01T00:00:00+00:00",
                         "status": "finished"})
    db["sweep_judgments"].insert(OLD_SWEEP_JUDGMENT)
    db.close()


def test_a_migration_6_database_is_upgraded_and_keeps_every_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.sqlite"
    make_version_6_database(path, monkeypatch)
    db = open_db(path)
    assert [m["number"] for m in db["_migrations"].rows] == [number for number, _, _ in MIGRATIONS]
    assert db["runs"].count == 1 and db["items"].count == 1
    judgments = list(db["judgments"].rows_where(order_by="criterion_index"))
    assert len(judgments) == 2
    assert judgments[0] == {**OLD_JUDGMENT, "label_logprobs_json": None, "off_label_mass": None,
                            # migrations 8 and 11
                            "uncalibrated_label_probabilities_json": None, "contextual_prior_id": None,
                            "prompt_prefix_id": None, "prompt_suffix_id": None, "one_hot": None}  # 13
    assert judgments[1]["error"] == "unknown: boom" and judgments[1]["off_label_mass"] is None
    (sweep_row,) = list(db["sweep_judgments"].rows)
    assert sweep_row == {**OLD_SWEEP_JUDGMENT, "label_probabilities_json": None, "label_logprobs_json": None,
                         "off_label_mass": None}
    assert json.loads(sweep_row["probabilities_json"]) == [0.6, 0.3, 0.1]  # still readable
    # The upgraded file takes new rows with the new columns beside the old ones.
    store = Store(db)
    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine(policy=policy)), seed=0)
    graded = grader.grade_batch([GradeItem(submission="New answer.", rubric=(BINARY,), item_id="n")])
    run_id = start(store)
    store.record_items(run_id, *graded_item_records(graded, {"scripted": "scripted"}))
    (new,) = store.judgments(run_id)
    assert new["off_label_mass"] == 0.2 and json.loads(new["label_logprobs_json"])["MET"] == math.log(0.5)
    assert store.judgments("run-old")[0]["verdict"] == "MET"
    db.close()
    again = open_db(path)  # opening again applies nothing
    assert again["_migrations"].count == len(MIGRATIONS) and again["judgments"].count == 3


def test_migration_7_is_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure inside migration 7 leaves the migration-6 file as it was (one transaction)."""
    path = tmp_path / "old.sqlite"
    make_version_6_database(path, monkeypatch)

    def half_done(db: sqlite_utils.Database) -> None:
        db.table("judgments").add_column("label_logprobs_json", str)
        raise RuntimeError("stopped after the first column")

    monkeypatch.setattr(schema_module, "MIGRATIONS", (*MIGRATIONS[:6], (7, "broken", half_done)))
    with pytest.raises(RuntimeError, match="first column"):
        open_db(path)
    db = sqlite_utils.Database(path)
    assert db["_migrations"].count == 6
    assert "label_logprobs_json" not in {c.name for c in db["judgments"].columns}
    assert db["judgments"].count == 2


# ------------------------------------------------------------------------------ runs, end to end


def test_a_run_keeps_the_values_through_its_stored_reports(tmp_path: Path) -> None:
    """EvalRunner -> SQLite -> load_result -> compute_metrics: the masses survive the report JSON."""
    dataset = RubricDataset(prompt="Compare.", rubric=Rubric([BINARY, DEPTH]), name="d")
    dataset.add_item("Answer one.", ground_truth=["MET", "Expert"])
    dataset.add_item("Answer two.", ground_truth=["UNMET", "Solid"])
    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine(policy=policy)), seed=3)
    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="e", show_progress=False)
    EvalRunner(dataset, grader, config).run_sync()
    result, loaded = load_result(tmp_path / "r.sqlite", "e")
    for item in result.item_results:
        binary, depth = item.report.report or []
        assert binary.votes[0].off_label_mass == 0.2
        assert binary.votes[0].label_logprobs == {"MET": math.log(0.5), "UNMET": math.log(0.2),
                                                  "CANNOT_ASSESS": math.log(0.1)}
        assert depth.multi_choice_votes[0].label_logprobs == {k: math.log(p) for k, p in RAW.items()}
    b, d = compute_metrics(result, loaded).per_criterion
    assert (b.mean_off_label_mass, b.n_off_label) == (pytest.approx(0.2), 2)
    assert (d.mean_off_label_mass, d.n_off_label) == (pytest.approx(0.5), 2)
