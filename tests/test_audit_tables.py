"""Stored prompts, ``item_criteria`` and the SQL views (migration 11), written by real runner
runs with a ScriptedEngine: exact prompts (prefix + suffix, deduplicated), hand-computed
pass/fail and contributions, vote rows, run summaries, and the reasoning-first prompt."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import CannotAssessConfig, Criterion, CriterionOption
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.engine import GenerateRequest, ScoreRequest, ScriptedEngine
from autorubric_local.engine.user_text import OPEN, plain
from autorubric_local.graders.result_records import best_contribution, prompt_text_id
from autorubric_local.runner import EvalConfig, EvalRunner
from autorubric_local.runner.inspection import criterion_rows
from autorubric_local.store import Store
from fake_judge import fake_grader

POSITIVE = Criterion(name="density", weight=10.0, requirement="States the energy density")
NEGATIVE = Criterion(name="density_error", weight=-15.0, requirement="Claims LFP is denser")
DEPTH = Criterion(
    name="depth", weight=6.0, requirement="How deep is the comparison?", scale_type="ordinal",
    options=[CriterionOption(label="Vague", value=0.0), CriterionOption(label="Basic", value=0.25),
             CriterionOption(label="Solid", value=0.5), CriterionOption(label="Expert", value=1.0)],
)
RUBRIC = [POSITIVE, NEGATIVE, DEPTH]


def policy(request: ScoreRequest) -> list[float]:
    """Binary: MET with 0.7 (so the penalty criterion is MET too). Multi-choice: the option
    shown second (``Basic`` when options are not shuffled) with 5 / (n + 4)."""
    if len(request.labels) == 3:
        return [math.log(p) for p in (0.7, 0.2, 0.1)]
    weights = [1.0] * len(request.labels)
    weights[1] = 5.0
    return [math.log(w / sum(weights)) for w in weights]


def dataset(n: int = 3) -> RubricDataset:
    items = [DataItem(submission=f"Submission {i}: NMC is denser than LFP.", description=f"item {i}")
             for i in range(n)]
    return RubricDataset(prompt="Compare NMC and LFP.", rubric=Rubric(RUBRIC), items=items, name="audit")


def run(tmp_path: Path, engine: ScriptedEngine, **grader_kwargs: object) -> tuple[Store, str]:
    grader = fake_grader(engine, shuffle_options=False, **grader_kwargs)
    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="audit", show_progress=False)
    result = EvalRunner(dataset(), grader, config).run_sync()
    return Store.open(tmp_path / "r.sqlite"), result.run_id


def test_each_judgment_stores_the_exact_prompt_the_engine_received(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=policy)
    store, run_id = run(tmp_path, engine)
    sent = [request.prefix + request.suffix for request in engine.history if isinstance(request, ScoreRequest)]
    judgments = store.judgments(run_id)
    assert len(judgments) == len(sent) == 9
    stored = [store.judgment_prompt(run_id, j["item_id"], j["criterion_index"], j["judge_id"], j["permutation_index"])
              for j in judgments]
    assert sorted(stored) == sorted(sent)
    # Deduplicated: one prefix per item (3) and one suffix per criterion (3), not 9 prompts.
    assert store.db["prompt_texts"].count == 6
    texts = {row["id"]: row["text"] for row in store.db["prompt_texts"].rows}
    assert all(prompt_text_id(text) == text_id for text_id, text in texts.items())
    prefixes = {plain(texts[j["prompt_prefix_id"]]) for j in judgments}
    assert prefixes == {r.prefix for r in engine.history}
    # The engine received the data's spans marked (user_text): a replay sees them as the run did.
    marked = store.db.execute("select marked_prompt from judgment_prompts limit 1").fetchone()[0]
    assert OPEN + "Submission" in marked and plain(marked) in sent
    assert store.judgment_prompt(run_id, "no-such-item", 0, judgments[0]["judge_id"]) is None


def test_item_criteria_pass_fail_and_contribution_hand_computed(tmp_path: Path) -> None:
    store, run_id = run(tmp_path, ScriptedEngine(policy=policy))
    rows = store.criterion_results(run_id)
    assert len(rows) == 9
    first = rows[:3]
    assert [r["criterion_name"] for r in first] == ["density", "density_error", "depth"]
    assert [r["verdict"] for r in first] == ["MET", "MET", "Basic"]
    # MET on +10 earns its best (10); MET on -15 costs 15 (best is UNMET, 0); Basic earns 0.25 * 6 of 6.
    assert [r["passed"] for r in first] == [1, 0, 0]
    assert [r["contribution"] for r in first] == [10.0, -15.0, 1.5]
    assert [r["scale_type"] for r in first] == ["binary", "binary", "ordinal"]
    assert [r["requirement"] for r in first] == [c.requirement for c in RUBRIC]
    assert all(r["run_name"] == "audit" for r in rows)
    # The item's raw score is the sum of the contributions (spec 001: raw = sum of c_i).
    item = store.item_rows(run_id)[0]
    assert item["raw_score"] == pytest.approx(10.0 - 15.0 + 1.5)
    assert first[0]["item_score"] == item["score"]


def test_best_contribution_follows_the_weight_sign() -> None:
    assert best_contribution(POSITIVE) == 10.0
    assert best_contribution(NEGATIVE) == 0.0
    assert best_contribution(DEPTH) == 6.0
    penalty = DEPTH.model_copy(update={"weight": -4.0})
    assert best_contribution(penalty) == 0.0  # the Vague option (value 0) costs nothing


def test_cannot_assess_is_neither_passed_nor_failed(tmp_path: Path) -> None:
    def unsure(request: ScoreRequest) -> list[float]:
        if len(request.labels) == 3:
            return [math.log(p) for p in (0.1, 0.2, 0.7)]
        return policy(request)

    store, run_id = run(tmp_path, ScriptedEngine(policy=unsure), cannot_assess_config=CannotAssessConfig(
        strategy="partial", partial_credit=0.5))
    density, penalty = store.criterion_results(run_id)[:2]
    assert (density["verdict"], density["passed"], density["contribution"]) == ("CANNOT_ASSESS", None, 5.0)
    assert (penalty["verdict"], penalty["passed"], penalty["contribution"]) == ("CANNOT_ASSESS", None, 0.0)


def test_failed_judgment_has_no_pass_and_worst_case_contribution(tmp_path: Path) -> None:
    def broken(request: ScoreRequest) -> list[float]:
        if "Claims LFP" in request.suffix:
            raise RuntimeError("judge crashed")
        return policy(request)

    store, run_id = run(tmp_path, ScriptedEngine(policy=broken))
    penalty = store.criterion_results(run_id)[1]
    assert penalty["error"] is not None and penalty["passed"] is None
    assert penalty["contribution"] == -15.0  # failed calls count at worst case (spec 001)
    votes = list(store.db.query("select * from judge_votes where run_id = ? and criterion_index = 1", [run_id]))
    assert len(votes) == 3 and all(v["vote"] is None and "judge crashed" in v["error"] for v in votes)


def test_judge_votes_and_run_summaries(tmp_path: Path) -> None:
    store, run_id = run(tmp_path, ScriptedEngine(policy=policy))
    votes = list(store.db.query("select * from judge_votes where run_id = ? order by item_index, criterion_index",
                                [run_id]))
    assert [v["vote"] for v in votes[:3]] == ["MET", "MET", "Basic"]
    assert votes[2]["requirement"] == DEPTH.requirement and votes[0]["item_index"] == 0
    (summary,) = store.run_summaries()
    scores = [row["score"] for row in store.item_rows(run_id)]
    assert summary["run_name"] == "audit" and summary["status"] == "finished"
    assert (summary["total_items"], summary["items_done"], summary["items_failed"]) == (3, 3, 0)
    assert (summary["judgments"], summary["judgment_errors"]) == (9, 0)
    assert summary["mean_score"] == pytest.approx(sum(scores) / 3)


def test_reasoning_first_prompt_contains_the_explanation_it_was_scored_after(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=policy, explanation="Because NMC stores more energy per kilogram.")
    store, run_id = run(tmp_path, engine, mode="explain", explanation_first=True)
    scored = [r for r in engine.history if isinstance(r, ScoreRequest)]
    assert any(isinstance(r, GenerateRequest) for r in engine.history)
    judgment = store.judgments(run_id)[0]
    prompt = store.judgment_prompt(run_id, judgment["item_id"], 0, judgment["judge_id"])
    assert prompt in {r.prefix + r.suffix for r in scored}
    assert "Because NMC stores more energy per kilogram." in prompt


def test_runs_recorded_before_migration_11_are_rebuilt_from_their_reports(tmp_path: Path) -> None:
    store, run_id = run(tmp_path, ScriptedEngine(policy=policy), cannot_assess_config=CannotAssessConfig(
        strategy="partial", partial_credit=0.5))
    run_row = store.find_run(run_id)
    assert run_row is not None
    recorded = criterion_rows(store, run_row)
    store.db.execute("delete from item_criteria")  # what a run graded before migration 11 has
    store.db.conn.commit()
    assert store.criterion_results(run_id) == []
    assert criterion_rows(store, run_row) == recorded
    assert [row["item_id"] for row in criterion_rows(store, run_row, ["item-1"])] == ["item-1"] * 3
