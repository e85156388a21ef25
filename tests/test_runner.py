"""EvalRunner / evaluate / load_result / fill_ground_truth with a ScriptedEngine: results, timing,
chunking, run-time failures, fail_fast, refusal of changed content, malformed datasets."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.engine import EngineCapabilities, LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import (
    EvalAbortedError,
    EvalConfig,
    EvalResult,
    EvalRunner,
    evaluate,
    fill_ground_truth,
    load_manifest,
    load_result,
)
from autorubric_local.runner.results import percentile, timing_stats
from autorubric_local.store import open_db

sys.path.insert(0, str(Path(__file__).parent))
import crash_worker


def grader(seed: int | None = 11, policy: Any = None) -> CriterionGrader:
    engine = ScriptedEngine(policy=policy or crash_worker.make_policy(0.0))
    return CriterionGrader(LLMConfig(model="scripted", engine=engine), seed=seed)


def config(tmp_path: Path, **kwargs: Any) -> EvalConfig:
    return EvalConfig(**{"db_path": tmp_path / "r.sqlite", "experiment_name": "t", "show_progress": False, **kwargs})


def run(dataset: RubricDataset, g: CriterionGrader, cfg: EvalConfig) -> EvalResult:
    return EvalRunner(dataset, g, cfg).run_sync()


# ------------------------------------------------------------------------------ results


def test_evaluate_returns_every_item(tmp_path: Path) -> None:
    dataset = crash_worker.build_dataset(5)
    result = asyncio.run(evaluate(dataset, grader(), experiments_dir=tmp_path, experiment_name="e",
                                  show_progress=False))
    assert (result.total_items, result.successful_items, result.failed_items) == (5, 5, 0)
    assert [r.item_idx for r in result.item_results] == list(range(5))
    assert [r.item_id for r in result.item_results] == [f"item-{i}" for i in range(5)]
    assert all(r.item == dataset[r.item_idx] for r in result.item_results)
    assert all(r.report.score is not None for r in result.item_results)
    assert result.total_judgments == 15 and result.errors == []
    assert result.total_token_usage is not None and result.total_token_usage.prompt_tokens > 0
    assert result.timing_stats.items_per_second > 0 and result.timing_stats.judgments_per_second > 0
    assert result.status == "finished" and result.experiment_name == "e"
    assert (tmp_path / "e" / "results.sqlite").is_file()
    loaded = EvalResult.from_experiment(tmp_path / "e")
    assert [r.report for r in loaded.item_results] == [r.report for r in result.item_results]


def test_auto_generated_name(tmp_path: Path) -> None:
    dataset = crash_worker.build_dataset(1)
    result = run(dataset, grader(), EvalConfig(experiments_dir=tmp_path, show_progress=False))
    assert result.experiment_name.startswith("crash-")
    assert (tmp_path / result.experiment_name / "results.sqlite").is_file()


def test_load_result_rebuilds_dataset_with_ground_truth(tmp_path: Path) -> None:
    dataset = crash_worker.build_dataset(4)
    result = run(dataset, grader(), config(tmp_path))
    loaded, rebuilt = load_result(tmp_path / "r.sqlite", "t")
    assert rebuilt.to_dict() == dataset.to_dict()
    assert rebuilt[0].ground_truth == [CriterionVerdict.MET, CriterionVerdict.UNMET, "Basic"]
    assert [r.report for r in loaded.item_results] == [r.report for r in result.item_results]
    assert loaded.timing_stats == result.timing_stats
    manifest = load_manifest(tmp_path / "r.sqlite")
    assert (manifest.total_items, manifest.completed_items, manifest.status) == (4, 4, "finished")
    assert manifest.content_hash.startswith("sha256:v1:")


def test_load_result_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no results database"):
        load_result(tmp_path / "absent.sqlite")
    run(crash_worker.build_dataset(1), grader(), config(tmp_path))
    with pytest.raises(InputError, match=r"no run named 'nope' \(runs: 't'\)"):
        load_result(tmp_path / "r.sqlite", "nope")


def test_chunks_follow_the_judgment_budget(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=crash_worker.make_policy(0.0))
    calls: list[int] = []
    original = engine.score
    engine.score = lambda requests: calls.append(len(requests)) or original(requests)  # type: ignore[method-assign]
    g = CriterionGrader(LLMConfig(model="scripted", engine=engine), seed=1)
    chunks: list[int] = []
    EvalRunner(crash_worker.build_dataset(7), g, config(tmp_path, chunk_judgments=7, chunk_seconds=None),
               on_chunk=lambda c: chunks.append(c.items)).run_sync()
    assert chunks == [2, 2, 2, 1] and calls == [6, 6, 6, 3]
    chunks.clear()
    EvalRunner(crash_worker.build_dataset(7), g, config(tmp_path, experiment_name="u", max_concurrent_items=3,
                                                        chunk_seconds=None),
               on_chunk=lambda c: chunks.append(c.items)).run_sync()
    assert chunks == [3, 3, 1]


def test_chunks_also_follow_the_time_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: a slow judge makes short chunks. On a clock that advances 1 s per judgment
    (3 judgments an item), a 10 s budget gives a first chunk of one item, then chunks of 3
    items (9 judgments, within 10 s), never the 512-judgment default; every item is still
    graded once and the result is the same as size-only chunks."""
    from autorubric_local.runner import chunking

    now = [0.0]
    monkeypatch.setattr(chunking.time, "monotonic", lambda: now[0])

    def slow(request: ScoreRequest) -> list[float]:
        now[0] += 1.0
        return crash_worker.make_policy(0.0)(request)

    chunks: list[int] = []
    timed = EvalRunner(crash_worker.build_dataset(10), grader(policy=slow), config(tmp_path, chunk_seconds=10.0),
                       on_chunk=lambda c: chunks.append(c.items)).run_sync()
    assert chunks == [1, 3, 3, 3]
    by_size = run(crash_worker.build_dataset(10), grader(policy=crash_worker.make_policy(0.0)),
                  config(tmp_path, experiment_name="u", chunk_seconds=None))
    assert [r.report for r in timed.item_results] == [r.report for r in by_size.item_results]


def test_same_result_whatever_the_chunking(tmp_path: Path) -> None:
    one = run(crash_worker.build_dataset(6), grader(), config(tmp_path, experiment_name="a", chunk_judgments=1))
    all_ = run(crash_worker.build_dataset(6), grader(), config(tmp_path, experiment_name="b"))
    assert [r.report for r in one.item_results] == [r.report for r in all_.item_results]


def test_two_runs_never_mix_rows(tmp_path: Path) -> None:
    a = run(crash_worker.build_dataset(3), grader(), config(tmp_path, experiment_name="a"))
    b = run(crash_worker.build_dataset(2), grader(seed=5), config(tmp_path, experiment_name="b"))
    db = sqlite_utils.Database(tmp_path / "r.sqlite")
    assert db["judgments"].count_where("run_id = ?", [a.run_id]) == 9
    assert db["judgments"].count_where("run_id = ?", [b.run_id]) == 6
    assert len(load_result(tmp_path / "r.sqlite", "a")[0].item_results) == 3


def test_runs_record_which_engine_path_each_judge_ran(tmp_path: Path) -> None:
    declared = ScriptedEngine(model_id="declared", policy=crash_worker.make_policy(0.0))
    declared.attention_path = "packed-trie (sdpa, full attention)"  # type: ignore[attr-defined]
    declared.capabilities = EngineCapabilities("transformers", describes=frozenset(
        {"attention_path", "prompt_format", "score_method", "dtype"}))
    declared.prompt_format = "completion"  # type: ignore[attr-defined]
    declared.score_method = "prompt_logprobs"  # type: ignore[attr-defined]
    declared.dtype_name = "bfloat16"  # type: ignore[attr-defined]
    plain = ScriptedEngine(model_id="plain", policy=crash_worker.make_policy(0.0))
    g = CriterionGrader(judges=[JudgeSpec(LLMConfig(model="scripted-a", engine=declared), "a"),
                                JudgeSpec(LLMConfig(model="scripted-b", engine=plain), "b", weight=2.0)], seed=1)
    result = run(crash_worker.build_dataset(2), g, config(tmp_path))
    row = sqlite_utils.Database(tmp_path / "r.sqlite")["runs"].get(result.run_id)
    assert json.loads(row["judges_json"]) == [
        {"judge_id": "a", "model": "scripted-a", "model_id": "declared", "weight": 1.0,
         "backend": "transformers", "attention_path": "packed-trie (sdpa, full attention)",
         "prompt_format": "completion", "score_method": "prompt_logprobs", "dtype": "bfloat16", "fallbacks": []},
        {"judge_id": "b", "model": "scripted-b", "model_id": "plain", "weight": 2.0,
         "backend": None, "attention_path": None, "prompt_format": None, "score_method": None, "dtype": None,
         "fallbacks": []},
    ]


def test_a_fallback_an_engine_takes_during_the_run_is_recorded_with_its_judge(tmp_path: Path) -> None:
    """An engine that leaves a faster path mid-run (:mod:`autorubric_local.engine.transformers.paths`) has the
    reason in the run's judges record once the chunk it happened in is committed."""
    scripted = crash_worker.make_policy(0.0)
    reports_fallbacks = EngineCapabilities(describes=frozenset({"fallbacks"}))
    falls_back = ScriptedEngine(model_id="falls-back", capabilities=reports_fallbacks, policy=lambda request: (
        falls_back.fallbacks.append("batched path failed: IndexError: x; scoring one prefix group at a time")
        if "Submission 2:" in request.prefix and not falls_back.fallbacks else None) or scripted(request))
    falls_back.fallbacks = []  # type: ignore[attr-defined]
    steady = ScriptedEngine(model_id="steady", policy=scripted, capabilities=reports_fallbacks)
    steady.fallbacks = []  # type: ignore[attr-defined]
    g = CriterionGrader(judges=[JudgeSpec(LLMConfig(model="scripted-a", engine=falls_back), "a"),
                                JudgeSpec(LLMConfig(model="scripted-b", engine=steady), "b")], seed=1)
    dataset = crash_worker.build_dataset(4)
    assert sum("Submission 2:" in item.submission for item in dataset.items) == 1
    result = run(dataset, g, config(tmp_path, chunk_judgments=1))
    row = sqlite_utils.Database(tmp_path / "r.sqlite")["runs"].get(result.run_id)
    assert [judge["fallbacks"] for judge in json.loads(row["judges_json"])] == [
        ["batched path failed: IndexError: x; scoring one prefix group at a time"], []]


def test_fallbacks_recorded_before_a_stop_survive_the_resume(tmp_path: Path) -> None:
    """A resumed run loads fresh engines, which have left no path yet: the judges record keeps the
    reasons recorded before the stop and adds those taken after it (it used to be rewritten from
    the fresh engines, so the earlier fallback was lost)."""
    from autorubric_local.runner import EvalInterruptedError

    scripted = crash_worker.make_policy(0.0)
    reports_fallbacks = EngineCapabilities(describes=frozenset({"fallbacks"}))

    def engine(at: str, reason: str) -> ScriptedEngine:
        built = ScriptedEngine(model_id="falls-back", capabilities=reports_fallbacks, policy=lambda request: (
            built.fallbacks.append(reason) if at in request.prefix and reason not in built.fallbacks else None
        ) or scripted(request))
        built.fallbacks = []  # type: ignore[attr-defined]
        return built

    def grader_with(judge: ScriptedEngine) -> CriterionGrader:
        return CriterionGrader(judges=[JudgeSpec(LLMConfig(model="scripted-a", engine=judge), "a")], seed=1)

    first, second = "batched path failed: IndexError: x", "out of memory: batch halved to 2"
    cfg = config(tmp_path, chunk_judgments=1)
    runner = EvalRunner(crash_worker.build_dataset(4), grader_with(engine("Submission 1:", first)), cfg,
                        on_chunk=lambda chunk: runner.stop() if chunk.chunk_index == 1 else None)
    with pytest.raises(EvalInterruptedError, match="stopped after 2 of 4 items"):
        runner.run_sync()
    row = sqlite_utils.Database(tmp_path / "r.sqlite")["runs"].get(runner_run_id(tmp_path))
    assert json.loads(row["judges_json"])[0]["fallbacks"] == [first]

    result = run(crash_worker.build_dataset(4), grader_with(engine("Submission 3:", second)), cfg)
    assert result.resumed_items == 2
    row = sqlite_utils.Database(tmp_path / "r.sqlite")["runs"].get(result.run_id)
    assert json.loads(row["judges_json"])[0]["fallbacks"] == [first, second]


def runner_run_id(tmp_path: Path) -> str:
    """The id of the one run in ``tmp_path``'s database."""
    (run_id,) = [r["id"] for r in sqlite_utils.Database(tmp_path / "r.sqlite")["runs"].rows]
    return run_id


def test_progress_bar_runs(tmp_path: Path) -> None:
    result = run(crash_worker.build_dataset(2), grader(), config(tmp_path, show_progress=True,
                                                                 progress_style="detailed"))
    assert result.successful_items == 2


# ------------------------------------------------------------------------------ failures


def poison_policy(request: ScoreRequest) -> Any:
    if "poison" in request.prefix:
        return "infrastructure: prompt longer than the judge's context"
    return crash_worker.make_policy(0.0)(request)


def dataset_with_poison() -> RubricDataset:
    dataset = crash_worker.build_dataset(4)
    dataset.items[2] = replace(dataset.items[2], submission="poison " * 5)
    return dataset


def test_item_failing_at_run_time_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    result = run(dataset_with_poison(), grader(policy=poison_policy), config(tmp_path))
    assert (result.successful_items, result.failed_items) == (3, 1)
    assert result.errors[0][0] == 2 and "context" in result.errors[0][1]
    assert result.item_results[2].report.score is None


def test_engine_raising_fails_only_that_item(tmp_path: Path) -> None:
    def raising(request: ScoreRequest) -> Any:
        if "poison" in request.prefix:
            raise RuntimeError("CUDA out of memory")
        return crash_worker.make_policy(0.0)(request)

    result = run(dataset_with_poison(), grader(policy=raising), config(tmp_path))
    assert [index for index, _ in result.errors] == [2]
    assert "RuntimeError: CUDA out of memory" in result.errors[0][1]
    assert result.successful_items == 3


def test_failed_items_are_graded_again_on_resume(tmp_path: Path) -> None:
    """A transient failure (here: the engine refuses item 2) is retried by the next session."""
    def raising(request: ScoreRequest) -> Any:
        if "poison" in request.prefix:
            raise RuntimeError("CUDA out of memory")
        return crash_worker.make_policy(0.0)(request)

    first = run(dataset_with_poison(), grader(policy=raising), config(tmp_path))
    assert [index for index, _ in first.errors] == [2]
    second = run(dataset_with_poison(), grader(), config(tmp_path))
    assert (second.successful_items, second.failed_items, second.resumed_items) == (4, 0, 3)
    fresh = run(dataset_with_poison(), grader(), config(tmp_path / "fresh"))
    assert [r.report.score for r in second.item_results] == [r.report.score for r in fresh.item_results]
    rows = list(open_db(tmp_path / "r.sqlite")["judgments"].rows_where("item_id = ?", ["item-2"]))
    assert len(rows) == len(dataset_with_poison().rubric.rubric) and all(r["error"] is None for r in rows)


def test_fail_fast_stops_after_committing(tmp_path: Path) -> None:
    with pytest.raises(EvalAbortedError, match=r"item 2 \('item-2'\) failed"):
        run(dataset_with_poison(), grader(policy=poison_policy), config(tmp_path, fail_fast=True, chunk_judgments=3))
    manifest = load_manifest(tmp_path / "r.sqlite")
    assert manifest.status == "failed" and manifest.completed_items == 3


# ------------------------------------------------------------------------------ resume checks


def test_changed_content_is_refused(tmp_path: Path) -> None:
    dataset = crash_worker.build_dataset(3)
    run(dataset, grader(), config(tmp_path))
    with pytest.raises(InputError, match=r"grader settings changed: seed \(11 -> 12\).*--no-resume"):
        run(dataset, grader(seed=12), config(tmp_path))
    edited = crash_worker.build_dataset(3)
    edited.items[1] = replace(edited.items[1], submission="changed")
    with pytest.raises(InputError, match=r"item 1 \('item-1'\) changed"):
        run(edited, grader(), config(tmp_path))
    new_rubric = RubricDataset(prompt=dataset.prompt, rubric=Rubric(list(dataset.rubric.rubric[:2])),
                               items=[replace(i, ground_truth=None) for i in dataset.items])
    with pytest.raises(InputError, match="item 0 .* changed"):
        run(new_rubric, grader(), config(tmp_path))
    other_prompt = replace(dataset, prompt="Another question")
    with pytest.raises(InputError, match="cannot be resumed"):
        run(other_prompt, grader(), config(tmp_path))
    fresh = run(dataset, grader(seed=12), config(tmp_path, resume=False))
    assert fresh.resumed_items == 0 and fresh.successful_items == 3
    assert len(load_manifest(tmp_path / "r.sqlite", "t").run_id) > 0


def test_changed_ground_truth_resumes_and_is_refreshed(tmp_path: Path) -> None:
    dataset = crash_worker.build_dataset(3)
    run(dataset, grader(), config(tmp_path))
    relabelled = crash_worker.build_dataset(3)
    relabelled.items[0] = replace(relabelled.items[0], ground_truth=["UNMET", "UNMET", "Expert"])
    result = run(relabelled, grader(), config(tmp_path))
    assert result.resumed_items == 3
    _, stored = load_result(tmp_path / "r.sqlite")
    assert stored[0].ground_truth == [CriterionVerdict.UNMET, CriterionVerdict.UNMET, "Expert"]


def test_generated_seed_is_adopted_on_resume(tmp_path: Path) -> None:
    first = grader(seed=None)
    run(crash_worker.build_dataset(2), first, config(tmp_path))
    second = grader(seed=None)
    assert not second.seed_given
    result = run(crash_worker.build_dataset(2), second, config(tmp_path))
    assert second.seed == first.seed and result.resumed_items == 2


# ------------------------------------------------------------------------------ bad input


def test_malformed_dataset_is_refused_before_any_work(tmp_path: Path) -> None:
    dataset = crash_worker.build_dataset(3)
    dataset.items.append(DataItem(submission="no rubric anywhere", id="item-1"))
    dataset.items.append("not an item")  # type: ignore[arg-type]
    no_rubric = RubricDataset(prompt=None, rubric=None,
                              items=[DataItem("x", rubric=Rubric([Criterion(name="c", weight=1.0, requirement="r")]))])
    no_rubric.items.append(DataItem("y"))
    with pytest.raises(InputError) as info:
        run(dataset, grader(), config(tmp_path))
    message = str(info.value)
    assert "dataset 'crash': item 3: field 'id': key 'item-1' already used by item 1" in message
    assert "item 4: expected a DataItem, got str" in message
    with pytest.raises(InputError, match="item 1: field 'rubric': the item has no rubric"):
        run(no_rubric, grader(), config(tmp_path))
    assert not (tmp_path / "r.sqlite").exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_judgments": 0}, "EvalConfig.chunk_judgments: expected an integer >= 1, got 0"),
        ({"max_concurrent_items": -2}, "EvalConfig.max_concurrent_items: expected an integer >= 1 or None, got -2"),
        ({"progress_style": "fancy"}, "EvalConfig.progress_style: expected 'simple' or 'detailed', got 'fancy'"),
        ({"experiment_name": "a/b"}, "EvalConfig.experiment_name: expected letters"),
        ({"resume": "yes"}, "EvalConfig.resume: expected a boolean, got 'yes'"),
    ],
)
def test_config_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        EvalConfig(**kwargs)


# ------------------------------------------------------------------------------ timing


def test_timing_stats_formulas() -> None:
    stats = timing_stats([1.0, 2.0, 3.0, 4.0], wall_seconds=2.0, judgments=10)
    assert stats.mean_item_duration_seconds == 2.5
    assert stats.p50_item_duration_seconds == 2.5
    assert stats.p95_item_duration_seconds == pytest.approx(3.85)
    assert (stats.min_item_duration_seconds, stats.max_item_duration_seconds) == (1.0, 4.0)
    assert (stats.items_per_second, stats.judgments_per_second) == (2.0, 5.0)
    assert timing_stats([], 0.0, 0).items_per_second == 0.0
    assert percentile([5.0], 95) == 5.0


# ------------------------------------------------------------------------------ ground truth


def test_fill_ground_truth(tmp_path: Path) -> None:
    dataset = crash_worker.build_dataset(6)  # items 0 and 3 have ground truth
    dataset.items[4] = replace(dataset.items[4], submission="poison", prompt="own prompt")
    before = dataset.to_dict()
    labelled = asyncio.run(fill_ground_truth(dataset, grader(policy=poison_policy), show_progress=False))
    assert dataset.to_dict() == before  # original unchanged
    assert [i.submission for i in labelled] == [dataset[i].submission for i in (0, 1, 2, 3, 5)]  # failed item dropped
    assert labelled[0].ground_truth == dataset[0].ground_truth  # kept without force
    for item in labelled:
        assert isinstance(item.ground_truth[0], CriterionVerdict)
        assert item.ground_truth[2] in {"Vague", "Basic", "Expert"}
    forced = asyncio.run(fill_ground_truth(dataset, grader(policy=poison_policy), force=True, show_progress=False,
                                           max_concurrent_items=2))
    result = run(crash_worker.build_dataset(6), grader(), config(tmp_path))
    report = result.item_results[0].report.report
    expected = [report[0].final_verdict, report[1].final_verdict, report[2].final_multi_choice_verdict.selected_label]
    assert forced[0].ground_truth == expected



@pytest.mark.parametrize("setting", ["normalize", "cannot_assess_config", "length_penalty", "count_fn"])
def test_changed_scoring_settings_are_refused(tmp_path: Path, setting: str) -> None:
    # Scoring settings change every stored item score: a resume under new ones would mix them.
    from autorubric_local.core.penalty import LengthPenalty
    from autorubric_local.core.types import CannotAssessConfig, CannotAssessStrategy

    values = {"normalize": False, "cannot_assess_config": CannotAssessConfig(strategy=CannotAssessStrategy.ZERO),
              "length_penalty": LengthPenalty(free_budget=1, max_cap=5, penalty_at_cap=0.5),
              "count_fn": LengthPenalty(count_fn=len)}  # a callable field must not break the hash
    dataset = crash_worker.build_dataset(2)
    run(dataset, grader(), config(tmp_path))
    engine = ScriptedEngine(policy=crash_worker.make_policy(0.0))
    name = "length_penalty" if setting == "count_fn" else setting
    changed = CriterionGrader(LLMConfig(model="scripted", engine=engine), seed=11, **{name: values[setting]})
    with pytest.raises(InputError, match=f"grader settings changed: {name} "):
        run(dataset, changed, config(tmp_path))


def test_a_finished_run_is_read_back_without_loading_a_judge(tmp_path: Path) -> None:
    dataset = crash_worker.build_dataset(3)
    first = run(dataset, grader(), config(tmp_path))
    fresh = grader()
    runner = EvalRunner(dataset, fresh, config(tmp_path))
    again = runner.finished_result()
    assert again is not None and again.resumed_items == 3
    assert [r.report for r in again.item_results] == [r.report for r in first.item_results]
    assert fresh._engines == {}  # noqa: SLF001 - no engine was built
    assert EvalRunner(dataset, grader(), config(tmp_path, resume=False)).finished_result() is None
    assert EvalRunner(dataset, grader(), config(tmp_path, experiment_name="other")).finished_result() is None
    relabelled = crash_worker.build_dataset(3)
    relabelled.items[0] = replace(relabelled.items[0], ground_truth=["UNMET", "UNMET", "Expert"])
    assert EvalRunner(relabelled, grader(), config(tmp_path)).finished_result() is None  # resume refreshes it


def test_a_finished_run_with_a_failed_item_is_not_read_back(tmp_path: Path) -> None:
    def flaky(request: ScoreRequest) -> list[float]:
        if "submission 1" in request.prefix.lower():
            raise RuntimeError("judge crashed")
        return crash_worker.make_policy(0.0)(request)

    dataset = crash_worker.build_dataset(3)
    run(dataset, grader(policy=flaky), config(tmp_path))
    assert EvalRunner(dataset, grader(), config(tmp_path)).finished_result() is None


def test_total_completion_cost_is_a_float_that_formats(tmp_path: Path) -> None:
    # Spec 001's evaluation example prints f"${result.total_completion_cost:.4f}"; local judges cost 0.0.
    result = run(crash_worker.build_dataset(2), grader(), config(tmp_path))
    assert f"${result.total_completion_cost:.4f}" == "$0.0000"
    assert all(r.report.completion_cost == 0.0 for r in result.item_results)
    _, _ = load_result(tmp_path / "r.sqlite")


def test_a_call_of_unknown_price_makes_the_cost_unknown_not_zero(tmp_path: Path) -> None:
    # A hosted call LiteLLM cannot price (cost_usd None): a sum without it would understate the cost.
    def unpriced(request: ScoreRequest) -> LabelScores:
        return LabelScores(tuple(crash_worker.make_policy(0.0)(request)), cost_usd=None)

    engine = ScriptedEngine(policy=unpriced, capabilities=EngineCapabilities("hosted"))
    hosted = CriterionGrader(LLMConfig(model="scripted", engine=engine), seed=11)
    result = run(crash_worker.build_dataset(2), hosted, config(tmp_path))
    assert all(r.report.completion_cost is None for r in result.item_results)
    assert result.total_completion_cost is None


class CountingExecutor:
    """The local executor, counting its ``engines`` calls (a Ray executor starts its actors and
    loads every model there)."""

    def __init__(self) -> None:
        from autorubric_local.runner.executors import LocalExecutor

        self.inner = LocalExecutor()
        self.engine_loads = 0

    def __enter__(self) -> CountingExecutor:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.inner.__exit__(*exc)

    def engines(self, g: CriterionGrader) -> Any:
        self.engine_loads += 1
        return self.inner.engines(g)

    def graded_chunks(self, *args: Any) -> Any:
        return self.inner.graded_chunks(*args)

    def fallbacks(self, g: CriterionGrader) -> Any:
        return self.inner.fallbacks(g)


def test_a_locked_or_changed_run_is_refused_before_any_judge_loads(tmp_path: Path) -> None:
    from autorubric_local.core.errors import RunLockedError
    from autorubric_local.runner import EvalInterruptedError
    from autorubric_local.store import Store
    from autorubric_local.store.leases import LeaseOwner

    dataset = crash_worker.build_dataset(3)
    stopped = EvalRunner(dataset, grader(), config(tmp_path))
    stopped.stop()
    with pytest.raises(EvalInterruptedError):  # leaves an unfinished run to resume
        stopped.run_sync()
    changed = CountingExecutor()
    with pytest.raises(InputError, match=r"seed \(11 -> 12\)"):
        EvalRunner(dataset, grader(seed=12), config(tmp_path), executor=changed).run_sync()  # type: ignore[arg-type]
    assert changed.engine_loads == 0
    store = Store.open(tmp_path / "r.sqlite")
    try:
        run_id = store.find_run("t")["id"]  # type: ignore[index]
        other = LeaseOwner.for_this_process()  # another writer of this host, alive
        store.acquire_run_lease(run_id, other)
        locked = CountingExecutor()
        with pytest.raises(RunLockedError):
            EvalRunner(dataset, grader(), config(tmp_path), executor=locked).run_sync()  # type: ignore[arg-type]
        assert locked.engine_loads == 0
        store.release_run_lease(run_id, other)
    finally:
        store.close()
    resumed = CountingExecutor()
    result = EvalRunner(dataset, grader(), config(tmp_path), executor=resumed).run_sync()  # type: ignore[arg-type]
    assert resumed.engine_loads == 1 and result.successful_items == 3


def test_a_run_whose_lease_is_taken_while_its_judges_load_changes_nothing(tmp_path: Path) -> None:
    from autorubric_local.core.errors import RunLockedError
    from autorubric_local.runner import EvalInterruptedError

    dataset = crash_worker.build_dataset(3)
    stopped = EvalRunner(dataset, grader(), config(tmp_path))
    stopped.stop()
    with pytest.raises(EvalInterruptedError):
        stopped.run_sync()
    db = sqlite_utils.Database(tmp_path / "r.sqlite")
    before = next(iter(db["runs"].rows))

    class Stolen(CountingExecutor):
        def engines(self, g: CriterionGrader) -> Any:
            db["run_leases"].update(before["id"], {"owner": "another-host:1:feedface", "host": "another-host"})
            return super().engines(g)

    with pytest.raises(RunLockedError, match="lost the run's lease while its judges loaded"):
        EvalRunner(dataset, grader(), config(tmp_path), executor=Stolen()).run_sync()  # type: ignore[arg-type]
    assert next(iter(db["runs"].rows)) == before


def test_timed_chunks_grow_at_most_eightfold_and_learn_nothing_from_empty_chunks() -> None:
    from autorubric_local.runner.chunking import TimedChunks

    class Entry:
        def __init__(self, key: str) -> None:
            self.key = key

    entries = [Entry(f"k{i}") for i in range(200)]
    costs = {e.key: (0 if e.key == "k1" else 2) for e in entries}  # k1: an unreadable item, no judgment
    now = [0.0]
    plan = TimedChunks(entries, costs, max_judgments=100, max_items=None, budget_seconds=30.0, clock=lambda: now[0])
    sizes: list[int] = []
    for chunk in plan:
        sizes.append(sum(costs[e.key] for e in chunk))
        now[0] += 0.001 * sizes[-1]  # very fast: only the growth cap and max_judgments bound the chunks
        if len(sizes) == 5:
            break
    # 1st: one item (2 judgments); then 8 x 2 = 16: k1 (none) and k2..k9; then 8 x 16 = 128, capped at 100
    assert sizes == [2, 16, 100, 100, 100]
    assert plan[0][0].key == "k0" and plan[1][0].key == "k1"
    slow = TimedChunks(entries, costs, 100, None, 30.0, clock=lambda: now[0])
    chunks = iter(slow)
    next(chunks)
    now[0] += 60.0  # one item took 60 s: 30 s a judgment, so the next chunk holds 1 judgment at most
    assert [e.key for e in next(chunks)] == ["k1"]  # k1 (no judgment); k2's 2 would not fit
    now[0] += 5.0
    assert slow.next_budget() == 1  # k1's chunk judged nothing: the pace is still k0's


def test_reading_a_finished_run_never_warns_that_its_lease_was_lost(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's end gives its lease back (in the transaction that marks it finished), so a beat
    after it, or during the read of its result (a large run's, slowed here), finds no lease and
    must not warn that it was lost: the result is read after the heartbeat stopped, and a beat
    that finds the run no longer running says nothing."""
    import logging
    import time

    from autorubric_local.runner.stored import StoredRun

    real_read = StoredRun.read.__func__  # type: ignore[attr-defined]

    def slow_read(cls: type[StoredRun], *args: Any) -> StoredRun:
        time.sleep(0.2)  # 40 heartbeat intervals
        return real_read(cls, *args)

    monkeypatch.setattr(StoredRun, "read", classmethod(slow_read))
    caplog.set_level(logging.WARNING, logger="autorubric_local.runner.job")
    result = run(crash_worker.build_dataset(2), grader(), config(tmp_path, lease_heartbeat_seconds=0.005))
    assert result.successful_items == 2
    assert "no longer holds" not in caplog.text
