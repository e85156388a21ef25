"""Decision-model judges inside ``CriterionGrader`` (issue 53): a sole judge and a confidence
cascade's first stage, against the loopback System One server of ``test_decision_model``.
Verdicts, probabilities, confidences and scores are hand-computed from the scripted answers."""

from __future__ import annotations

import math
from typing import Any

import pytest
from fake_judge import fake_judge
from test_decision_model import GRADED, BINARY, answers, serve  # noqa: F401 (serve is a fixture)

from autorubric_local import Rubric
from autorubric_local.core.errors import InputError
from autorubric_local.core.types import CriterionVerdict
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.graders import CriterionGrader, EscalationConfig, JudgeSpec
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.decision import DecisionModelConfig
from autorubric_local.runner import EvalRunner

MET, UNMET = CriterionVerdict.MET, CriterionVerdict.UNMET


def config_at(server: Any, **settings: Any) -> DecisionModelConfig:
    return DecisionModelConfig("jev-test", api_key="sk-secret", api_base=server.url, max_retries=1, timeout=5.0,
                               **settings)


def by_submission(table: dict[str, dict[str, Any]]) -> Any:
    """A reply whose answers depend on the submission sent in the state."""
    def reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return answers(table[body["state"]["submission"]])(body)
    return reply


SURE = {"c0": {"type": "noul", "noul": 0.9},
        "c1": {"type": "choice", "choice": "good", "confidence": 0.85,
               "probabilities": {"poor": 0.0, "ok": 0.1, "good": 0.9}}}
UNSURE = {"c0": {"type": "noul", "noul": 0.3},
          "c1": {"type": "choice", "choice": "ok", "confidence": 0.55,
                 "probabilities": {"poor": 0.1, "ok": 0.7, "good": 0.2}}}


def test_a_decision_model_grades_each_item_with_one_request_and_its_own_confidence(serve: Any) -> None:
    server = serve(by_submission({"first": SURE, "second": UNSURE}))
    grader = CriterionGrader(judge_model_config=config_at(server, input_cost_per_token=1e-6))
    items = [GradeItem("first", (BINARY, GRADED), item_id="a"), GradeItem("second", (BINARY, GRADED), item_id="b")]
    first, second = grader.grade_batch(items)
    grader.release_engines()

    assert len(server.requests) == 2  # one request per item for the whole rubric
    binary, graded = first.report.report
    assert binary.final_verdict is MET and graded.final_multi_choice_verdict.selected_index == 2
    vote = binary.votes[0]
    assert vote.label_probabilities == pytest.approx({"MET": 0.9, "UNMET": 0.1})  # the two outcomes offered
    assert vote.confidence == pytest.approx(0.8)  # (2 * 0.9 - 1) / (2 - 1): K = 2, AutoRubric's rule
    assert graded.multi_choice_votes[0].confidence == pytest.approx(0.85)  # (3 * 0.9 - 1) / (3 - 1)
    assert first.report.score == pytest.approx((10 + 5 * 1.0) / 15)
    b_binary, b_graded = second.report.report
    assert b_binary.final_verdict is UNMET and b_graded.final_multi_choice_verdict.selected_index == 1
    assert b_binary.votes[0].confidence == pytest.approx(0.4)  # P(UNMET) = 0.7: (2 * 0.7 - 1)
    assert second.report.score == pytest.approx(5 * 0.5 / 15)
    # the request's tokens and price once per item, not once per criterion
    assert first.report.token_usage.prompt_tokens == 120
    assert first.report.completion_cost == pytest.approx(120e-6)
    assert "sk-secret" not in repr(grader.describe()) and grader.describe()["judges"][0]["decision_model"][
        "model"] == "jev-test"


def test_a_decision_model_first_stage_escalates_only_what_it_is_unsure_of(serve: Any) -> None:
    server = serve(by_submission({"first": SURE, "second": UNSURE}))
    # both criteria have three labels; the first shown (MET on the binary one) at 0.98
    large = fake_judge(lambda request: [math.log(p) for p in (0.98, 0.01, 0.01)], judge_id="large")
    grader = CriterionGrader(judge_model_config=config_at(server),
                             escalation=EscalationConfig([large.spec], threshold=0.7), seed=3)
    items = [GradeItem("first", (BINARY, GRADED)), GradeItem("second", (BINARY, GRADED))]
    first, second = grader.grade_batch(items)

    # item "first": confidences 0.8 and 0.85, both kept; item "second": 0.4 and 0.55, both escalated
    assert not any(c.escalated for c in first.report.report)
    assert [c.escalated for c in second.report.report] == [True, True]
    assert len(large.engine.history) == 2  # the large judge saw only the second item's two criteria
    binary = second.report.report[0]
    assert [(v.judge_id, v.superseded) for v in binary.votes] == [("large", False), ("jev-test", True)]
    assert binary.final_verdict is MET  # the large judge's MET (P 0.98), not the first stage's UNMET


def test_a_failed_request_fails_every_criterion_never_a_verdict(serve: Any) -> None:
    server = serve(lambda body: (500, {"error": "down"}))
    grader = CriterionGrader(judge_model_config=config_at(server))
    (graded,) = grader.grade_batch([GradeItem("first", (BINARY, GRADED))])
    assert all(c.error is not None and c.error.startswith("infrastructure:") for c in graded.report.report)
    assert graded.report.score is None


def test_what_decision_models_cannot_do_is_refused_naming_it() -> None:
    jev = DecisionModelConfig("jev-latest", api_key="k")
    with pytest.raises(InputError, match="mode='explain'"):
        CriterionGrader(judge_model_config=jev, mode="explain")  # no LLM judge to explain
    with pytest.raises(InputError, match="auto_na_option"):  # changes what is planned: refused with an LLM too
        CriterionGrader(judges=[JudgeSpec(jev, "jev"), fake_judge(judge_id="llm").spec], auto_na_option=True)
    with pytest.raises(InputError, match="JudgeSpec.system_prompt"):
        CriterionGrader(judges=[JudgeSpec(jev, "jev", system_prompt="Be strict.")])
    # an LLM setting is the LLM judges' where there are some: the escalation judges explain
    explaining = CriterionGrader(judge_model_config=jev, mode="explain",
                                 escalation=EscalationConfig([fake_judge(judge_id="llm").spec], 0.5))
    assert explaining.escalation_grader is not None and explaining.escalation_grader.mode.value == "explain"
    from autorubric_local.bias.sweep import check_sweep_input

    with pytest.raises(InputError, match="no position bias to sweep"):
        check_sweep_input([GradeItem("x", (GRADED,))], [JudgeSpec(jev, "jev")], None, 10)


def test_a_stored_decision_model_cascade_resumes_to_what_it_grades_in_memory(serve: Any, tmp_path: Any) -> None:
    """EvalRunner stores a cascade whose first stage is a decision model: its judges record
    names the decision model's backend, a run stopped after its first chunk resumes without
    asking the endpoint again for the items it has, and the reports equal the in-memory ones."""
    import json
    import sqlite3

    from autorubric_local.runner import EvalConfig, EvalInterruptedError

    server = serve(by_submission({"first": SURE, "second": UNSURE}))

    def grader() -> CriterionGrader:
        large = fake_judge(lambda request: [math.log(p) for p in (0.98, 0.01, 0.01)], judge_id="large")
        return CriterionGrader(judge_model_config=config_at(server),
                               escalation=EscalationConfig([large.spec], threshold=0.7), seed=3)

    data = RubricDataset(prompt="Answer.", rubric=Rubric([BINARY, GRADED]))
    data.add_item("first", id="a")
    data.add_item("second", id="b")
    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="jev", chunk_judgments=2, show_progress=False)
    runner = EvalRunner(data, grader(), config, on_chunk=lambda chunk: runner.stop() if chunk.chunk_index == 0 else None)
    with pytest.raises(EvalInterruptedError):
        runner.run_sync()
    assert len(server.requests) == 1
    resumed = EvalRunner(data, grader(), config).run_sync()
    assert resumed.resumed_items == 1 and len(server.requests) == 2  # item "a" was not asked again
    live = grader().grade_batch([GradeItem("first", (BINARY, GRADED), item_id="a"),
                                 GradeItem("second", (BINARY, GRADED), item_id="b")])

    def shown(reports: Any) -> list[Any]:
        return [(round(r.score, 9), [(c.escalated, [(v.judge_id, v.superseded, round(v.confidence or 0, 9))
                                                    for v in (*c.votes, *c.multi_choice_votes)])
                                     for c in r.report]) for r in reports]

    assert shown(r.report for r in resumed.item_results) == shown(g.report for g in live)
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        (judges,), = db.execute("select judges_json from runs").fetchall()
        rows = db.execute("select item_id, criterion_index, judge_id from judgments order by item_id, judge_id, "
                          "criterion_index").fetchall()
    assert [(j["judge_id"], j["model_id"], j["backend"], j.get("stage")) for j in json.loads(judges)] == [
        ("jev-test", "jev-test", "decision-model", None), ("large", "scripted", None, "escalation")]
    assert rows == [("a", 0, "jev-test"), ("a", 1, "jev-test"),
                    ("b", 0, "jev-test"), ("b", 1, "jev-test"), ("b", 0, "large"), ("b", 1, "large")]


def test_an_ensemble_of_a_decision_model_and_an_llm_combines_their_votes(serve: Any) -> None:
    """Each judge votes once per criterion; the weighted majority (LLM weight 2 against 1) decides,
    and each vote keeps its own confidence rule (K = 2 for the yes/no answer, 3 for the LLM's labels)."""
    server = serve(by_submission({"first": SURE}))
    llm = fake_judge(lambda request: [math.log(p) for p in (0.1, 0.8, 0.1)], judge_id="llm", weight=2.0)
    grader = CriterionGrader(judges=[JudgeSpec(config_at(server), "jev"), llm.spec], seed=5)
    (graded,) = grader.grade_batch([GradeItem("first", (BINARY, GRADED))])

    assert len(server.requests) == 1 and len(llm.engine.history) == 2  # one request; one prompt per criterion
    binary = graded.report.report[0]
    assert [(v.judge_id, v.verdict) for v in binary.votes] == [("jev", MET), ("llm", UNMET)]
    assert [round(v.confidence, 9) for v in binary.votes] == [0.8, 0.7]  # (2*0.9-1)/1, (3*0.8-1)/2
    assert binary.final_verdict is UNMET  # weight 2 (UNMET) over weight 1 (MET)
    assert graded.report.judge_scores["jev"] == pytest.approx(1.0)  # MET and "good" (1.0) of 10 + 5


def _generic_reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """P(yes) 0.7 on every yes/no question; the first of the labels, at 0.6, on every choice."""
    by_id: dict[str, dict[str, Any]] = {}
    for qid, question in body["questions"].items():
        if question["type"] == "noul":
            by_id[qid] = {"type": "noul", "noul": 0.7}
        else:
            labels = list(question["criteria"])
            rest = 0.4 / (len(labels) - 1)
            by_id[qid] = {"type": "choice", "choice": labels[0], "confidence": 0.5,
                          "probabilities": {label: 0.6 if i == 0 else rest for i, label in enumerate(labels)}}
    return answers(by_id)(body)


def test_grade_on_the_cli_takes_a_decision_model_from_a_judges_file(serve: Any, tmp_path: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    from pathlib import Path

    from click.testing import CliRunner

    from autorubric_local.cli import main

    server = serve(_generic_reply)
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-from-env")
    judges = tmp_path / "judges.yaml"
    judges.write_text(f"judges:\n  - judge_id: jev\n    decision_model: {{model: jev-test, api_base: '{server.url}', "
                      "max_retries: 1, timeout: 5.0}\n")
    examples = Path(__file__).resolve().parent.parent / "examples"
    done = CliRunner().invoke(main, ["grade", str(examples / "battery_rubric.yaml"),
                                     str(examples / "battery_submissions.jsonl"), "--judges", str(judges),
                                     "--limit", "2", "--db", str(tmp_path / "r.sqlite"), "--json", "--no-progress"])
    assert done.exit_code == 0, done.output
    assert len(server.requests) == 2  # one request per item
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-from-env"
    items = json.loads(done.stdout)
    assert [len(item["criteria"]) for item in items] == [8, 8]

    keyed = tmp_path / "keyed.yaml"
    keyed.write_text("judges:\n  - decision_model: {model: jev-test, api_key: sk-in-file}\n")
    refused = CliRunner().invoke(main, ["grade", str(examples / "battery_rubric.yaml"),
                                        str(examples / "battery_submissions.jsonl"), "--judges", str(keyed),
                                        "--db", str(tmp_path / "k.sqlite"), "--no-progress"])
    assert refused.exit_code != 0 and "TYPESAFE_API_KEY" in refused.output and "sk-in-file" not in refused.output
