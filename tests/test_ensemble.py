"""Ensembles end to end through the engine protocol: several judges (scripted engines, the tiny
model), shared workloads, cyclic option permutations, few-shot examples, judge files, and the
error paths. Aggregation rules themselves are tested table by table in test_aggregation.py."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from test_grader import BINARY_A, DEPTH, NEGATIVE

from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader, JudgeSpec
from autorubric_local.graders.few_shot import FewShotConfig, select_examples
from autorubric_local.graders.panel_file import load_judges_file
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import LLMConfig

BINARY = BINARY_A


def lp(*probabilities: float) -> list[float]:
    return [math.log(p) for p in probabilities]


def binary_policy(verdict: str) -> Any:
    """A judge that always gives ``verdict`` probability 0.8."""
    index = ["MET", "UNMET", "CANNOT_ASSESS"].index(verdict)

    def policy(request: ScoreRequest) -> list[float]:
        probabilities = [0.1, 0.1, 0.1]
        probabilities[index] = 0.8
        return lp(*probabilities)

    return policy


class CountingEngine(ScriptedEngine):
    """A scripted engine that also counts its ``score`` calls (workloads)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.score_calls = 0

    def score(self, requests: Any) -> Any:
        self.score_calls += 1
        return super().score(requests)


def judge(engine: ScriptedEngine, judge_id: str, weight: float = 1.0, **kwargs: Any) -> JudgeSpec:
    return JudgeSpec(LLMConfig(model=judge_id, engine=engine), judge_id, weight, **kwargs)


def grade(grader: CriterionGrader, rubric: list[Criterion], submission: str = "NMC: 250 Wh/kg.") -> Any:
    (graded,) = grader.grade_batch([GradeItem(submission, tuple(rubric), item_id="x")])
    return graded


@pytest.mark.parametrize(
    ("aggregation", "weights", "expected"),
    [
        ("majority", (1.0, 1.0), CriterionVerdict.UNMET),  # 1-1 tie -> worst case for w > 0
        ("weighted", (2.0, 1.0), CriterionVerdict.MET),
        ("weighted", (1.0, 2.0), CriterionVerdict.UNMET),
        ("any", (1.0, 1.0), CriterionVerdict.MET),
        ("unanimous", (1.0, 1.0), CriterionVerdict.UNMET),
    ],
)
def test_two_judges_binary_aggregation(aggregation: str, weights: tuple[float, float], expected: CriterionVerdict) -> None:
    yes, no = ScriptedEngine("yes", binary_policy("MET")), ScriptedEngine("no", binary_policy("UNMET"))
    grader = CriterionGrader(
        judges=[judge(yes, "yes", weights[0]), judge(no, "no", weights[1])], aggregation=aggregation, seed=0  # type: ignore[arg-type]
    )
    report = grade(grader, [BINARY]).report
    (criterion,) = report.report
    assert criterion.final_verdict == expected
    assert [v.judge_id for v in criterion.votes] == ["yes", "no"]
    assert [v.verdict for v in criterion.votes] == [CriterionVerdict.MET, CriterionVerdict.UNMET]
    assert criterion.agreement == 0.5
    assert report.mean_agreement == 0.5
    assert report.judge_scores == {"yes": 1.0, "no": 0.0}
    assert report.score == (1.0 if expected == CriterionVerdict.MET else 0.0)
    # Ensemble distribution: judge-weighted mean of the two judges' distributions.
    w_yes = weights[0] / sum(weights)
    assert criterion.label_probabilities is not None
    assert criterion.label_probabilities["MET"] == pytest.approx(0.8 * w_yes + 0.1 * (1 - w_yes))


def test_a_single_judges_own_score_is_the_grade() -> None:
    """One judge: its own report is the ensemble's (assembled once), so its score is the grade's:
    MET on a (+10) and on neg (-5): raw 10 - 5 = 5 over the positive weight 10 = 0.5."""
    grader = CriterionGrader(judges=[judge(ScriptedEngine("only", binary_policy("MET")), "only")], seed=0)
    report = grade(grader, [BINARY, NEGATIVE]).report
    assert report.score == pytest.approx(0.5) and report.raw_score == pytest.approx(5.0)
    assert report.judge_scores == {"only": report.score}
    unmet = grade(CriterionGrader(judges=[judge(ScriptedEngine("u", binary_policy("UNMET")), "u")], seed=0),
                  [BINARY, NEGATIVE]).report
    assert unmet.score == 0.0 and unmet.judge_scores == {"u": 0.0}


def test_negative_criterion_tie_resolves_to_met() -> None:
    yes, no = ScriptedEngine("yes", binary_policy("MET")), ScriptedEngine("no", binary_policy("UNMET"))
    grader = CriterionGrader(judges=[judge(yes, "yes"), judge(no, "no")], seed=0)
    (criterion,) = grade(grader, [BINARY, NEGATIVE]).report.report[1:]
    assert criterion.final_verdict == CriterionVerdict.MET


def test_judges_on_one_engine_share_one_workload_and_see_their_own_prompts() -> None:
    engine = CountingEngine("shared", binary_policy("MET"))
    grader = CriterionGrader(
        judges=[judge(engine, "plain"), judge(engine, "strict", system_prompt="You are a strict grader.")],
        seed=0,
    )
    report = grade(grader, [BINARY, NEGATIVE]).report
    assert engine.score_calls == 1
    prefixes = [r.prefix for r in engine.history if isinstance(r, ScoreRequest)]
    assert len(prefixes) == 4
    assert sum("You are a strict grader." in p for p in prefixes) == 2
    assert set(report.judge_scores) == {"plain", "strict"}


def test_a_failed_judge_does_not_vote_and_all_failed_scores_none() -> None:
    ok, broken = ScriptedEngine("ok", binary_policy("MET")), ScriptedEngine("broken")  # no policy: errors
    grader = CriterionGrader(judges=[judge(ok, "ok"), judge(broken, "broken")], aggregation="unanimous", seed=0)
    report = grade(grader, [BINARY]).report
    (criterion,) = report.report
    assert criterion.final_verdict == CriterionVerdict.MET  # the failed vote does not block unanimity
    assert criterion.error is None
    assert [v.is_error for v in criterion.votes] == [False, True]
    assert criterion.votes[1].error is not None and criterion.votes[1].error.startswith("unknown:")
    assert report.judge_scores == {"ok": 1.0, "broken": None}

    grader = CriterionGrader(judges=[judge(ScriptedEngine("b1"), "b1"), judge(ScriptedEngine("b2"), "b2")], seed=0)
    report = grade(grader, [BINARY]).report
    assert report.score is None and report.error is not None
    assert report.report[0].final_verdict == CriterionVerdict.UNMET and report.report[0].is_error


def position_policy(position: int) -> Any:
    """A judge that always picks shown position ``position`` (0-based) with probability 0.7."""

    def policy(request: ScoreRequest) -> list[float]:
        n = len(request.labels)
        rest = 0.3 / (n - 1)
        return lp(*[0.7 if k == position else rest for k in range(n)])

    return policy


def content_policy(label: str) -> Any:
    """A judge that always picks the option labelled ``label``, wherever it is shown."""

    def policy(request: ScoreRequest) -> list[float]:
        block = request.suffix.split("</criterion>")[0]
        shown = [line.split(". ", 1)[1] for line in block.splitlines() if line[:1].isdigit() and ". " in line]
        return lp(*[0.7 if s == label else 0.1 for s in shown])

    return policy


def test_cyclic_permutations_judge_every_rotation_and_debias_the_vote() -> None:
    engine = ScriptedEngine("first", position_policy(0))
    grader = CriterionGrader(judges=[judge(engine, "first")], permutations="cyclic", shuffle_options=False, seed=0)
    graded = grade(grader, [BINARY, DEPTH])
    assert len(graded.results) == 1 + 4
    depth_results = [r for r in graded.results if r.task.criterion_index == 1]
    assert sorted(r.task.permutation_index for r in depth_results) == [0, 1, 2, 3]
    shown_first = sorted(r.task.option_order[0] for r in depth_results)  # type: ignore[index]
    assert shown_first == [0, 1, 2, 3]  # every option shown first exactly once
    (vote,) = graded.report.report[1].multi_choice_votes
    # Pure position bias averages to a uniform distribution over options: a 4-way tie, which
    # resolves to the worst option (lowest value, weight > 0).
    assert vote.label_probabilities == pytest.approx({"Vague": 0.25, "Basic": 0.25, "Solid": 0.25, "Expert": 0.25})
    assert vote.selected_label == "Vague"
    assert graded.report.report[1].shuffle_order is None and vote.shuffle_order is None  # not shuffled
    assert graded.report.report[0].shuffle_order is None  # binary

    engine = ScriptedEngine("content", content_policy("Solid"))
    grader = CriterionGrader(judges=[judge(engine, "content")], permutations="cyclic", seed=3)
    verdict = grade(grader, [DEPTH]).report.report[0].final_multi_choice_verdict
    assert verdict is not None and verdict.selected_label == "Solid" and verdict.value == 0.67


def test_single_order_follows_the_position_bias() -> None:
    engine = ScriptedEngine("first", position_policy(0))
    grader = CriterionGrader(judges=[judge(engine, "first")], shuffle_options=False, seed=0)
    verdict = grade(grader, [DEPTH]).report.report[0].final_multi_choice_verdict
    assert verdict is not None and verdict.selected_label == "Vague"
    engine = ScriptedEngine("last", position_policy(3))
    grader = CriterionGrader(judges=[judge(engine, "last")], shuffle_options=False, seed=0)
    verdict = grade(grader, [DEPTH]).report.report[0].final_multi_choice_verdict
    assert verdict is not None and verdict.selected_label == "Expert"


def test_ordinal_ensemble_min_max_on_the_spec_example() -> None:
    engines = [ScriptedEngine(f"j{i}", content_policy(label)) for i, label in enumerate(["Solid", "Solid", "Expert"])]
    for strategy, expected in (("min", "Solid"), ("max", "Expert"), ("mean", "Solid"), ("mode", "Solid")):
        grader = CriterionGrader(
            judges=[judge(e, e.model_id) for e in engines], ordinal_aggregation=strategy, seed=1  # type: ignore[arg-type]
        )
        criterion = grade(grader, [DEPTH]).report.report[0]
        verdict = criterion.final_multi_choice_verdict
        assert verdict is not None and verdict.selected_label == expected, strategy
        if strategy == "mean":
            assert verdict.aggregated_value == pytest.approx((0.67 + 0.67 + 1.0) / 3)
        assert criterion.agreement == pytest.approx(2 / 3 if expected == "Solid" else 1 / 3)


def test_per_criterion_aggregation_override() -> None:
    yes, no = ScriptedEngine("yes", binary_policy("MET")), ScriptedEngine("no", binary_policy("UNMET"))
    lenient = BINARY.model_copy(update={"aggregation": "any"})
    grader = CriterionGrader(judges=[judge(yes, "yes"), judge(no, "no")], aggregation="unanimous", seed=0)
    report = grade(grader, [BINARY, lenient]).report
    assert [c.final_verdict for c in report.report] == [CriterionVerdict.UNMET, CriterionVerdict.MET]
    bad = DEPTH.model_copy(update={"aggregation": "majority"})
    with pytest.raises(InputError, match="criterion 0: field 'aggregation'"):
        grade(grader, [bad])


def test_invalid_settings_name_the_field() -> None:
    engine = ScriptedEngine()
    with pytest.raises(InputError, match="aggregation must be one of"):
        CriterionGrader(judges=[judge(engine, "a")], aggregation="plurality")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="ordinal_aggregation"):
        CriterionGrader(judges=[judge(engine, "a")], ordinal_aggregation="average")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="permutations"):
        CriterionGrader(judges=[judge(engine, "a")], permutations="all")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="weight must be > 0"):
        judge(engine, "a", weight=0.0)
    with pytest.raises(InputError, match="judge_id values must be unique"):
        CriterionGrader(judges=[judge(engine, "a"), judge(engine, "a")])


def test_describe_is_json_and_records_what_changes_verdicts() -> None:
    engine = ScriptedEngine()
    grader = CriterionGrader(judges=[judge(engine, "a"), judge(engine, "b", 2.0)], seed=7, permutations="cyclic")
    described = json.loads(json.dumps(grader.describe()))
    assert described["seed"] == 7 and described["permutations"] == "cyclic"
    assert [j["weight"] for j in described["judges"]] == [1.0, 2.0]
    assert grader.seed_given
    assert not CriterionGrader(judges=[judge(engine, "a")]).seed_given
    other = CriterionGrader(judges=[judge(engine, "a"), judge(engine, "b", 2.0)], seed=7, aggregation="any")
    assert other.describe() != grader.describe()


def labelled_dataset() -> RubricDataset:
    rubric = Rubric([BINARY, DEPTH])
    items = [
        DataItem(f"answer {i}", description=f"note {i}", ground_truth=[verdict, option])
        for i, (verdict, option) in enumerate(
            [("MET", "Expert"), ("UNMET", "Vague"), ("MET", "Solid"), ("UNMET", "Vague"), ("MET", "Expert"), ("MET", "Basic")]
        )
    ]
    return RubricDataset(prompt="Compare cathodes.", rubric=rubric, items=items)


def test_few_shot_examples_are_balanced_and_the_same_for_every_judge() -> None:
    data = labelled_dataset()
    config = FewShotConfig(n_examples=2, balance_verdicts=True, include_reason=True, seed=1)
    chosen = select_examples(data, BINARY, config)
    assert sorted(e.label for e in chosen) == ["MET", "UNMET"]
    assert all(e.reason and e.reason.startswith("note") for e in chosen)
    assert select_examples(data, BINARY, config) == chosen  # reproducible
    options = select_examples(data, DEPTH, FewShotConfig(n_examples=4, seed=2))
    assert sorted(e.label for e in options) == ["Basic", "Expert", "Solid", "Vague"]  # one per option

    engine = ScriptedEngine("s", binary_policy("MET"))
    engine.policy = lambda r: lp(*([0.25] * len(r.labels))) if len(r.labels) != 3 else binary_policy("MET")(r)
    grader = CriterionGrader(
        judges=[judge(engine, "a"), judge(engine, "b")], training_data=data, few_shot_config=config, seed=0
    )
    grade(grader, [BINARY, DEPTH])
    suffixes = [r.suffix for r in engine.history if isinstance(r, ScoreRequest)]
    binary_suffixes = [s for s in suffixes if "energy density" in s]
    assert len(binary_suffixes) == 2 and binary_suffixes[0] == binary_suffixes[1]
    assert binary_suffixes[0].count("<example ") == 2
    assert "Verdict: MET" in binary_suffixes[0] and "Verdict: UNMET" in binary_suffixes[0]
    with pytest.raises(InputError, match="training_data and few_shot_config"):
        CriterionGrader(judges=[judge(engine, "a")], few_shot_config=config)


def test_device_seconds_and_token_usage_on_every_report() -> None:
    yes, no = ScriptedEngine("yes", binary_policy("MET")), ScriptedEngine("no", binary_policy("UNMET"))
    report = grade(CriterionGrader(judges=[judge(yes, "yes"), judge(no, "no")], seed=0), [BINARY, NEGATIVE]).report
    assert report.token_usage is not None and report.token_usage.prompt_tokens > 0
    assert report.device_seconds is not None and report.device_seconds >= 0.0
    assert report.completion_cost == 0.0 and f"${report.completion_cost:.4f}" == "$0.0000"  # local: not priced


def test_judges_file(tmp_path: Path) -> None:
    path = tmp_path / "judges.yaml"
    path.write_text(
        "judges:\n"
        "  - judge_id: a\n    model: smollm2-135m-instruct\n    weight: 2\n"
        "  - judge_id: b\n    model: smollm2-135m-instruct\n    system_prompt: Be strict.\n    device: cpu\n"
        "aggregation: weighted\nordinal_aggregation: median\npermutations: cyclic\n"
    )
    panel = load_judges_file(path)
    assert [(j.judge_id, j.weight, j.system_prompt) for j in panel.judges] == [("a", 2.0, None), ("b", 1.0, "Be strict.")]
    assert panel.judges[1].llm_config.device == "cpu"
    kwargs = panel.grader_kwargs()
    assert kwargs["aggregation"] == "weighted" and kwargs["permutations"] == "cyclic"

    cases = {
        "judges: []\n": "non-empty list 'judges'",
        "judges:\n  - judge_id: a\n": r"judges\[0\]: field 'model' is required",
        "judges:\n  - model: m\n    temprature: 0\n": (
            r"judges\[0\]: unknown field 'temprature' \(did you mean 'temperature'\?\)"
        ),
        "judges:\n  - model: m\n  - model: m\n": r"judges\[1\]: field 'judge_id': duplicate 'm'",
        "judges:\n  - model: m\n    weight: -1\n": r"judges\[0\]: .*weight must be > 0",
        "judges:\n  - model: m\naggregation: most\n": "field 'aggregation' must be one of",
        "judges:\n  - model: m\nshuffle: no\n": "unknown field 'shuffle'",
    }
    for text, message in cases.items():
        path.write_text(text)
        with pytest.raises(InputError, match=message):
            load_judges_file(path)
    with pytest.raises(InputError, match="missing.yaml: file not found"):
        load_judges_file(tmp_path / "missing.yaml")


def test_two_tiny_model_judges_end_to_end(tiny_engine: Any) -> None:
    """Two judges on the tiny transformers model (one with its own prompt), cyclic permutations."""
    judges = [
        JudgeSpec(LLMConfig(model="tiny", engine=tiny_engine), "tiny-a"),
        JudgeSpec(LLMConfig(model="tiny", engine=tiny_engine), "tiny-b", 2.0, system_prompt="Grade strictly."),
    ]
    grader = CriterionGrader(judges=judges, permutations="cyclic", seed=4, aggregation="weighted")
    items = [GradeItem(f"Answer number {i}.", (BINARY, NEGATIVE, DEPTH), item_id=str(i)) for i in range(2)]
    graded = grader.grade_batch(items)
    for entry in graded:
        report = entry.report
        assert report.error is None and report.score is not None
        assert len(entry.results) == 2 * (1 + 1 + 4)
        assert set(report.judge_scores) == {"tiny-a", "tiny-b"}
        for criterion in report.report or []:
            votes = criterion.votes or criterion.multi_choice_votes
            assert [v.judge_id for v in votes] == ["tiny-a", "tiny-b"]
            assert criterion.label_probabilities is not None
            assert math.isclose(sum(criterion.label_probabilities.values()), 1.0, abs_tol=1e-6)
    # Same seed, same results (engine timing aside).
    again = CriterionGrader(judges=judges, permutations="cyclic", seed=4, aggregation="weighted").grade_batch(items)
    for a, b in zip(again, graded):
        assert a.report.model_dump(exclude={"device_seconds"}) == b.report.model_dump(exclude={"device_seconds"})


class FailingEngine(ScriptedEngine):
    """An engine whose score call raises ``exc`` (a crashed backend, or a bug)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__("failing")
        self.exc = exc

    def score(self, requests: Any) -> Any:
        raise self.exc


def test_an_engine_failure_is_recorded_as_infrastructure_errors_not_verdicts() -> None:
    ok = ScriptedEngine("ok", binary_policy("MET"))
    broken = FailingEngine(RuntimeError("CUDA out of memory"))
    grader = CriterionGrader(judges=[judge(ok, "ok"), judge(broken, "broken")], seed=0)
    report = grade(grader, [BINARY, NEGATIVE]).report
    for criterion in report.report or []:
        error = criterion.votes[1].error
        assert error == "infrastructure: engine score call failed: RuntimeError: CUDA out of memory"
        assert criterion.votes[1].label_probabilities is None
    assert report.judge_scores["broken"] is None and report.score is not None

    grader = CriterionGrader(judges=[judge(broken, "broken")], seed=0)
    report = grade(grader, [BINARY]).report
    assert report.score is None and report.error is not None and "CUDA out of memory" in report.error

    with pytest.raises(TypeError):  # a bug is not disguised as a judge failure
        grade(CriterionGrader(judges=[judge(FailingEngine(TypeError("bug")), "bug")], seed=0), [BINARY])


class ShortEngine(ScriptedEngine):
    """An engine whose score call drops its last result (a bug in the engine's own code)."""

    def score(self, requests: Any) -> Any:
        return super().score(requests)[:-1]


def test_an_engine_returning_too_few_results_raises_and_is_not_stored_as_a_judge_failure() -> None:
    """Issue 32: a wrong result count was a RuntimeError, an ENGINE_FAILURES type, so it was stored
    as ``infrastructure:`` errors and each item was graded again alone. It is a bug: it raises,
    through the chunk's failure isolation too."""
    from autorubric_local.engine.base import EngineContractError
    from autorubric_local.runner.checkpoint import plan_dataset
    from autorubric_local.runner.executors import grade_chunk

    grader = CriterionGrader(judges=[judge(ShortEngine("short", binary_policy("MET")), "short")], seed=0)
    with pytest.raises(EngineContractError, match="engine score returned 1 results for 2 requests"):
        grade(grader, [BINARY, NEGATIVE])
    dataset = RubricDataset(prompt="Q", rubric=Rubric([BINARY, NEGATIVE]))
    dataset.add_item("one")
    dataset.add_item("two")
    with pytest.raises(EngineContractError):
        grade_chunk(grader, plan_dataset(dataset), lambda _: None)
