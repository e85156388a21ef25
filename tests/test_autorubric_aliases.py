"""AutoRubric 1.6.1's names for what autorubric-local holds under its own (issue 53): each is
read from the local field, never stored twice, and each refusal of something not built yet says
why. Hand-computed cases."""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from autorubric_local import (
    CriterionReport,
    CriterionVerdict,
    DataItem,
    EnsembleCriterionReport,
    EvalTimingStats,
    EvaluationReport,
    FewShotConfig,
    FewShotExample,
    JudgeVote,
    LengthPenalty,
    LLMConfig,
    MultiChoiceJudgeVote,
    Rubric,
    RubricDataset,
    evaluate,
    load_manifest,
)
from autorubric_local.data.item import item_to_dict
from autorubric_local.engine.scripted import ScriptedEngine
from autorubric_local.graders import CriterionGrader, Grader
from autorubric_local.graders.few_shot import select_examples
from autorubric_local.graders.planning import GradeItem, plan_tasks
from autorubric_local.runner import EvalAbortedError
from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import selection_confidence
from autorubric_local.core.types import (
    CANONICAL_NA_OPTION,
    Criterion,
    CriterionJudgment,
    CriterionOption,
    MultiChoiceVerdict,
)

FORMAT = ScriptedEngine().format_chat

OPTIONS = [CriterionOption(label="poor", value=0.0), CriterionOption(label="fair", value=0.5),
           CriterionOption(label="good", value=1.0)]


# --- votes and reports: probabilities, confidence, superseded, escalated -----------------------

def test_selection_confidence_is_autorubrics_formula() -> None:
    # clamp((K p - 1) / (K - 1), 0, 1)
    assert selection_confidence(0.8, 2) == pytest.approx(0.6)     # (1.6 - 1) / 1
    assert selection_confidence(0.5, 3) == pytest.approx(0.25)    # (1.5 - 1) / 2
    assert selection_confidence(0.25, 4) == 0.0                   # chance
    assert selection_confidence(0.1, 4) == 0.0                    # below chance: clamped
    assert selection_confidence(1.0, 3) == 1.0
    with pytest.raises(ValueError, match="n_outcomes"):
        selection_confidence(1.0, 1)


def test_judge_vote_probabilities_and_confidence_read_label_probabilities() -> None:
    vote = JudgeVote(judge_id="j", verdict="MET", reason="",
                     label_probabilities={"MET": 0.5, "UNMET": 0.3, "CANNOT_ASSESS": 0.2})
    assert vote.probabilities == {"MET": 0.5, "UNMET": 0.3, "CANNOT_ASSESS": 0.2}
    assert vote.confidence == pytest.approx(0.25)
    assert vote.superseded is False
    assert "probabilities" not in vote.model_dump() and "confidence" not in vote.model_dump()
    # AutoRubric's argument fills label_probabilities; a consistent confidence is accepted
    given = JudgeVote(judge_id="j", verdict="UNMET", reason="", probabilities={"MET": 0.1, "UNMET": 0.9},
                      confidence=0.8)
    assert given.label_probabilities == {"MET": 0.1, "UNMET": 0.9}
    assert given.confidence == pytest.approx(0.8)
    # no distribution read (one-hot, or none): None, as AutoRubric's LLM judges
    assert JudgeVote(judge_id="j", verdict="MET", reason="").confidence is None
    one_hot = JudgeVote(judge_id="j", verdict="MET", reason="", label_probabilities={"MET": 1.0, "UNMET": 0.0},
                        one_hot=True)
    assert one_hot.probabilities is None and one_hot.confidence is None


def test_judge_vote_refuses_what_it_cannot_mean() -> None:
    with pytest.raises(InputError, match="disagrees with its probabilities, which give 0.6"):
        JudgeVote(judge_id="j", verdict="MET", reason="", probabilities={"MET": 0.8, "UNMET": 0.2}, confidence=0.9)
    with pytest.raises(InputError, match="without probabilities"):
        JudgeVote(judge_id="j", verdict="MET", reason="", confidence=0.5)
    with pytest.raises(InputError, match="disagree"):
        JudgeVote(judge_id="j", verdict="MET", reason="", probabilities={"MET": 0.8, "UNMET": 0.2},
                  label_probabilities={"MET": 0.7, "UNMET": 0.3})
    marked = JudgeVote(judge_id="j", verdict="MET", reason="", superseded=True)  # a replayed cascade's mark
    assert marked.superseded and '"superseded":true' in marked.model_dump_json()
    assert "superseded" not in JudgeVote(judge_id="j", verdict="MET", reason="").model_dump_json()  # JSON as before


def test_multi_choice_vote_keys_probabilities_by_option_index() -> None:
    vote = MultiChoiceJudgeVote(judge_id="j", selected_index=2, selected_label="good", value=1.0, reason="",
                                label_probabilities={"poor": 0.1, "fair": 0.2, "good": 0.6,
                                                     CANONICAL_NA_OPTION.label: 0.1})
    assert vote.probabilities == {"0": 0.1, "1": 0.2, "2": 0.6, "3": 0.1}
    assert vote.confidence == pytest.approx((4 * 0.6 - 1) / 3)
    assert vote.superseded is False
    with pytest.raises(InputError, match="does not hold its criterion's option labels"):
        MultiChoiceJudgeVote(judge_id="j", selected_index=0, selected_label="poor", value=0.0, reason="",
                             probabilities={"0": 1.0})
    assert MultiChoiceJudgeVote(judge_id="j", selected_index=0, selected_label="poor", value=0.0, reason="",
                                superseded=True).superseded


def test_criterion_report_maps_autorubric_keys_both_ways() -> None:
    report = CriterionReport(requirement="r", options=OPTIONS, reason="",
                             multi_choice_verdict=MultiChoiceVerdict(selected_index=1, selected_label="fair", value=0.5),
                             probabilities={"0": 0.2, "1": 0.7, "3": 0.1})
    assert report.label_probabilities == {"poor": 0.2, "fair": 0.7, CANONICAL_NA_OPTION.label: 0.1}
    assert report.probabilities == {"0": 0.2, "1": 0.7, "3": 0.1}
    assert report.confidence == pytest.approx((3 * 0.7 - 1) / 2)  # K = 3 offered outcomes
    binary = CriterionReport(requirement="r", verdict="UNMET", reason="", label_probabilities={"MET": 0.3, "UNMET": 0.7})
    assert binary.probabilities == {"MET": 0.3, "UNMET": 0.7}
    assert binary.confidence == pytest.approx(0.4)
    with pytest.raises(InputError, match="not an option index"):
        CriterionReport(requirement="r", options=OPTIONS, reason="", probabilities={"fair": 1.0})


def test_ensemble_report_is_escalated_only_by_a_cascade_and_its_superseded_vote_decides_nothing() -> None:
    report = EnsembleCriterionReport(criterion=Criterion(requirement="r"), final_verdict="MET", final_reason="")
    assert report.escalated is False and "escalated" not in report.model_dump_json()
    escalated = EnsembleCriterionReport(
        criterion=Criterion(requirement="r"), final_verdict="MET", final_reason="", escalated=True,
        votes=[JudgeVote(judge_id="large", verdict="MET", reason=""),
               JudgeVote(judge_id="small", verdict="UNMET", reason="", superseded=True)])
    assert escalated.escalated and escalated.agreement == 1.0  # the superseded vote is not counted


# --- CriterionGrader: AutoRubric's parameters ---------------------------------------------------

def _config(engine: object | None = None) -> LLMConfig:
    return LLMConfig(model="scripted", engine=engine or ScriptedEngine())


def test_judge_model_config_is_llm_config() -> None:
    config = _config()
    grader = CriterionGrader(judge_model_config=config, seed=1)
    assert [j.llm_config for j in grader.judges] == [config]
    assert grader.describe() == CriterionGrader(config, seed=1).describe()
    with pytest.raises(InputError, match="judge_model_config or llm_config, not both"):
        CriterionGrader(config, judge_model_config=config)


@pytest.mark.parametrize(("arguments", "message"), [
    ({"binary_response_format": CriterionJudgment}, "binary_response_format is not supported: .*grammar"),
    ({"multi_choice_response_format": CriterionJudgment}, "multi_choice_response_format is not supported"),
    ({"escalation": object()}, r"escalation must be an EscalationConfig \(or None\), got object"),
    ({"llm_calls": "per_item", "mode": "explain"}, "llm_calls='per_item' does not work with mode='explain'"),
    ({"llm_calls": "per_rubric"}, "llm_calls must be one of per_criterion, per_item, got 'per_rubric'"),
])
def test_criterion_grader_refuses_what_is_not_built(arguments: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        CriterionGrader(_config(), **arguments)


def test_criterion_grader_accepts_autorubrics_defaults() -> None:
    grader = CriterionGrader(_config(), seed=1, binary_response_format=None, multi_choice_response_format=None,
                             escalation=None, llm_calls="per_criterion", multi_choice_system_prompt=None)
    assert grader.describe() == CriterionGrader(_config(), seed=1).describe()  # the content hash stays


def test_multi_choice_system_prompt_replaces_the_prompt_of_multi_choice_criteria_only() -> None:
    binary = Criterion(requirement="Says hello.")
    choice = Criterion(requirement="How polite?", options=OPTIONS)
    item = GradeItem("hello there", (binary, choice))
    tasks = plan_tasks([item], [("j", FORMAT)], shuffle_options=False, multi_choice_system_prompt="MC PROMPT")
    by_kind = {task.criterion.options is None: task for task in tasks}
    assert "MC PROMPT" in by_kind[False].prefix and "MC PROMPT" not in by_kind[True].prefix
    assert by_kind[True].prefix == plan_tasks([item], [("j", FORMAT)], shuffle_options=False)[0].prefix
    # a judge's own system prompt replaces both
    own = plan_tasks([item], [("j", FORMAT, "OWN")], shuffle_options=False, multi_choice_system_prompt="MC PROMPT")
    assert all("OWN" in task.prefix and "MC PROMPT" not in task.prefix for task in own)
    grader = CriterionGrader(_config(), seed=1, multi_choice_system_prompt="MC PROMPT")
    assert grader.describe()["multi_choice_system_prompt"] == "MC PROMPT"
    assert "MC PROMPT" in [t for t in grader.plan([item]) if t.criterion.options is not None][0].prefix
    with pytest.raises(InputError, match="does not work with contextual_calibration yet"):
        CriterionGrader(_config(), multi_choice_system_prompt="MC", contextual_calibration=True)


# --- Grader: AutoRubric's base class of custom graders; Rubric.guidelines -----------------------

class _Constant(Grader):
    """Every criterion MET; records what judge() was given."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seen: list[tuple[str, str | None]] = []

    async def judge(self, to_grade: str, rubric: list[Criterion], query: str | None = None,
                    reference_submission: str | None = None, *, guidelines: str | None = None) -> Any:
        self.seen.append((to_grade, guidelines))
        return rubric

    async def aggregate(self, judge_results: Any, *, normalize: bool = True) -> EvaluationReport:
        total = sum(c.weight for c in judge_results)
        return EvaluationReport(score=1.0 if normalize else total, raw_score=total)


class _Old(_Constant):
    async def judge(self, to_grade: str, rubric: list[Criterion], query: str | None = None,
                    reference_submission: str | None = None) -> Any:
        self.seen.append((to_grade, None))
        return rubric


RUBRIC = [Criterion(requirement="a", weight=3.0), Criterion(requirement="b", weight=1.0)]


def test_grader_base_class_judges_aggregates_and_penalises() -> None:
    assert asyncio.run(_Constant().grade("x", RUBRIC)).score == 1.0
    assert asyncio.run(_Constant(normalize=False).grade("x", RUBRIC)).score == 4.0
    # 4 words over a free budget of 2 with cap 4: the whole penalty_at_cap, 0.25 (exponent irrelevant at the cap)
    penalty = LengthPenalty(free_budget=2, max_cap=4, penalty_at_cap=0.25, penalty_type="ALL")
    assert asyncio.run(_Constant(length_penalty=penalty).grade("one two three four", RUBRIC)).score == pytest.approx(0.75)
    raw = asyncio.run(_Constant(length_penalty=penalty, normalize=False).grade("one two three four", RUBRIC))
    assert raw.score == pytest.approx(3.75) and raw.raw_score == 4.0
    grader = _Constant()
    asyncio.run(grader.grade({"thinking": "T", "output": "O"}, RUBRIC))
    assert grader.seen == [("<thinking>T</thinking>\n<output>O</output>", None)]
    with pytest.raises(NotImplementedError, match="must implement judge"):
        asyncio.run(Grader().grade("x", RUBRIC))


def test_rubric_guidelines_reach_a_grader_that_takes_them_and_warn_otherwise() -> None:
    assert Rubric(RUBRIC, guidelines="  \n").guidelines is None
    with pytest.raises(TypeError, match="str or None"):
        Rubric(RUBRIC, guidelines=3)  # type: ignore[arg-type]
    rubric = Rubric(RUBRIC, guidelines="Be strict.")
    takes = _Constant()
    asyncio.run(rubric.grade("x", takes))
    assert takes.seen == [("x", "Be strict.")]
    old = _Old()
    with pytest.warns(UserWarning, match="_Old ignores rubric guidelines"):
        asyncio.run(rubric.grade("x", old))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asyncio.run(rubric.grade("x", old))  # once per grader
    assert old.seen == [("x", None), ("x", None)]
    assert Rubric(RUBRIC) != rubric


# --- LLMConfig: AutoRubric's retry waits --------------------------------------------------------

def test_retry_waits_have_autorubrics_defaults_and_leave_old_hashes_alone() -> None:
    config = LLMConfig(model="m")
    assert (config.retry_min_wait, config.retry_max_wait) == (1.0, 60.0)
    assert "retry_min_wait" not in config.describe() and "retry_max_wait" not in config.describe()
    assert LLMConfig(model="m", retry_min_wait=0.5).describe()["retry_min_wait"] == 0.5
    with pytest.raises(ValueError, match=r"retry_max_wait must be >= retry_min_wait \(2.0\), got 1.0"):
        LLMConfig(model="m", retry_min_wait=2.0, retry_max_wait=1.0)


def test_a_local_backend_refuses_retry_waits() -> None:
    from autorubric_local.judges.backends.support import unsupported_settings

    problems = unsupported_settings(LLMConfig(model="m", retry_min_wait=0.5), "transformers")
    assert problems == ["LLMConfig.retry_min_wait is not supported by the transformers backend (got 0.5); a local "
                        "engine call is not retried, so there is no wait between retries; hosted and server judges "
                        "need backend='hosted' (LiteLLM; docs/backends.md, \"Hosted and server judges\")"]
    assert unsupported_settings(LLMConfig(model="m", retry_min_wait=0.5), "hosted") == []


def test_hosted_retries_wait_retry_min_wait_doubling(monkeypatch: pytest.MonkeyPatch) -> None:
    from autorubric_local.engine.hosted import client as hosted_client

    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    class Flaky(Exception):
        pass

    class FakeLiteLLM:
        async def acompletion(self, **params: Any) -> Any:
            raise Flaky("503")

    monkeypatch.setattr(hosted_client.asyncio, "sleep", sleep)
    monkeypatch.setattr(hosted_client, "load_litellm", lambda: FakeLiteLLM())
    monkeypatch.setattr(hosted_client, "is_transient", lambda exc: isinstance(exc, Flaky))
    config = LLMConfig(model="openai/x", backend="hosted", max_retries=3, retry_min_wait=0.5, retry_max_wait=1.5)
    with pytest.raises(Flaky):
        asyncio.run(hosted_client.HostedClient(config).answer("s", "u"))
    assert waits == [0.5, 1.0, 1.5]  # 0.5 * 2**attempt, capped at 1.5


# --- evaluate, EvalResult.experiment_dir, ItemResult.error, ExperimentManifest ------------------

def _dataset(n: int) -> RubricDataset:
    dataset = RubricDataset(prompt="Say hi.", rubric=Rubric([Criterion(requirement="Says hi.")]), name="greetings")
    for i in range(n):
        dataset.add_item(f"hi {i}" if i != 1 else "poison")
    return dataset


def _raising(request: Any) -> Any:
    if "poison" in request.prefix:
        raise RuntimeError("CUDA out of memory")
    return [math.log(0.7), math.log(0.2), math.log(0.1)]


def test_evaluate_takes_autorubrics_parameters_and_reports_the_experiment(tmp_path: Path) -> None:
    defaults = {name: p.default for name, p in inspect.signature(evaluate).parameters.items()
                if p.default is not inspect.Parameter.empty}
    assert defaults == {"fail_fast": False, "show_progress": True, "progress_style": "simple",
                        "max_concurrent_items": None, "experiment_name": None, "experiments_dir": "experiments",
                        "resume": True}
    grader = CriterionGrader(_config(ScriptedEngine(policy=_raising)), seed=1)
    result = asyncio.run(evaluate(_dataset(3), grader, show_progress=False, experiment_name="e",
                                  experiments_dir=tmp_path, max_concurrent_items=1))
    assert result.experiment_dir == tmp_path / "e"
    assert [r.error is None for r in result.item_results] == [True, False, True]
    assert "CUDA out of memory" in result.item_results[1].error
    assert result.item_results[1].error == result.item_results[1].report.error
    manifest = load_manifest(tmp_path / "e")
    assert (manifest.experiment_name, manifest.total_items, manifest.completed_items) == ("e", 3, 3)
    assert manifest.completed_indices == {0, 1, 2}
    assert manifest.dataset_name == "greetings"
    assert manifest.created_at == manifest.started_at and manifest.started_at.isoformat().startswith(
        manifest.started_utc[:19])
    assert manifest.completed_at is not None and manifest.total_duration_seconds is not None
    assert manifest.grader_config is not None and manifest.grader_config["seed"] == 1
    assert manifest.dataset_hash is not None and manifest.dataset_hash.startswith("sha256:")
    # the same items hash the same, in another run of another grader
    asyncio.run(evaluate(_dataset(3), CriterionGrader(_config(), seed=2), show_progress=False,
                         experiment_name="f", experiments_dir=tmp_path))
    assert load_manifest(tmp_path / "f").dataset_hash == manifest.dataset_hash
    with pytest.raises(EvalAbortedError):
        asyncio.run(evaluate(_dataset(3), CriterionGrader(_config(ScriptedEngine(policy=_raising)), seed=1),
                             show_progress=False, experiment_name="g", experiments_dir=tmp_path, fail_fast=True))
    in_file = asyncio.run(evaluate(_dataset(1), CriterionGrader(_config(), seed=1), show_progress=False,
                                   db_path=tmp_path / "other.sqlite"))
    assert in_file.experiment_dir is None


# --- FewShotExample.verdict, DataItem.ground_truth_reasons, RubricDataset defaults --------------

def test_few_shot_example_takes_autorubrics_verdict() -> None:
    example = FewShotExample("s", CriterionVerdict.MET, "why")
    assert (example.label, example.verdict, example.reason) == ("MET", CriterionVerdict.MET, "why")
    assert FewShotExample("s", label="Partial").verdict == "Partial"
    assert FewShotExample("s", "UNMET") == FewShotExample("s", label="UNMET")
    with pytest.raises(InputError, match="one of them"):
        FewShotExample("s")


def test_ground_truth_reasons_are_checked_kept_and_shown_in_few_shot_examples() -> None:
    item = DataItem("x", ground_truth=["MET", "UNMET"], ground_truth_reasons=["Says it.", None])
    assert item.ground_truth_reasons == ["Says it.", None]
    assert item_to_dict(item)["ground_truth_reasons"] == ["Says it.", None]
    assert "ground_truth_reasons" not in item_to_dict(DataItem("x", ground_truth=["MET"]))
    with pytest.raises(InputError, match="needs ground_truth"):
        DataItem("x", ground_truth_reasons=["a"])
    with pytest.raises(InputError, match="1 values for 2 ground truth values"):
        DataItem("x", ground_truth=["MET", "UNMET"], ground_truth_reasons=["a"])
    with pytest.raises(InputError, match=r"\[1\]: expected a string or null"):
        DataItem("x", ground_truth=["MET", "UNMET"], ground_truth_reasons=["a", 3])
    rubric = Rubric([Criterion(requirement="First."), Criterion(requirement="Second.")])
    data = RubricDataset(rubric=rubric)
    data.add_item("a", ground_truth=["MET", "UNMET"], ground_truth_reasons=["first is met", "second is not"],
                  description="note a")
    data.add_item("b", ground_truth=["MET", "MET"], description="note b")  # no reasons: its description
    copied = RubricDataset.from_dict(data.to_dict())
    assert copied.items[0].ground_truth_reasons == ["first is met", "second is not"]
    config = FewShotConfig(n_examples=2, include_reason=True)
    by_submission = {e.submission: e.reason for e in select_examples(data, rubric.rubric[1], config)}
    assert by_submission == {"a": "second is not", "b": "note b"}
    hidden = select_examples(data, rubric.rubric[1], FewShotConfig(n_examples=2))
    assert all(e.reason is None for e in hidden)


def test_rubric_dataset_prompt_and_rubric_are_optional() -> None:
    data = RubricDataset()
    assert (data.prompt, data.rubric, list(data.items)) == (None, None, [])
    with pytest.raises(InputError, match="rubric"):
        data.add_item("x")  # no rubric anywhere


def test_eval_timing_stats_builds_without_judgments_per_second() -> None:
    stats = EvalTimingStats(total_duration_seconds=2.0, mean_item_duration_seconds=1.0, min_item_duration_seconds=0.5,
                            max_item_duration_seconds=1.5, p50_item_duration_seconds=1.0,
                            p95_item_duration_seconds=1.45, items_per_second=1.0)
    assert stats.judgments_per_second == 0.0


def test_the_listed_api_has_the_fields_autorubrics_classes_inherit() -> None:
    # scripts/autorubric_api.py follows a class's bases inside the package: AggregatedMultiChoiceVerdict
    # inherits selected_index, selected_label, value and na from MultiChoiceVerdict; CriterionReport its
    # criterion fields from Criterion (so "value"/"requirement" are AutoRubric's, required there too)
    api = json.loads((Path(__file__).parent / "data" / "autorubric_api.json").read_text(encoding="utf-8"))
    verdict = api["modules"]["autorubric"]["AggregatedMultiChoiceVerdict"]["parameters"]
    assert [p["name"] for p in verdict] == ["selected_index", "selected_label", "value", "na", "aggregated_value"]
    report = {p["name"]: p for p in api["modules"]["autorubric"]["CriterionReport"]["parameters"]}
    assert report["requirement"]["required"] is True and "verdict" in report and "probabilities" in report


def test_temperature_none_is_greedy_locally_and_left_out_of_a_hosted_request() -> None:
    from autorubric_local.engine.hosted.client import HostedClient, _request_params
    from autorubric_local.judges.memory import engine_identity

    default = LLMConfig(model="m")
    unset = LLMConfig(model="m", temperature=None)
    assert (default.temperature, unset.temperature) == (0.0, None)
    assert unset.sampling_temperature == 0.0 and LLMConfig(model="m", temperature=0.7).sampling_temperature == 0.7
    assert engine_identity(unset) == engine_identity(default)  # one engine for both
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        LLMConfig(model="m", temperature=-0.1)
    messages = [{"role": "user", "content": "u"}]
    hosted = LLMConfig(model="openai/x", backend="hosted", temperature=None)
    assert "temperature" not in _request_params(HostedClient(hosted)._settings({}), messages, None, 0)
    sent = _request_params(HostedClient(hosted.model_copy(update={"temperature": 0.0}))._settings({}), messages, None, 0)
    assert sent["temperature"] == 0.0


def test_data_autorubric_wrote_validates_here() -> None:
    # AutoRubric 1.6.1's JSON of a single-judge criterion report and an ensemble criterion report
    report = CriterionReport.model_validate_json(
        '{"weight": 10.0, "requirement": "r", "name": null, "options": null, "scale_type": "ordinal", '
        '"aggregation": null, "verdict": "MET", "multi_choice_verdict": null, "reason": "ok", '
        '"shuffle_order": null, "error": null, "reasoning": null, "probabilities": {"MET": 0.9, "UNMET": 0.1}, '
        '"confidence": 0.8}')
    assert report.label_probabilities == {"MET": 0.9, "UNMET": 0.1} and report.confidence == pytest.approx(0.8)
    vote = {"judge_id": "default", "verdict": "MET", "reason": "ok", "weight": 1.0, "error": None,
            "reasoning": None, "probabilities": None, "confidence": None, "superseded": False}
    ensemble = EnsembleCriterionReport.model_validate(
        {"criterion": {"requirement": "r"}, "final_verdict": "MET", "final_reason": "default: ok",
         "votes": [vote], "agreement": 1.0, "error": None, "escalated": False})
    assert ensemble.votes[0].label_probabilities is None and ensemble.escalated is False
    assert JudgeVote.model_validate({**vote, "superseded": True}).superseded  # an AutoRubric cascade's vote reads
    with pytest.raises(ValidationError, match="does not hold its criterion's option labels"):
        MultiChoiceJudgeVote.model_validate({"judge_id": "j", "selected_index": 0, "selected_label": "a", "value": 1.0,
                                             "reason": "", "probabilities": {"0": 1.0}})
