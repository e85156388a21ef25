"""AutoRubric's rubric-improvement loop on scripted local judges (issue 53: ``improve_rubric``,
``ImprovementRunner``, ``revise_rubric``, ``validate_*``).

One scripted judge grades both the rubric (against the standalone or in-context meta-rubric)
and the validation items; a second scripted engine writes the revisions. The judge's policy:

- meta-rubric prompts: every positive meta-criterion MET and every negative one UNMET, except
  the first meta-criterion (``one_reading``), UNMET when the rubric under review contains the
  word ``XVAGUEX``: such a rubric has exactly one issue;
- item prompts: a criterion "rewards ALPHA" is MET on the ``alpha-item`` submissions, one that
  "rewards BETA" on the ``beta-item`` ones. Ground truth is MET on the alpha items, so the first
  kind correlates +1 with the expected scores and the second -1.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from autorubric_local import Criterion, CriterionVerdict, LLMConfig, Rubric, RubricDataset, ScriptedEngine
from autorubric_local.core.errors import InputError
from autorubric_local.engine import ScoreRequest
from autorubric_local.graders import CriterionGrader, JudgeSpec
from autorubric_local.meta import (
    ImprovementConfig,
    revise_rubric,
    ImprovementProgressDisplay,
    ImprovementRunner,
    IterationResult,
    get_in_context_meta_rubric,
    get_standalone_meta_rubric,
    improve_rubric,
    revise_rubric_held_out,
    validate_agreement,
    validate_ground_truth,
    validate_held_out,
)
from autorubric_local.meta.evaluate import INSTRUCTION
from autorubric_local.meta.revision import parse_revision

STANDALONE = get_standalone_meta_rubric()
FAILING = STANDALONE.rubric[0]  # one_reading
NEGATIVE_WORDS = ("negation", "boilerplate", "does not ask")

R0 = "XVAGUEX rewards ALPHA"  # one issue, correlation +1
R_WORSE = "XVAGUEX rewards BETA"  # one issue, correlation -1
R_GOOD = "Clearly rewards ALPHA"  # no issue, correlation +1


def verdict(met: bool, n_labels: int) -> list[float]:
    return [-0.01 if met else -9.0, -9.0 if met else -0.01] + [-20.0] * (n_labels - 2)


def policy(request: ScoreRequest) -> list[float]:
    prompt = request.prefix + request.suffix
    n = len(request.labels)
    if INSTRUCTION.strip() in prompt:  # a meta-rubric criterion judging the rubric
        negative = any(word in prompt for word in NEGATIVE_WORDS)
        if FAILING.requirement in prompt and "XVAGUEX" in prompt:
            return verdict(False, n)
        return verdict(not negative, n)
    if "rewards ALPHA" in prompt:
        return verdict("alpha-item" in prompt, n)
    if "rewards BETA" in prompt:
        return verdict("beta-item" in prompt, n)
    raise AssertionError(f"unexpected prompt: {prompt[-300:]}")


def rubric_of(requirement: str, name: str = "target") -> Rubric:
    return Rubric([Criterion(name=name, weight=5.0, requirement=requirement)])


def answer(*requirements: str, name: str = "target") -> str:
    return json.dumps({"criteria": [{"name": name, "weight": 5, "requirement": r} for r in requirements]})


def judges() -> tuple[LLMConfig, ScriptedEngine, LLMConfig, ScriptedEngine]:
    judge = ScriptedEngine("judge", policy=policy)
    writer = ScriptedEngine("writer")
    return LLMConfig(model="judge", engine=judge), judge, LLMConfig(model="writer", engine=writer), writer


def dataset(with_truth: bool = True, n: int = 4) -> RubricDataset:
    data = RubricDataset(prompt="Name a letter.", rubric=rubric_of(R0))
    for i in range(n):
        kind = "alpha" if i % 2 == 0 else "beta"
        truth = [CriterionVerdict.MET if kind == "alpha" else CriterionVerdict.UNMET] if with_truth else None
        data.add_item(submission=f"{kind}-item {i}", ground_truth=truth)
    return data


def config(judge: LLMConfig, writer: LLMConfig, **fields: object) -> ImprovementConfig:
    base: dict[str, object] = {"eval_llm": judge, "revision_llm": writer, "mode": "standalone",
                               "save_artifacts": False, "show_progress": False, "min_quality_score": 1.0}
    return ImprovementConfig(**{**base, **fields})  # type: ignore[arg-type]


def quality(issue: bool) -> float:
    """The standalone meta-rubric's own score of the policy's verdicts (the reference)."""
    verdicts = [CriterionVerdict.UNMET if c.weight < 0 or (issue and c is FAILING) else CriterionVerdict.MET
                for c in STANDALONE.rubric]
    return STANDALONE.compute_score(verdicts)


def prompts(engine: ScriptedEngine) -> list[str]:
    return [r.prefix for r in engine.history]


def run(rubric: Rubric, cfg: ImprovementConfig, task_prompt: str | None = None):  # noqa: ANN201
    return asyncio.run(ImprovementRunner(rubric, task_prompt, config=cfg).run())


# ---- the loop --------------------------------------------------------------------------------


def test_a_worse_revision_is_rejected_and_the_next_starts_from_the_last_accepted_rubric() -> None:
    judge, _, writer, writer_engine = judges()
    writer_engine.enqueue_generations(answer(R_WORSE), answer(R_GOOD))
    result = run(rubric_of(R0), config(judge, writer, validation_data=dataset()))
    its = result.iterations
    assert [it.rubric.rubric[0].requirement for it in its] == [R0, R_WORSE, R_GOOD]
    assert [it.agreement for it in its] == pytest.approx([1.0, -1.0, 1.0])
    assert [it.accepted for it in its] == [True, False, True]
    assert its[1].rejection_reason is not None and "100.0%" in its[1].rejection_reason
    assert [it.quality_score for it in its] == pytest.approx([quality(True), quality(True), quality(False)])
    assert [len(it.issues) for it in its] == [1, 1, 0]
    assert its[2].issues_fixed == ["one_reading"] and its[2].issues_introduced == []
    assert result.convergence_reason == "no_issues"
    assert result.best_iteration == 2 and result.best_rubric is its[2].rubric is result.final_rubric
    assert result.total_completion_cost is None  # local judges cost nothing
    # both revisions started from R0: the rejected rubric is never revised further
    first, second = prompts(writer_engine)
    assert R0 in first and R0 in second and R_WORSE not in second
    assert "rejected: agreement fell" in second  # the history tells the reviser why
    assert "correlation 1.00" in first and "correlation -1.00" in second


def test_an_unparseable_revision_is_recorded_on_the_iteration_and_stops_the_loop() -> None:
    judge, _, writer, writer_engine = judges()
    writer_engine.enqueue_generations('Sure! Here is a better rubric: [{"weight": 5}]')
    original = rubric_of(R0)
    result = run(original, config(judge, writer))
    assert len(result.iterations) == 1
    failed = result.iterations[0]
    assert failed.revision_error is not None and failed.revision_error.startswith("revision:")
    assert result.convergence_reason == "revision_failed"
    assert result.best_rubric is original and result.best_iteration == 0


@pytest.mark.parametrize("text", [
    answer(""),  # an empty requirement is not a rubric
    json.dumps({"criteria": []}),
    json.dumps({"criteria": [{"name": "a", "weight": 5, "requirement": "x", "extra": 1}]}),
    '{"criteria": [{"name": "a", "weight": 5, "requirement": "x"}]} and more',
])
def test_a_revision_is_parsed_strictly(text: str) -> None:
    with pytest.raises(InputError, match="^revision:"):
        parse_revision(text, rubric_of(R0))


def test_a_parsed_revision_keeps_the_guidelines_and_drops_empty_names() -> None:
    rubric = Rubric([Criterion(weight=1.0, requirement="x")], guidelines="Be strict.")
    revised = parse_revision(answer("Says y", name=""), rubric)
    assert revised.guidelines == "Be strict." and revised.rubric[0].name is None
    assert revised.rubric[0].requirement == "Says y" and revised.rubric[0].weight == 5.0


@pytest.mark.parametrize(("max_iterations", "reason", "n_iterations"), [(2, "max_iterations", 2),
                                                                        (10, "score_plateau", 3)])
def test_the_loop_stops_at_max_iterations_or_a_plateau(max_iterations: int, reason: str, n_iterations: int) -> None:
    judge, _, writer, writer_engine = judges()
    writer_engine.enqueue_generations(*[answer(R0)] * 10)  # the same issue every time: a flat score
    result = run(rubric_of(R0), config(judge, writer, max_iterations=max_iterations))
    assert result.convergence_reason == reason
    assert [it.iteration for it in result.iterations] == list(range(n_iterations))
    assert len(writer_engine.history) == n_iterations - 1  # no revision after the last measurement


def test_a_convergence_fn_replaces_the_stopping_rules() -> None:
    judge, _, writer, writer_engine = judges()
    writer_engine.enqueue_generations(*[answer(R_GOOD)] * 5)
    seen: list[int] = []

    def stop_at_second(current: IterationResult, every: list[IterationResult]) -> str | None:
        seen.append(len(every))
        assert every[-1] is current
        return "custom" if current.iteration == 2 else None

    result = run(rubric_of(R0), config(judge, writer, convergence_fn=stop_at_second))
    assert result.convergence_reason == "custom"  # "no_issues" at iteration 1 did not stop it
    assert seen == [1, 2, 3]


def test_improve_rubric_end_to_end_in_context_with_artifacts(tmp_path: Path) -> None:
    in_context = get_in_context_meta_rubric()
    failing = in_context.rubric[0]

    def in_context_policy(request: ScoreRequest) -> list[float]:
        prompt, n = request.prefix + request.suffix, len(request.labels)
        negative = any(word in prompt for word in NEGATIVE_WORDS) or in_context.rubric[-1].requirement in prompt \
            or in_context.rubric[-2].requirement in prompt
        if failing.requirement in prompt and "XVAGUEX" in prompt:
            return verdict(False, n)
        return verdict(not negative, n)

    judge = ScriptedEngine("judge", policy=in_context_policy)
    writer = ScriptedEngine("writer")
    writer.enqueue_generations(answer(R_GOOD))
    result = asyncio.run(improve_rubric(
        rubric_of(R0), "Name a letter of the alphabet.", eval_llm=LLMConfig(model="judge", engine=judge),
        revision_llm=LLMConfig(model="writer", engine=writer), artifacts_dir=tmp_path / "run", show_progress=False))
    assert result.convergence_reason == "no_issues"
    assert [len(it.issues) for it in result.iterations] == [1, 0]
    assert result.best_rubric.rubric[0].requirement == R_GOOD
    (revision_prompt,) = prompts(writer)
    assert "Name a letter of the alphabet." in revision_prompt and json.dumps(failing.name) in revision_prompt
    folder = tmp_path / "run"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["convergence_reason"] == "no_issues" and summary["best_iteration"] == 1
    assert summary["final_rubric"] == [{"name": "target", "weight": 5.0, "requirement": R_GOOD}]
    first = json.loads((folder / "iter-00.json").read_text())
    assert first["revision"]["llm_response"] == answer(R_GOOD) and first["accepted"] is True
    assert (folder / "rubric-iter-01.json").exists() and (folder / "eval-iter-00.html").exists()


def test_held_out_strategy_rewords_until_accuracy_is_met_under_a_fixed_count_schema() -> None:
    judge, _, writer, writer_engine = judges()
    writer_engine.enqueue_generations(answer("Now rewards ALPHA"))
    data = dataset()
    result = run(rubric_of("rewards BETA"), config(judge, writer, strategy="held_out", validation_data=data))
    assert [it.quality_score for it in result.iterations] == [0.0, 1.0]
    assert result.convergence_reason == "held_out_accuracy_met" and result.best_iteration == 1
    diagnostics = result.iterations[0].held_out_diagnostics
    assert diagnostics is not None and diagnostics.per_criterion[0].false_positive_rate == 1.0
    (request,) = writer_engine.history
    assert request.pattern is not None
    assert re.fullmatch(request.pattern, answer("a")) and not re.fullmatch(request.pattern, answer("a", "b"))


def test_a_held_out_revision_may_not_rename_a_criterion() -> None:
    judge, _, writer, writer_engine = judges()
    writer_engine.enqueue_generations(answer("rewards ALPHA", name="renamed"))
    cfg = config(judge, writer, strategy="held_out", validation_data=dataset())
    with pytest.raises(InputError, match="name changed"):
        asyncio.run(revise_rubric_held_out(rubric_of("rewards BETA"), None, "", "", cfg))


def test_a_real_engine_decodes_the_revision_under_the_schema_and_a_cut_answer_is_an_input_error(
        tiny_engine: Any) -> None:
    """The tiny random model writes under the schema's regex (so its answer starts as the
    schema says) until max_tokens cuts it: an InputError, never a rubric made of the part."""
    judge, _, _, _ = judges()
    writer = LLMConfig(model="tiny", engine=tiny_engine, max_tokens=40)
    cfg = config(judge, writer, revision_system_prompt="Rewrite.", revision_user_prompt_template="{original_criteria}")
    capture: dict = {}
    with pytest.raises(InputError, match="^revision:.*max_tokens"):
        asyncio.run(revise_rubric(rubric_of(R0), None, [], "", "", cfg, _capture=capture))
    assert re.match(r'\{ ?"criteria" ?: ?\[ ?\{ ?"name" ?: ?"', capture["llm_response"])


def test_a_failing_revision_model_is_recorded_and_stops_the_loop(tiny_engine: Any) -> None:
    judge, _, _, _ = judges()
    writer = LLMConfig(model="tiny", engine=tiny_engine)  # the default prompt overflows its 512-token context
    result = run(rubric_of(R0), config(judge, writer))
    assert result.convergence_reason == "revision_failed" and len(result.iterations) == 1
    assert "context length" in (result.iterations[0].revision_error or "")


# ---- validation steps ------------------------------------------------------------------------


def test_validate_ground_truth_uses_one_minus_mae_below_three_items_and_none_for_constant_scores() -> None:
    judge, _, _, _ = judges()
    grader = CriterionGrader(llm_config=judge)
    two = dataset(n=2)
    metric, per_item, cost = asyncio.run(validate_ground_truth(rubric_of("rewards BETA"), two, [1.0, 0.0], grader))
    assert per_item == [(0.0, 1.0), (1.0, 0.0)] and metric == pytest.approx(0.0) and cost is None
    four = dataset(n=4)
    constant = Rubric([Criterion(name="target", weight=5.0, requirement="rewards ALPHA, as an alpha-item")])
    # MET on every item (the criterion text itself says alpha-item), so the scores are constant
    metric, _, _ = asyncio.run(validate_ground_truth(constant, four, [1.0, 0.0, 1.0, 0.0], grader))
    assert metric is None


def test_validate_held_out_counts_by_hand_with_cannot_assess_excluded() -> None:
    judge, _, _, _ = judges()
    data = RubricDataset(prompt="p", rubric=rubric_of("rewards ALPHA"))
    data.add_item(submission="alpha-item 0", ground_truth=[CriterionVerdict.MET])  # TP
    data.add_item(submission="beta-item 1", ground_truth=[CriterionVerdict.MET])  # FN
    data.add_item(submission="beta-item 2", ground_truth=[CriterionVerdict.UNMET])  # TN
    data.add_item(submission="alpha-item 3", ground_truth=[CriterionVerdict.CANNOT_ASSESS])  # excluded
    result = asyncio.run(validate_held_out(rubric_of("rewards ALPHA"), data, CriterionGrader(llm_config=judge)))
    (cr,) = result.per_criterion
    assert cr.n_samples == 3 and cr.accuracy == pytest.approx(2 / 3)
    assert cr.false_positive_rate == 0.0 and cr.false_negative_rate == pytest.approx(0.5)
    assert cr.coverage == pytest.approx(0.75) and cr.ca_rate == pytest.approx(0.25)
    assert cr.confusion_matrix is not None and cr.confusion_matrix.matrix == [[1, 1], [0, 1]]
    assert [e.item_index for e in cr.disagreement_exemplars] == [1]
    assert [e.item_index for e in cr.agreement_exemplars] == [0, 2]
    # kappa of truth (1, 1, 0) against judge (1, 0, 0): po = 2/3, pe = 2/3*1/3 + 1/3*2/3 = 4/9
    assert cr.kappa == pytest.approx((2 / 3 - 4 / 9) / (1 - 4 / 9))
    assert result.mean_accuracy == pytest.approx(2 / 3)


def test_validate_agreement_averages_the_ensembles_agreement() -> None:
    always = ScriptedEngine("always", policy=lambda r: verdict(True, len(r.labels)))
    alpha_only = ScriptedEngine("alpha", policy=policy)
    specs = [JudgeSpec(LLMConfig(model="always", engine=always), "always"),
             JudgeSpec(LLMConfig(model="alpha", engine=alpha_only), "alpha")]
    mean, per_criterion, cost = asyncio.run(validate_agreement(
        rubric_of("rewards ALPHA"), ["alpha-item 0", "beta-item 1"], specs))
    # the judges agree on the alpha item and split on the beta one
    assert per_criterion == {"target": pytest.approx(0.75)} and mean == pytest.approx(0.75) and cost is None
    with pytest.raises(InputError, match="judges"):
        asyncio.run(validate_agreement(rubric_of("x"), ["s"], specs[:1]))


# ---- settings and display ------------------------------------------------------------------


def test_the_settings_and_the_runner_refuse_bad_input_naming_the_field() -> None:
    judge, _, writer, _ = judges()
    with pytest.raises(InputError, match="'max_iterations'"):
        config(judge, writer, max_iterations=0)
    with pytest.raises(InputError, match="'strategy'"):
        config(judge, writer, strategy="magic")
    with pytest.raises(InputError, match="'cannot_assess'"):
        config(judge, writer, cannot_assess="ignore")
    with pytest.raises(InputError, match="'task_prompt'"):
        ImprovementRunner(rubric_of(R0), config=config(judge, writer, mode="in_context"))
    with pytest.raises(InputError, match="'eval_llm'"):  # items without ground truth need an ensemble
        ImprovementRunner(rubric_of(R0), config=config(judge, writer, validation_data=dataset(with_truth=False)))
    with pytest.raises(InputError, match="'validation_data'"):
        ImprovementRunner(rubric_of(R0), config=config(judge, writer, strategy="held_out"))
    with pytest.raises(InputError, match="'config'"):
        ImprovementRunner(rubric_of(R0))
    with pytest.raises(InputError, match="revision_llm"):
        asyncio.run(improve_rubric(rubric_of(R0), eval_llm=judge))


def test_the_progress_display_prints_only_when_enabled() -> None:
    it = IterationResult(iteration=0, rubric=rubric_of(R0), quality_score=0.5, agreement=None,
                         per_criterion_agreement=None, issues=[], issues_fixed=[], issues_introduced=[],
                         accepted=False, rejection_reason="worse", quality_report=None, token_usage=None,
                         completion_cost=None)
    for enabled in (False, True):
        out = io.StringIO()
        display = ImprovementProgressDisplay(enabled=enabled, console=Console(file=out, width=120))
        display.begin_iteration(0, 3, 2)
        display.advance("validating")
        display.end_iteration()
        display.log_iteration(it)
        display.log_rubric(it.rubric, 0)
        display.print_summary([it], "max_iterations", 0.0, None)
        text = out.getvalue()
        assert (text == "") if not enabled else ("iteration 0: quality 50.0%, rejected (worse)" in text
                                                 and "stopped: max_iterations" in text and R0 in text)
