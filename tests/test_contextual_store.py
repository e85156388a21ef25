"""Contextual calibration in SQLite (migration 8): each judgment's corrected and uncalibrated
distributions and its prior's id, the ``contextual_priors`` table, runs through EvalRunner and
load_result, and a migration-7 database brought up to date (migrations 8 and 9) with every row
kept."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import autorubric_local.store.schema as schema_module
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import EvalConfig, EvalRunner, load_result
from autorubric_local.store import MIGRATIONS, Store, open_db

BINARY = Criterion(name="density", weight=10.0, requirement="States the energy density")
YES_NO = Criterion(
    name="cites", weight=2.0, requirement="Does it cite a source?",
    options=[CriterionOption(label="No", value=0.0), CriterionOption(label="Yes", value=1.0)],
)
CONTENT_FREE = ("", "N/A", "[SUBMISSION]")
# Raw (MET, UNMET, CANNOT_ASSESS) by submission; prior (0.8, 0.14, 0.06) (see test_contextual_grading).
BINARY_ANSWERS = {"": (0.8, 0.15, 0.05), "N/A": (0.35, 0.1, 0.05), "[SUBMISSION]": (0.9, 0.07, 0.03),
                  "Answer one.": (0.7, 0.28, 0.02), "Answer two.": (0.7, 0.28, 0.02)}
Q = {"MET": 21 / 77, "UNMET": 48 / 77, "CANNOT_ASSESS": 8 / 77}
OWN = {"MET": 0.7, "UNMET": 0.28, "CANNOT_ASSESS": 0.02}
# Two options: content-free inputs say (0.75, 0.25) by *shown position*; real ones (0.6, 0.4) by label.
BY_LABEL = {"No": 0.6, "Yes": 0.4}


def submission_of(request: ScoreRequest) -> str:
    found = re.search(r"<submission>\n(.*?)\n</submission>", request.prefix, flags=re.DOTALL)
    assert found is not None
    return found.group(1)


def policy(request: ScoreRequest) -> LabelScores:
    block = request.suffix.split("</criterion>")[0]
    shown = re.findall(r"^\d+\. (.*)$", block, flags=re.MULTILINE)
    text = submission_of(request)
    if not shown:
        return LabelScores(tuple(math.log(p) for p in BINARY_ANSWERS[text]))
    if text in CONTENT_FREE:
        return LabelScores((math.log(0.75), math.log(0.25)))
    return LabelScores(tuple(math.log(BY_LABEL[label]) for label in shown))


def dataset() -> RubricDataset:
    data = RubricDataset(prompt="Compare NMC and LFP.", rubric=Rubric([BINARY, YES_NO]), name="d")
    data.add_item("Answer one.", ground_truth=["UNMET", "No"])
    data.add_item("Answer two.", ground_truth=["MET", "Yes"])
    return data


def run(path: Path, calibrate: bool = True, **config: object) -> None:
    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine(policy=policy)), seed=5,
                             contextual_calibration=calibrate)
    EvalRunner(dataset(), grader, EvalConfig(db_path=path, experiment_name="e", show_progress=False,
                                             **config)).run_sync()  # type: ignore[arg-type]


def test_judgment_rows_hold_the_corrected_and_the_uncalibrated_distribution(tmp_path: Path) -> None:
    run(tmp_path / "r.sqlite")
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.find_run("e")["id"]  # type: ignore[index]
    rows = store.judgments(run_id)
    binary = [r for r in rows if r["criterion_index"] == 0]
    assert len(binary) == 2
    for row in binary:
        assert json.loads(row["label_probabilities_json"]) == pytest.approx(Q, abs=1e-12)
        assert json.loads(row["uncalibrated_label_probabilities_json"]) == pytest.approx(OWN, abs=1e-12)
        assert json.loads(row["label_logprobs_json"]) == pytest.approx({k: math.log(p) for k, p in OWN.items()})
        assert row["verdict"] == "UNMET"
    priors = {p["prior_id"]: p for p in store.contextual_priors(run_id)}
    assert {row["contextual_prior_id"] for row in binary} == {binary[0]["contextual_prior_id"]}
    prior = priors[binary[0]["contextual_prior_id"]]
    assert prior["prior_id"].startswith("sha256:v1:") and len(prior["prior_id"]) == len("sha256:v1:") + 64
    assert (prior["judge_id"], prior["criterion_name"], prior["option_order_json"], prior["error"]) == (
        "scripted", "density", None, None)
    assert json.loads(prior["content_free_inputs_json"]) == list(CONTENT_FREE)
    per_input = json.loads(prior["content_free_label_probabilities_json"])
    assert per_input == [pytest.approx(v, abs=1e-12) for v in (
        {"MET": 0.8, "UNMET": 0.15, "CANNOT_ASSESS": 0.05}, {"MET": 0.7, "UNMET": 0.2, "CANNOT_ASSESS": 0.1},
        {"MET": 0.9, "UNMET": 0.07, "CANNOT_ASSESS": 0.03})]
    assert json.loads(prior["prior_json"]) == pytest.approx({"MET": 0.8, "UNMET": 0.14, "CANNOT_ASSESS": 0.06})
    assert Criterion.model_validate_json(prior["criterion_json"]) == BINARY


def test_multi_choice_priors_are_keyed_by_original_option_with_their_shown_order(tmp_path: Path) -> None:
    run(tmp_path / "r.sqlite")
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.find_run("e")["id"]  # type: ignore[index]
    rows = [r for r in store.judgments(run_id) if r["criterion_index"] == 1]
    priors = {p["prior_id"]: p for p in store.contextual_priors(run_id)}
    for row in rows:
        order = json.loads(row["shuffle_order_json"])
        prior = priors[row["contextual_prior_id"]]
        assert json.loads(prior["option_order_json"]) == order
        # Position prior (0.75, 0.25) keyed by the option shown at each position.
        labels = ["No", "Yes"]
        expected_prior = {labels[order[0]]: 0.75, labels[order[1]]: 0.25}
        assert json.loads(prior["prior_json"]) == pytest.approx(dict(sorted(expected_prior.items())))
        assert list(json.loads(prior["prior_json"])) == labels  # original option order
        ratios = {label: BY_LABEL[label] / expected_prior[label] for label in labels}
        total = sum(ratios.values())
        assert json.loads(row["label_probabilities_json"]) == pytest.approx({k: v / total for k, v in ratios.items()})
        assert json.loads(row["uncalibrated_label_probabilities_json"]) == pytest.approx(BY_LABEL)


def test_load_result_gives_back_both_distributions(tmp_path: Path) -> None:
    run(tmp_path / "r.sqlite")
    result, _ = load_result(tmp_path / "r.sqlite", "e")
    for item in result.item_results:
        vote = item.report.report[0].votes[0]  # type: ignore[index]
        assert vote.label_probabilities == pytest.approx(Q, abs=1e-12)
        assert vote.uncalibrated_label_probabilities == pytest.approx(OWN, abs=1e-12)
    assert result.grader_settings["contextual_calibration"]["content_free_inputs"] == list(CONTENT_FREE)  # type: ignore[index]


def test_uncalibrated_runs_leave_the_new_columns_empty(tmp_path: Path) -> None:
    run(tmp_path / "r.sqlite", calibrate=False)
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.find_run("e")["id"]  # type: ignore[index]
    rows = store.judgments(run_id)
    assert rows and all(r["uncalibrated_label_probabilities_json"] is None and r["contextual_prior_id"] is None
                        for r in rows)
    assert store.contextual_priors(run_id) == []


def test_a_chunked_run_records_each_prior_once(tmp_path: Path) -> None:
    run(tmp_path / "r.sqlite", chunk_judgments=1)  # one item per chunk
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.find_run("e")["id"]  # type: ignore[index]
    rows = store.judgments(run_id)
    used = {r["contextual_prior_id"] for r in rows}
    assert {p["prior_id"] for p in store.contextual_priors(run_id)} == used
    assert len([r for r in rows if r["criterion_index"] == 0]) == 2
    assert len({r["contextual_prior_id"] for r in rows if r["criterion_index"] == 0}) == 1


def test_resuming_with_calibration_switched_is_refused(tmp_path: Path) -> None:
    run(tmp_path / "r.sqlite", calibrate=False)
    with pytest.raises(InputError, match="contextual_calibration"):
        run(tmp_path / "r.sqlite", calibrate=True)


def test_a_failed_prior_is_recorded_with_its_error(tmp_path: Path) -> None:
    def failing(request: ScoreRequest) -> LabelScores:
        if submission_of(request) == "N/A":
            return LabelScores((), error="infrastructure: out of memory")
        return policy(request)

    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine(policy=failing)), seed=5,
                             contextual_calibration=True)
    data = dataset()
    data.items = data.items[:1]
    EvalRunner(data, grader, EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="e",
                                        show_progress=False)).run_sync()
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.find_run("e")["id"]  # type: ignore[index]
    binary = next(r for r in store.judgments(run_id) if r["criterion_index"] == 0)
    assert binary["verdict"] is None and binary["error"].startswith("infrastructure: contextual calibration")
    assert binary["label_probabilities_json"] is None  # no verdict, no distribution it was read from
    assert json.loads(binary["uncalibrated_label_probabilities_json"]) == pytest.approx(OWN)  # nothing lost
    assert json.loads(binary["label_logprobs_json"]) == pytest.approx({k: math.log(p) for k, p in OWN.items()})
    prior = next(p for p in store.contextual_priors(run_id) if p["prior_id"] == binary["contextual_prior_id"])
    assert prior["prior_json"] is None and prior["error"] == binary["error"]
    per_input = json.loads(prior["content_free_label_probabilities_json"])
    assert per_input[1] is None and per_input[0] == pytest.approx({"MET": 0.8, "UNMET": 0.15, "CANNOT_ASSESS": 0.05})


# ------------------------------------------------------------------------------ migration 8

OLD_JUDGMENT = {
    "run_id": "run-old", "item_id": "a", "criterion_index": 0, "criterion_name": "density", "judge_id": "j",
    "model_id": "m", "permutation_index": 0, "shuffle_order_json": None, "verdict": "MET",
    "selected_index": None, "selected_label": None,
    "label_probabilities_json": '{"MET": 0.7, "UNMET": 0.2, "CANNOT_ASSESS": 0.1}', "explanation": None,
    "explanation_truncated": 0, "prompt_tokens": 12, "completion_tokens": 0, "cached_tokens": 4,
    "duration_ms": 1.5, "error": None, "explanation_error": None,
    "label_logprobs_json": '{"MET": -0.5, "UNMET": -1.8, "CANNOT_ASSESS": -2.5}', "off_label_mass": 0.1,
}


def make_version_7_database(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file made by the code of migration 7, with a run, an item, two judgments and metrics."""
    with monkeypatch.context() as patch:
        patch.setattr(schema_module, "MIGRATIONS", MIGRATIONS[:7])
        db = open_db(path)
    assert [m["number"] for m in db["_migrations"].rows] == [1, 2, 3, 4, 5, 6, 7]
    assert "contextual_priors" not in db.table_names()
    db["runs"].insert({"id": "run-old", "name": "old", "started_utc": "2026-01-01T00:00:00+00:00",
                       "status": "finished", "grader_json": "{}"})
    db["items"].insert({"run_id": "run-old", "item_id": "a", "item_index": 0, "submission": "x", "score": 1.0})
    db["judgments"].insert_all([OLD_JUDGMENT, {**OLD_JUDGMENT, "criterion_index": 1, "error": "unknown: boom",
                                               "verdict": None, "label_probabilities_json": None,
                                               "label_logprobs_json": None, "off_label_mass": None}])
    db["metrics"].insert({"run_id": "run-old", "computed_utc": "2026-01-01T00:00:00+00:00", "metrics_json": "{}"})
    db.close()


def test_a_migration_7_database_is_upgraded_and_keeps_every_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.sqlite"
    make_version_7_database(path, monkeypatch)
    db = open_db(path)
    assert [m["number"] for m in db["_migrations"].rows] == [number for number, _, _ in MIGRATIONS]
    assert (db["runs"].count, db["items"].count, db["metrics"].count) == (1, 1, 1)
    judgments = list(db["judgments"].rows_where(order_by="criterion_index"))
    new_columns = {"uncalibrated_label_probabilities_json": None, "contextual_prior_id": None,
                   "prompt_prefix_id": None, "prompt_suffix_id": None, "one_hot": None}  # migrations 8, 11, 13
    assert judgments[0] == {**OLD_JUDGMENT, **new_columns}
    assert judgments[1]["error"] == "unknown: boom" and judgments[1]["contextual_prior_id"] is None
    assert db["contextual_priors"].count == 0 and db["threshold_calibrations"].count == 0  # migrations 8, 9
    # The old run still loads; a calibrated run writes beside it.
    store = Store(db)
    assert store.judgments("run-old")[0]["verdict"] == "MET"
    db.close()
    run(path)
    store = Store.open(path)
    new_id = store.find_run("e")["id"]  # type: ignore[index]
    assert store.contextual_priors(new_id) and store.judgment_count("run-old") == 2
