"""AutoRubric's documented examples, run on local judges.

Each test is one example (or a few closely related ones) of AutoRubric's README (spec 001),
its multi-choice reference (spec 000) or its core grading reference (spec 003), written as a
user would run it after changing ``autorubric`` to ``autorubric_local`` in the imports and the
hosted model string to a local judge: the tiny random judge saved as a Hugging Face folder
(``tiny_model_dir``), a scripted judge where a deterministic verdict is needed to check exact
values (``LLMConfig(model="scripted", engine=ScriptedEngine(...))``), or the embedded SmolLM2
judge (``slow``). Relative file names in the examples are resolved in a temporary working
directory. Each test asserts what the example's comments and prose promise.

Examples that are not run here as written:

=====================================  =====================================================
example                                why
=====================================  =====================================================
001 "Prompt Caching"                   skipped after the grader is built: ``cache_control``
                                       on the system message is an Anthropic API feature (a
                                       local judge shares prompt prefixes regardless)
001 "Environment Variables",           bash: hosted providers' API keys and package
"Installation"                         installation; nothing to run
001 "LLMConfig Options"                built as written; grading with its hosted request
                                       settings (``timeout=60.0``, ``max_retries=3``) is
                                       refused by a local backend, which the test asserts
001 "Checkpointing" comment            the run is stored in ``<dir>/<name>/results.sqlite``,
                                       not ``manifest.json`` + ``items.jsonl``: the test checks
                                       the folder, the resume and ``from_experiment``
=====================================  =====================================================
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from autorubric_local import InputError
from autorubric_local.engine import ScoreRequest, ScriptedEngine

TINY_KEYS = ("gemini", "claude", "gpt-4.1")

BATTERY_RESPONSE = """NMC cathodes (LiNixMnyCozO2) achieve 250-280 Wh/kg at the cell level,
        while LFP (LiFePO4) typically reaches 150-205 Wh/kg. However, LFP offers superior
        thermal stability with decomposition onset at ~270°C compared to ~210°C for NMC,
        and delivers 2000-5000 charge cycles versus 1000-2000 for NMC."""

BATTERY_RUBRIC = [
    {"weight": 10.0, "requirement": "States NMC cell-level energy density in the 250-300 Wh/kg range"},
    {"weight": 8.0, "requirement": "Identifies LFP thermal runaway threshold (~270°C) as higher than NMC (~210°C)"},
    {"weight": 6.0, "requirement": "States LFP cycle life advantage (2000-5000 cycles vs 1000-2000 for NMC)"},
    {"weight": -15.0, "requirement": "Incorrectly claims LFP has higher gravimetric energy density than NMC"},
]

_REQUIREMENT = re.compile(r"This is a (?:negative criterion \(describes a mistake\)|criterion): (.*?)\n", re.DOTALL)


# ---- scripted judges --------------------------------------------------------------------------


def _pick(probabilities_for: Callable[[ScoreRequest], int]) -> Callable[[ScoreRequest], list[float]]:
    """A policy that puts 0.9 on the label at the index ``probabilities_for`` returns."""

    def policy(request: ScoreRequest) -> list[float]:
        chosen = probabilities_for(request)
        rest = 0.1 / (len(request.labels) - 1)
        return [math.log(0.9 if i == chosen else rest) for i in range(len(request.labels))]

    return policy


def rule_judge(
    rules: Mapping[str, str] | None = None,
    default: str = "MET",
    *,
    name: str = "scripted",
    submission_rules: Mapping[str, str] | None = None,
    **config: Any,
) -> Any:
    """``LLMConfig`` of a scripted judge that answers by rule.

    ``rules`` maps a fragment of a criterion's requirement to the answer: a binary verdict
    ("MET", "UNMET", "CANNOT_ASSESS") or, for a multi-choice criterion, an option label.
    ``submission_rules`` maps a fragment of the submission (the shared prompt prefix) to a
    verdict and wins over ``rules``. Anything else gets ``default`` (an option label for a
    multi-choice criterion whose requirement matches no rule: the first shown option).
    """
    from autorubric_local import LLMConfig

    rules = dict(rules or {})
    submission_rules = dict(submission_rules or {})

    def choose(request: ScoreRequest) -> int:
        found = _REQUIREMENT.search(request.suffix)
        requirement = found.group(1) if found else ""
        submission = request.prefix.split("<submission>")[-1]
        answer = next((v for k, v in submission_rules.items() if k in submission), None)
        if answer is None:
            answer = next((v for k, v in rules.items() if k in requirement), default)
        if request.labels[0] == 'MET"':
            return ['MET"', 'UNMET"', 'CANNOT_ASSESS"'].index(f'{answer}"')
        shown = re.findall(r"^(\d+)\. (.*)$", request.suffix.split("Options:")[1], flags=re.MULTILINE)
        for position, label in shown:
            if label.strip() == answer:
                return int(position) - 1
        return 0

    return LLMConfig(model=name, engine=ScriptedEngine(model_id=name, policy=_pick(choose)), **config)


def formula_score(report: Any) -> float:
    """Spec 001 "Scoring Formula": clamp(sum of MET weights / sum of positive weights)."""
    met = sum(cr.criterion.weight for cr in report.report if str(cr.final_verdict) == "MET")
    total = sum(max(0.0, cr.criterion.weight) for cr in report.report)
    return max(0.0, min(1.0, met / total))


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the example in a fresh working directory (its relative file names land there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")


RUBRIC_YAML = """\
- name: margin        # Optional identifier
  weight: 10.0
  requirement: "States Q4 2023 base margin as 17.2%"
- name: attribution
  weight: 8.0
  requirement: "Explicitly uses Shapley attribution for decomposition"
- weight: -15.0       # name is optional
  requirement: "Uses total deliveries instead of cash-only deliveries"
"""

RUBRIC_JSON = """\
[
  {"name": "margin", "weight": 10.0, "requirement": "States Q4 2023 base margin as 17.2%"},
  {"name": "attribution", "weight": 8.0, "requirement": "Explicitly uses Shapley attribution for decomposition"},
  {"weight": -15.0, "requirement": "Uses total deliveries instead of cash-only deliveries"}
]
"""

SATISFACTION_YAML = """\
- name: satisfaction
  requirement: "How satisfied would you be with this response?"
  weight: 10.0
  scale_type: ordinal
  options:
    - label: "1"
      value: 0.0
    - label: "2"
      value: 0.33
    - label: "3"
      value: 0.67
    - label: "4"
      value: 1.0
"""

EFFICIENCY_YAML = """\
- name: efficiency
  requirement: "Is the number of exchange turns appropriate?"
  weight: 5.0
  scale_type: nominal
  options:
    - label: "Too few interactions"
      value: 0.0
    - label: "Too many interactions"
      value: 0.0
    - label: "Just right"
      value: 1.0
"""


# ==== spec 001: README ==========================================================================


def test_001_quick_start_scripted(capsys: pytest.CaptureFixture[str]) -> None:
    """Quick Start: the three facts are MET, the negative criterion UNMET: score 24/24."""
    from autorubric_local import Rubric
    from autorubric_local.graders import CriterionGrader

    async def main():
        grader = CriterionGrader(llm_config=rule_judge({"Incorrectly claims": "UNMET"}))
        rubric = Rubric.from_dict(BATTERY_RUBRIC)
        result = await rubric.grade(
            to_grade=BATTERY_RESPONSE,
            grader=grader,
            query="Compare NMC and LFP cathode materials for EV battery applications.",
        )
        print(f"Score: {result.score:.2f}")  # Score is 0.0-1.0
        for criterion in result.report:
            print(f"  [{criterion.final_verdict}] {criterion.criterion.requirement}")
            print(f"    -> {criterion.final_reason}")
        return result

    result = asyncio.run(main())
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Score: 1.00"
    assert lines[1] == f"  [MET] {BATTERY_RUBRIC[0]['requirement']}"
    assert lines[7] == f"  [UNMET] {BATTERY_RUBRIC[3]['requirement']}"
    assert [ln.startswith("    -> ") for ln in lines[2::2]] == [True] * 4
    assert result.raw_score == 24.0


def _check_quick_start(model: str, capsys: pytest.CaptureFixture[str]) -> None:
    from autorubric_local import LLMConfig, Rubric
    from autorubric_local.graders import CriterionGrader

    async def main():
        grader = CriterionGrader(llm_config=LLMConfig(model=model))
        rubric = Rubric.from_dict(BATTERY_RUBRIC)
        result = await rubric.grade(
            to_grade=BATTERY_RESPONSE,
            grader=grader,
            query="Compare NMC and LFP cathode materials for EV battery applications.",
        )
        print(f"Score: {result.score:.2f}")
        for criterion in result.report:
            print(f"  [{criterion.final_verdict}] {criterion.criterion.requirement}")
        return result

    result = asyncio.run(main())
    out = capsys.readouterr().out.splitlines()
    assert result.error is None
    assert 0.0 <= result.score <= 1.0
    assert result.score == pytest.approx(formula_score(result))
    assert out[0] == f"Score: {result.score:.2f}"
    assert all(re.fullmatch(r"  \[(MET|UNMET|CANNOT_ASSESS)\] .+", line) for line in out[1:])


def test_001_quick_start_tiny_judge(tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Quick Start on a local model folder: the score follows the scoring formula."""
    _check_quick_start(str(tiny_model_dir), capsys)


@pytest.mark.slow
def test_001_quick_start_smollm2(capsys: pytest.CaptureFixture[str]) -> None:
    """Quick Start on the embedded judge, as the README's user would run it."""
    from autorubric_local.core.errors import ModelNotFoundError

    try:
        _check_quick_start("smollm2-135m-instruct", capsys)
    except ModelNotFoundError as exc:  # weights not installed
        from setup_state import missing

        missing(f"smollm2-135m-instruct not installed: {exc}", "setup.sh")


def test_001_llm_config_options(tiny_model_dir: Path) -> None:
    """LLMConfig Options: every documented field is accepted; the commented defaults hold."""
    from autorubric_local import LLMConfig, Rubric
    from autorubric_local.graders import CriterionGrader

    config = LLMConfig(
        model=str(tiny_model_dir),
        temperature=0.0,
        max_tokens=1024,
        top_p=None,
        timeout=60.0,
        max_retries=3,
        max_parallel_requests=None,
        cache_enabled=False,
        cache_dir=".autorubric_cache",
        cache_ttl=None,
        thinking=None,
        prompt_caching=True,
        seed=None,
        api_key=None,
        api_base=None,
        extra_headers={},
        extra_params={},
    )
    defaults = LLMConfig(model=str(tiny_model_dir))
    assert (defaults.temperature, defaults.max_tokens, defaults.top_p) == (0.0, 1024, None)
    assert (defaults.cache_enabled, defaults.cache_dir, defaults.cache_ttl) == (False, ".autorubric_cache", None)
    assert (defaults.thinking, defaults.prompt_caching, defaults.seed) == (None, True, None)
    assert (config.timeout, config.max_retries) == (60.0, 3)
    # Grading with the example's hosted-request settings (timeout, retries) is refused by a local
    # backend, naming each field; with those two left at their defaults the same config grades.
    rubric = Rubric.from_dict([{"requirement": "Is polite"}])
    with pytest.raises(InputError, match=r"(?s)LLMConfig.timeout .*LLMConfig.max_retries "):
        asyncio.run(rubric.grade(to_grade="Thank you!", grader=CriterionGrader(llm_config=config)))
    local = config.model_copy(update={"timeout": None, "max_retries": 0})
    report = asyncio.run(rubric.grade(to_grade="Thank you!", grader=CriterionGrader(llm_config=local)))
    assert report.error is None


def test_001_yaml_configuration(tiny_model_dir: Path, in_tmp: Path) -> None:
    """YAML Configuration: llm_config.yaml loads; to_yaml writes what from_yaml reads back."""
    from autorubric_local import LLMConfig
    from autorubric_local.graders import CriterionGrader

    write("llm_config.yaml", f"""\
# llm_config.yaml
model: {tiny_model_dir}
temperature: 0.0
max_tokens: 1024
cache_enabled: true
cache_ttl: 3600
""")
    config = LLMConfig.from_yaml("llm_config.yaml")
    grader = CriterionGrader(llm_config=config)
    assert (config.model, config.max_tokens, config.cache_enabled, config.cache_ttl) == (
        str(tiny_model_dir), 1024, True, 3600)
    assert grader is not None

    config = LLMConfig(model=str(tiny_model_dir), temperature=0.0)
    config.to_yaml("llm_config.yaml")
    assert LLMConfig.from_yaml("llm_config.yaml") == config


def _satisfaction_rubric() -> Any:
    from autorubric_local import Rubric

    return Rubric.from_yaml(SATISFACTION_YAML)


def test_001_shuffle_options() -> None:
    """Grading Strategy: shuffling is on by default; shuffle_options=False keeps the order."""
    from autorubric_local.graders import CriterionGrader

    rubric = _satisfaction_rubric()
    grader = CriterionGrader(llm_config=rule_judge(default="3"))
    assert grader.shuffle_options is True
    report = asyncio.run(rubric.grade(to_grade="A fine answer.", grader=grader))
    order = report.report[0].shuffle_order
    assert sorted(order) == [0, 1, 2, 3]
    # Responses are mapped back to the original indices.
    assert report.report[0].final_multi_choice_verdict.selected_label == "3"

    # Disable for deterministic behavior: options shown in their own order.
    judge = rule_judge(default="3")
    grader = CriterionGrader(llm_config=judge, shuffle_options=False)
    report = asyncio.run(rubric.grade(to_grade="A fine answer.", grader=grader))
    assert report.report[0].final_multi_choice_verdict.selected_index == 2
    assert "Options:\n1. 1\n2. 2\n3. 3\n4. 4\n" in judge.engine.history[0].suffix


def test_001_and_003_no_shuffle_order_when_disabled() -> None:
    """CriterionReport.shuffle_order: None when shuffle_options is disabled."""
    from autorubric_local.graders import CriterionGrader

    grader = CriterionGrader(llm_config=rule_judge(default="3"), shuffle_options=False)
    report = asyncio.run(_satisfaction_rubric().grade(to_grade="A fine answer.", grader=grader))
    assert report.report[0].shuffle_order is None


def _labelled_dataset(n: int) -> Any:
    from autorubric_local import Criterion, CriterionVerdict, Rubric, RubricDataset

    dataset = RubricDataset(prompt="Explain photosynthesis", rubric=Rubric([
        Criterion(name="light", weight=10.0, requirement="Mentions light energy"),
        Criterion(name="sugar", weight=5.0, requirement="Mentions glucose"),
    ]))
    met, unmet = CriterionVerdict.MET, CriterionVerdict.UNMET
    for i in range(n):
        truth = [met if i % 2 == 0 else unmet, met if i % 3 == 0 else unmet]
        dataset.add_item(submission=f"Answer number {i}.", description=f"item {i}", ground_truth=truth)
    return dataset


def test_001_grader_modes(capsys: pytest.CaptureFixture[str]) -> None:
    """CriterionGrader modes: single, custom system prompt, weighted ensemble, few-shot."""
    from autorubric_local import FewShotConfig, Rubric
    from autorubric_local.graders import CriterionGrader, JudgeSpec

    rubric = Rubric.from_dict([{"requirement": "Mentions light energy"}, {"requirement": "Mentions glucose"}])
    response = "Plants turn light energy into glucose."

    grader = CriterionGrader(llm_config=rule_judge())
    single = asyncio.run(rubric.grade(to_grade=response, grader=grader))
    assert single.mean_agreement == 1.0  # 1.0 for single LLM

    engine_config = rule_judge()
    grader = CriterionGrader(llm_config=engine_config, system_prompt="Optional custom system prompt")
    asyncio.run(rubric.grade(to_grade=response, grader=grader))
    assert all("Optional custom system prompt" in r.prefix for r in engine_config.engine.history)

    # Weighted: claude (1.2) + gemini (1.0) say MET on light energy, gpt-4.1 (1.0) UNMET: MET;
    # only claude says MET on glucose: 1.2 < 2.0, UNMET.
    grader = CriterionGrader(
        judges=[
            JudgeSpec(rule_judge({"glucose": "UNMET"}, name="gemini"), "gemini", weight=1.0),
            JudgeSpec(rule_judge(name="claude"), "claude", weight=1.2),
            JudgeSpec(rule_judge(default="UNMET", name="gpt"), "gpt-4.1", weight=1.0),
        ],
        aggregation="weighted",  # "majority", "weighted", "unanimous", "any"
    )
    result = asyncio.run(rubric.grade(to_grade=response, grader=grader))
    print(f"Score: {result.score:.3f}")
    print(f"Mean Agreement: {result.mean_agreement:.1%}")
    print(f"Judge Scores: {result.judge_scores}")
    assert [str(cr.final_verdict) for cr in result.report] == ["MET", "UNMET"]
    assert result.judge_scores == {"gemini": 0.5, "claude": 1.0, "gpt-4.1": 0.0}
    assert result.mean_agreement == pytest.approx(2 / 3)
    assert capsys.readouterr().out.splitlines() == [
        "Score: 0.500", "Mean Agreement: 66.7%", "Judge Scores: {'gemini': 0.5, 'claude': 1.0, 'gpt-4.1': 0.0}"]

    dataset = _labelled_dataset(120)
    train_data, test_data = dataset.split_train_test(n_train=100, stratify=True, seed=42)
    assert (len(train_data), len(test_data)) == (100, 20)
    assert dataset.split_train_test(n_train=100, stratify=True, seed=42)[0].to_json() == train_data.to_json()
    few_shot = rule_judge()
    grader = CriterionGrader(
        llm_config=few_shot,
        training_data=train_data,
        few_shot_config=FewShotConfig(n_examples=3, balance_verdicts=True, seed=42),
    )
    asyncio.run(dataset.rubric.grade(to_grade=test_data.items[0].submission, grader=grader))
    shown = [r for r in few_shot.engine.history]
    train_texts = {item.submission for item in train_data.items}
    assert all(sum(text in r.prefix + r.suffix for text in train_texts) == 3 for r in shown)

    # Ensemble + few-shot: all judges get the same examples.
    gemini, claude = rule_judge(name="gemini"), rule_judge(name="claude")
    grader = CriterionGrader(
        judges=[JudgeSpec(gemini, "gemini"), JudgeSpec(claude, "claude")],
        aggregation="majority",
        training_data=train_data,
        few_shot_config=FewShotConfig(n_examples=3),
    )
    result = asyncio.run(dataset.rubric.grade(to_grade=response, grader=grader))
    assert type(result).__name__ == "EnsembleEvaluationReport"  # always, single or ensemble

    def examples_seen(config: Any) -> list[set[str]]:
        return [{t for t in train_texts if t in r.prefix + r.suffix} for r in config.engine.history]

    assert examples_seen(gemini) == examples_seen(claude)
    assert all(len(seen) == 3 for seen in examples_seen(gemini))


def test_001_cannot_assess_strategies() -> None:
    """CANNOT_ASSESS Handling: SKIP adjusts the denominator, FAIL is worst case, PARTIAL 30%."""
    from autorubric_local import CannotAssessConfig, CannotAssessStrategy, Rubric
    from autorubric_local.graders import CriterionGrader

    rubric = Rubric.from_dict([
        {"weight": 10.0, "requirement": "Gives the answer"},
        {"weight": 10.0, "requirement": "Cites the source"},
        {"weight": -5.0, "requirement": "Contains a factual error"},
    ])
    judge = {"source": "CANNOT_ASSESS", "error": "CANNOT_ASSESS"}

    def grade(**kwargs: Any) -> Any:
        grader = CriterionGrader(llm_config=rule_judge(judge), **kwargs)
        return asyncio.run(rubric.grade(to_grade="42", grader=grader))

    default = grade()
    assert default.score == 1.0 and default.cannot_assess_count == 2  # 10 / 10
    fail = grade(cannot_assess_config=CannotAssessConfig(strategy=CannotAssessStrategy.FAIL))
    assert fail.score == pytest.approx((10 - 5) / 20)  # UNMET for +, MET for - weights
    partial = grade(cannot_assess_config=CannotAssessConfig(strategy=CannotAssessStrategy.PARTIAL, partial_credit=0.3))
    assert partial.score == pytest.approx((10 + 3) / 20)  # no partial penalty on a negative weight
    zero = grade(cannot_assess_config=CannotAssessConfig(strategy=CannotAssessStrategy.ZERO))
    assert zero.score == pytest.approx(10 / 20)


def test_001_scoring_formula() -> None:
    """Scoring Formula: MET weights over positive weights, clamped to [0, 1]."""
    from autorubric_local import Rubric
    from autorubric_local.graders import CriterionGrader

    rubric = Rubric.from_dict(BATTERY_RUBRIC)
    cases = [({}, 1.0), ({"cycle": "UNMET"}, 18 / 24), ({"energy density in": "UNMET", "Incorrectly": "MET"}, 0.0)]
    for rules, expected in cases:
        rules = {"Incorrectly": "UNMET", **rules}
        result = asyncio.run(rubric.grade(to_grade=BATTERY_RESPONSE, grader=CriterionGrader(llm_config=rule_judge(rules))))
        assert result.score == pytest.approx(expected)
        assert result.score == pytest.approx(formula_score(result))


def test_001_thinking_levels(tiny_model_dir: Path) -> None:
    """Extended Thinking: levels and a token budget; the trace lands in ``reasoning``."""
    from autorubric_local import LLMConfig, Rubric
    from autorubric_local.graders import CriterionGrader

    high = rule_judge(thinking="high")
    grader = CriterionGrader(llm_config=high)
    report = asyncio.run(Rubric.from_dict([{"requirement": "Is polite"}]).grade(to_grade="Thanks!", grader=grader))
    vote = report.report[0].votes[0]
    assert vote.reasoning and str(vote.verdict) == "MET"
    assert any(getattr(r, "max_new_tokens", 0) for r in high.engine.history)  # reasoning was generated

    grader = CriterionGrader(llm_config=LLMConfig(model=str(tiny_model_dir), thinking="low"))
    report = asyncio.run(Rubric.from_dict([{"requirement": "Is polite"}]).grade(to_grade="Thanks!", grader=grader))
    assert report.error is None and report.report[0].votes[0].reasoning

    budget = LLMConfig(model="smollm2-135m-instruct", thinking=32000)
    assert budget.thinking == 32000
    assert CriterionGrader(llm_config=budget) is not None
    assert LLMConfig(thinking="none").thinking_budget == 0


def test_001_prompt_caching() -> None:
    """Prompt Caching: the setting is accepted; the feature itself is Anthropic's."""
    from autorubric_local import LLMConfig
    from autorubric_local.graders import CriterionGrader

    grader = CriterionGrader(llm_config=LLMConfig(model="smollm2-135m-instruct", prompt_caching=True))
    assert grader is not None
    pytest.skip("cache_control on the system message is an Anthropic API feature (hosted only)")


def test_001_seed_reproducibility(tiny_model_dir: Path) -> None:
    """OpenAI Reproducibility: the same seed gives the same outputs (here: explanations too)."""
    from autorubric_local import LLMConfig, Rubric
    from autorubric_local.graders import CriterionGrader

    rubric = Rubric.from_dict([{"requirement": "Is polite"}, {"requirement": "Answers the question"}])

    def run() -> Any:
        grader = CriterionGrader(llm_config=LLMConfig(model=str(tiny_model_dir), seed=42, temperature=1.0,
                                                      explanation_max_tokens=8), mode="explain")
        return asyncio.run(rubric.grade(to_grade="Thanks, it is 42.", grader=grader))

    first, second = run(), run()
    assert [cr.final_verdict for cr in first.report] == [cr.final_verdict for cr in second.report]
    assert [cr.final_reason for cr in first.report] == [cr.final_reason for cr in second.report]
    assert first.score == second.score


def test_001_response_caching_grader(tiny_model_dir: Path, in_tmp: Path) -> None:
    """Response Caching (grader part): identical requests give identical responses."""
    from autorubric_local import LLMConfig, Rubric
    from autorubric_local.graders import CriterionGrader

    grader = CriterionGrader(
        llm_config=LLMConfig(
            model=str(tiny_model_dir),
            cache_enabled=True,
            cache_dir=".autorubric_cache",
            cache_ttl=3600,
        )
    )
    rubric = Rubric.from_dict([{"requirement": "Is polite"}])
    first = asyncio.run(rubric.grade(to_grade="Thanks!", grader=grader))
    second = asyncio.run(rubric.grade(to_grade="Thanks!", grader=grader))
    assert first.score == second.score
    assert first.report[0].final_verdict == second.report[0].final_verdict
    assert (in_tmp / ".autorubric_cache" / "responses.sqlite3").is_file()  # the second grade was read from it


def test_001_response_caching_client(in_tmp: Path) -> None:
    """Response Caching (client part): clear_cache and cache_stats on an LLMClient."""
    from autorubric_local import LLMClient, LLMConfig  # type: ignore[attr-defined]

    client = LLMClient(LLMConfig(model="smollm2-135m-instruct", cache_enabled=True))
    client.clear_cache()
    stats = client.cache_stats()
    assert {"size", "count", "directory"} <= set(stats)
    assert stats["count"] == 0 and stats["directory"] == ".autorubric_cache"


def test_001_structured_outputs() -> None:
    """Structured Outputs: CriterionJudgment has criterion_status, explanation, reasoning."""
    from autorubric_local import CriterionJudgment, CriterionVerdict

    judgment = CriterionJudgment(criterion_status=CriterionVerdict.MET, explanation="It states the figure.")
    assert judgment.criterion_status == CriterionVerdict.MET
    assert judgment.explanation == "It states the figure."
    assert judgment.reasoning is None  # thinking trace only when thinking is enabled


def test_001_usage_tracking(tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Usage Tracking: token usage of all calls; a local grade costs nothing (cost 0.0)."""
    from autorubric_local import LLMConfig, Rubric
    from autorubric_local.graders import CriterionGrader

    async def main():
        grader = CriterionGrader(llm_config=LLMConfig(model=str(tiny_model_dir)))
        rubric = Rubric.from_dict([
            {"weight": 10.0, "requirement": "States the correct answer"},
            {"weight": 5.0, "requirement": "Provides clear explanation"},
        ])
        result = await rubric.grade(to_grade="The answer is 42 because...", grader=grader)
        print(f"Score: {result.score:.2f}")
        if result.token_usage:
            print(f"Prompt tokens: {result.token_usage.prompt_tokens}")
            print(f"Completion tokens: {result.token_usage.completion_tokens}")
            print(f"Total tokens: {result.token_usage.total_tokens}")
        if result.completion_cost:
            print(f"Cost: ${result.completion_cost:.6f}")
        return result

    result = asyncio.run(main())
    usage = result.token_usage
    assert usage.prompt_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert result.completion_cost == 0.0
    assert capsys.readouterr().out.splitlines() == [
        f"Score: {result.score:.2f}",
        f"Prompt tokens: {usage.prompt_tokens}",
        f"Completion tokens: {usage.completion_tokens}",
        f"Total tokens: {usage.total_tokens}",
    ]


def test_001_aggregate_usage(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Aggregating usage over a batch: the helpers give the sums of the reports'."""
    from autorubric_local import (
        Rubric,
        TokenUsage,
        aggregate_completion_cost,
        aggregate_evaluation_usage,
        aggregate_token_usage,
    )
    from autorubric_local.graders import CriterionGrader

    write("rubric.yaml", RUBRIC_YAML)

    async def batch_grade_with_usage():
        grader = CriterionGrader(llm_config=rule_judge())
        rubric = Rubric.from_file("rubric.yaml")
        responses = ["Response 1...", "Response 2...", "Response 3..."]
        tasks = [rubric.grade(to_grade=r, grader=grader) for r in responses]
        results = await asyncio.gather(*tasks)
        total_usage, total_cost = aggregate_evaluation_usage(results)
        if total_usage:
            print(f"Total tokens used: {total_usage.total_tokens}")
        if total_cost:
            print(f"Total cost: ${total_cost:.4f}")
        usages = [r.token_usage for r in results]
        costs = [r.completion_cost for r in results]
        assert aggregate_token_usage(usages) == total_usage
        assert aggregate_completion_cost(costs) == total_cost
        return results, total_usage, total_cost

    results, total_usage, total_cost = asyncio.run(batch_grade_with_usage())
    assert isinstance(total_usage, TokenUsage)
    assert total_usage.total_tokens == sum(r.token_usage.total_tokens for r in results) > 0
    assert total_cost == 0.0
    assert f"${total_cost:.4f}" == "$0.0000"
    assert capsys.readouterr().out.splitlines() == [f"Total tokens used: {total_usage.total_tokens}"]


def test_001_length_penalty_configuration() -> None:
    """Length Penalty Configuration and Penalty Formula."""
    from autorubric_local import LengthPenalty, compute_length_penalty

    penalty = LengthPenalty(
        free_budget=6000,
        max_cap=8000,
        penalty_at_cap=0.5,
        exponent=1.6,
        count_fn=None,
        penalty_type="ALL",
    )

    def words(n: int) -> str:
        return " ".join(["w"] * n)

    assert compute_length_penalty(words(6000), penalty) == 0  # no penalty below the budget
    assert compute_length_penalty(words(8000), penalty) == 0.5  # maximum at/above the cap
    assert compute_length_penalty(words(9000), penalty) == 0.5
    assert compute_length_penalty(words(7000), penalty) == pytest.approx(0.5 * 0.5**1.6)


def test_001_length_penalty_usage(tiny_model_dir: Path, in_tmp: Path) -> None:
    """Length Penalty Usage: default penalty and a custom tokenizer count, on the grader."""
    from transformers import AutoTokenizer

    from autorubric_local import LengthPenalty, Rubric
    from autorubric_local.graders import CriterionGrader

    write("rubric.yaml", RUBRIC_YAML)
    rubric = Rubric.from_file("rubric.yaml")
    judge = rule_judge({"deliveries": "UNMET"})
    grader = CriterionGrader(llm_config=judge, length_penalty=LengthPenalty())
    response = "The Q4 2023 base margin is 17.2%, by Shapley attribution."
    result = asyncio.run(rubric.grade(to_grade=response, grader=grader))
    assert result.score == 1.0  # far below the free budget: nothing subtracted

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    penalty = LengthPenalty(free_budget=8000, max_cap=10000, count_fn=lambda t: len(tokenizer.encode(t)))
    grader = CriterionGrader(llm_config=judge, length_penalty=penalty)
    long_response = response + " margin" * (9000 // len(tokenizer.encode(" margin")))
    count = len(tokenizer.encode(long_response))
    assert 8000 < count < 10000
    expected = 0.5 * ((count - 8000) / 2000) ** 1.6
    result = asyncio.run(rubric.grade(to_grade=long_response, grader=grader))
    assert result.score == pytest.approx(max(0.0, 1.0 - expected))


def test_001_thinking_output_inputs() -> None:
    """Thinking/Output input formats: a dict, a marked-up string, a plain string."""
    from autorubric_local import (
        LengthPenalty,
        Rubric,
        compute_length_penalty,
        parse_thinking_output,
    )
    from autorubric_local.graders import CriterionGrader

    rubric = Rubric.from_dict([{"requirement": "Gives the final answer 42"}])
    judge = rule_judge()
    grader = CriterionGrader(llm_config=judge)

    async def grade_all():
        return [
            await rubric.grade(
                to_grade={"thinking": "Let me reason through this step by step...", "output": "The final answer is 42"},
                grader=grader,
            ),
            await rubric.grade(
                to_grade="<thinking>My reasoning process...</thinking><output>Final answer</output>", grader=grader
            ),
            await rubric.grade(to_grade="Just a regular response", grader=grader),
        ]

    reports = asyncio.run(grade_all())
    assert all(r.error is None and r.score == 1.0 for r in reports)
    parsed = parse_thinking_output("<thinking>My reasoning process...</thinking><output>Final answer</output>")
    assert (parsed["thinking"], parsed["output"]) == ("My reasoning process...", "Final answer")
    assert parse_thinking_output("Just a regular response")["output"] == "Just a regular response"

    penalty = LengthPenalty(free_budget=8000, max_cap=10000, penalty_at_cap=0.5, penalty_type="OUTPUT_ONLY")
    long_thinking = {"thinking": "step " * 12000, "output": "42"}
    assert compute_length_penalty(long_thinking, penalty) == 0  # reasoning is free
    every = LengthPenalty(free_budget=8000, max_cap=10000, penalty_at_cap=0.5, penalty_type="ALL")
    assert compute_length_penalty(long_thinking, every) == 0.5
    only = LengthPenalty(free_budget=8000, max_cap=10000, penalty_at_cap=0.5, penalty_type="THINKING_ONLY")
    assert compute_length_penalty({"thinking": "", "output": "x " * 12000}, only) == 0


def test_001_training_raw_scores(tiny_model_dir: Path, in_tmp: Path) -> None:
    """Training / RL: normalize=False gives raw sums; the absolute penalty is subtracted."""
    from transformers import AutoTokenizer

    from autorubric_local import LengthPenalty, Rubric
    from autorubric_local.graders import CriterionGrader

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    grader = CriterionGrader(
        llm_config=rule_judge({"deliveries": "MET", "attribution": "UNMET"}),
        normalize=False,
        length_penalty=LengthPenalty(
            free_budget=8000,
            max_cap=10000,
            penalty_at_cap=50.0,
            exponent=1.6,
            count_fn=lambda text: len(tokenizer.encode(text, add_special_tokens=False)),
        ),
    )
    write("rubric.yaml", RUBRIC_YAML)
    rubric = Rubric.from_file("rubric.yaml")
    response = "The margin was 17.2%." + " margin" * (9000 // len(tokenizer.encode(" margin", add_special_tokens=False)))
    result = asyncio.run(rubric.grade(to_grade=response, grader=grader))
    count = len(tokenizer.encode(response, add_special_tokens=False))
    penalty = 50.0 * ((count - 8000) / 2000) ** 1.6
    assert result.raw_score == 10.0 - 15.0  # raw weighted sum, not clamped
    assert result.score == pytest.approx(-5.0 - penalty)  # can be negative


def test_001_batch_rewards() -> None:
    """Batch Processing: rewards come back in input order."""
    from autorubric_local import Rubric
    from autorubric_local.graders import CriterionGrader

    async def compute_rewards_batch(
        responses: list[str],
        rubrics: list[Rubric],
        grader: CriterionGrader,
        queries: list[str] | None = None,
    ) -> list[float]:
        tasks = []
        for i, (response, rubric) in enumerate(zip(responses, rubrics)):
            query = queries[i] if queries else None
            tasks.append(rubric.grade(to_grade=response, grader=grader, query=query))
        results = await asyncio.gather(*tasks)
        return [r.score for r in results]

    grader = CriterionGrader(llm_config=rule_judge(submission_rules={"wrong": "UNMET"}), normalize=False)
    rubrics = [Rubric.from_dict([{"weight": w, "requirement": "Is right"}]) for w in (1.0, 2.0, 3.0)]
    rewards = asyncio.run(compute_rewards_batch(["right", "wrong", "right"], rubrics, grader, ["q1", "q2", "q3"]))
    assert rewards == [1.0, 0.0, 3.0]


def _essays(path: str, n: int = 3, *, ground_truth: bool = False) -> Any:
    from autorubric_local import Criterion, CriterionVerdict, Rubric, RubricDataset

    dataset = RubricDataset(name="essays", prompt="Write an essay on rivers", rubric=Rubric([
        Criterion(name="thesis", weight=10.0, requirement="States a thesis"),
        Criterion(name="evidence", weight=5.0, requirement="Gives evidence"),
    ]))
    for i in range(n):
        truth = [CriterionVerdict.MET, CriterionVerdict.MET if i % 2 else CriterionVerdict.UNMET]
        dataset.add_item(submission=f"Essay {i}: rivers shape valleys.", description=f"essay {i}",
                         ground_truth=truth if ground_truth else None)
    dataset.to_file(path)
    return dataset


def test_001_evaluate_basic(in_tmp: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Batch Evaluation, Basic Usage: counts, throughput and cost formatting."""
    from autorubric_local import LLMConfig, RubricDataset, evaluate
    from autorubric_local.graders import CriterionGrader

    _essays("essays.json")

    async def main():
        dataset = RubricDataset.from_file("essays.json")
        # max_parallel_requests=10 left out: see test_001_rate_limited_ensemble.
        grader = CriterionGrader(llm_config=LLMConfig(model=str(tiny_model_dir)))
        result = await evaluate(dataset, grader, show_progress=True)
        print(f"Evaluated {result.successful_items}/{result.total_items}")
        print(f"Throughput: {result.timing_stats.items_per_second:.2f} items/s")
        print(f"Total cost: ${result.total_completion_cost:.4f}")
        return result

    result = asyncio.run(main())
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Evaluated 3/3"
    assert re.fullmatch(r"Throughput: \d+\.\d\d items/s", out[1])
    assert out[2] == "Total cost: $0.0000"
    assert (result.failed_items, result.errors) == (0, [])
    assert all(item.report.score == pytest.approx(formula_score(item.report)) for item in result.item_results)


def test_001_rate_limited_ensemble(tiny_model_dir: Path) -> None:
    """Rate Limiting: per-judge max_parallel_requests in an ensemble (also in the README's
    evaluate() and fill_ground_truth() examples, which run elsewhere in this file without it)."""
    from autorubric_local import LLMConfig, Rubric
    from autorubric_local.graders import CriterionGrader, JudgeSpec

    grader = CriterionGrader(
        judges=[
            JudgeSpec(LLMConfig(model=str(tiny_model_dir), max_parallel_requests=10), "gpt-4"),
            JudgeSpec(LLMConfig(model=str(tiny_model_dir), max_parallel_requests=5), "claude"),
        ],
        aggregation="majority",
    )
    report = asyncio.run(Rubric.from_dict([{"requirement": "Is polite"}]).grade(to_grade="Thanks", grader=grader))
    assert sorted(report.judge_scores) == ["claude", "gpt-4"]


def test_001_checkpointing_and_timing(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Checkpointing and Resumption, and Timing Statistics."""
    from autorubric_local import EvalConfig, EvalResult, EvalRunner, evaluate
    from autorubric_local.graders import CriterionGrader

    dataset = _essays("essays.json", n=4)
    judge = rule_judge()
    grader = CriterionGrader(llm_config=judge)

    async def main():
        config = EvalConfig(
            experiment_name="my-essay-eval",
            experiments_dir="./experiments",
            show_progress=True,
        )
        runner = EvalRunner(dataset=dataset, grader=grader, config=config)
        first = await runner.run()
        calls = len(judge.engine.history)
        runner = EvalRunner(dataset=dataset, grader=grader, config=config)
        second = await runner.run()  # Skips already-completed items
        assert len(judge.engine.history) == calls
        return first, second

    first, second = asyncio.run(main())
    assert Path("experiments/my-essay-eval").is_dir()
    assert second.resumed_items == 4 and second.successful_items == 4
    loaded = EvalResult.from_experiment("experiments/my-essay-eval")
    assert [r.report.score for r in loaded.item_results] == [r.report.score for r in first.item_results]

    async def timing():
        result = await evaluate(dataset, grader, show_progress=False)
        stats = result.timing_stats
        print(f"Total time: {stats.total_duration_seconds:.1f}s")
        print(f"Mean per item: {stats.mean_item_duration_seconds:.2f}s")
        print(f"P95 latency: {stats.p95_item_duration_seconds:.2f}s")
        print(f"Throughput: {stats.items_per_second:.2f} items/s")
        return stats

    capsys.readouterr()
    stats = asyncio.run(timing())
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["Total time", "Mean per item", "P95 latency", "Throughput"]
    assert stats.total_duration_seconds >= 0 and stats.p95_item_duration_seconds <= stats.max_item_duration_seconds


def _metrics_run(in_tmp: Path, grader: Any) -> tuple[Any, Any]:
    from autorubric_local import RubricDataset, evaluate

    _essays("data_with_ground_truth.json", n=4, ground_truth=True)
    dataset = RubricDataset.from_file("data_with_ground_truth.json")
    result = asyncio.run(evaluate(dataset, grader, show_progress=False))
    return dataset, result


def test_001_metrics_basic_and_output(in_tmp: Path) -> None:
    """Evaluation Metrics: summary, DataFrame and JSON file; exact accuracy of an all-MET judge."""
    import pandas as pd

    from autorubric_local.graders import CriterionGrader

    dataset, result = _metrics_run(in_tmp, CriterionGrader(llm_config=rule_judge()))
    metrics = result.compute_metrics(dataset)
    # Ground truth: thesis MET x4, evidence MET on items 1 and 3: 6 of 8 labels are MET.
    assert metrics.criterion_accuracy == pytest.approx(0.75)
    assert metrics.criterion_precision == pytest.approx(0.75)
    assert metrics.criterion_recall == pytest.approx(1.0)
    assert (metrics.n_items, metrics.n_criteria) == (4, 2)
    assert "ccuracy" in metrics.summary()
    assert isinstance(metrics.to_dataframe(), pd.DataFrame)
    metrics.to_file("metrics.json")
    Path("results").mkdir()
    metrics.to_file("results/metrics.json")
    assert json.loads(Path("results/metrics.json").read_text())


def test_001_metrics_bootstrap(in_tmp: Path) -> None:
    """Bootstrap Confidence Intervals: the summary lists the CIs; the seed reproduces them."""
    from autorubric_local.graders import CriterionGrader

    dataset, result = _metrics_run(in_tmp, CriterionGrader(llm_config=rule_judge()))

    def run() -> Any:
        return result.compute_metrics(dataset, bootstrap=True, n_bootstrap=1000, confidence_level=0.95, seed=42)

    metrics = run()
    assert "Bootstrap CIs (95%" in metrics.summary()
    assert metrics.bootstrap is not None
    assert run().summary() == metrics.summary()


def test_001_metrics_per_judge(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Per-Judge Metrics (ensemble)."""
    from autorubric_local.graders import CriterionGrader, JudgeSpec

    grader = CriterionGrader(
        judges=[
            JudgeSpec(rule_judge(name="a"), "gpt-4"),
            JudgeSpec(rule_judge(default="UNMET", name="b"), "claude"),
        ],
        aggregation="majority",
    )
    dataset, result = _metrics_run(in_tmp, grader)
    metrics = result.compute_metrics(dataset, per_judge=True)
    for judge_id, jm in metrics.per_judge.items():
        print(f"{judge_id}: Accuracy={jm.criterion_accuracy:.1%}, RMSE={jm.score_rmse:.4f}")
    out = sorted(capsys.readouterr().out.splitlines())
    assert out[0].startswith("claude: Accuracy=25.0%, RMSE=")
    assert out[1].startswith("gpt-4: Accuracy=75.0%, RMSE=")


def test_001_loading_rubrics(in_tmp: Path) -> None:
    """Loading Rubrics: constructor, dicts, JSON and YAML strings and files, default weight."""
    from autorubric_local import Criterion, Rubric

    rubric = Rubric([
        Criterion(name="margin", weight=10.0, requirement="States Q4 2023 base margin as 17.2%"),
        Criterion(name="attribution", weight=8.0, requirement="Explicitly uses Shapley attribution for decomposition"),
        Criterion(name="error_deliveries", weight=-15.0, requirement="Uses total deliveries instead of cash-only deliveries"),
    ])
    assert [c.weight for c in rubric.rubric] == [10.0, 8.0, -15.0]

    rubric = Rubric.from_dict(json.loads(RUBRIC_JSON))
    assert [c.name for c in rubric.rubric] == ["margin", "attribution", None]

    rubric = Rubric.from_json('[{"weight": 10.0, "requirement": "Example requirement"}]')
    assert rubric.rubric[0].requirement == "Example requirement"
    yaml_data = '''
- weight: 10.0
  requirement: "Example requirement"
'''
    assert Rubric.from_yaml(yaml_data).rubric[0].weight == 10.0

    write("rubric.json", RUBRIC_JSON)
    write("rubric.yaml", RUBRIC_YAML)
    from_json, from_yaml = Rubric.from_file("rubric.json"), Rubric.from_file("rubric.yaml")
    assert [c.model_dump() for c in from_json.rubric] == [c.model_dump() for c in from_yaml.rubric]
    assert [c.name for c in from_yaml.rubric] == ["margin", "attribution", None]

    rubric = Rubric.from_dict([
        {"requirement": "Is factually accurate"},
        {"requirement": "Is clearly written"},
        {"requirement": "Addresses the question"},
    ])
    assert [c.weight for c in rubric.rubric] == [10.0, 10.0, 10.0]


def test_001_sectioned_rubrics(in_tmp: Path) -> None:
    """Sectioned Format (YAML file and JSON object): criteria are flattened."""
    from autorubric_local import Rubric

    write("rubric.yaml", """\
# rubric.yaml with sections
rubric:
  sections:
    - name: "Accuracy"
      criteria:
        - weight: 10.0
          requirement: "States the correct answer"
        - weight: 5.0
          requirement: "Provides supporting evidence"
    - name: "Errors"
      criteria:
        - weight: -15.0
          requirement: "Contains factual errors"
""")
    rubric = Rubric.from_file("rubric.yaml")
    assert [(c.weight, c.requirement) for c in rubric.rubric] == [
        (10.0, "States the correct answer"), (5.0, "Provides supporting evidence"), (-15.0, "Contains factual errors")]
    rubric = Rubric.from_json("""{
  "rubric": {
    "sections": [
      {
        "name": "Accuracy",
        "criteria": [
          {"weight": 10.0, "requirement": "States the correct answer"}
        ]
      }
    ]
  }
}""")
    assert [c.requirement for c in rubric.rubric] == ["States the correct answer"]


def test_001_parse_failure_defaults() -> None:
    """Error Handling: a failed judgment counts as UNMET (positive) or MET (negative)."""
    from autorubric_local import LLMConfig, Rubric
    from autorubric_local.graders import CriterionGrader

    engine = ScriptedEngine()
    engine.enqueue_scores("parse: not JSON", "parse: not JSON")
    grader = CriterionGrader(llm_config=LLMConfig(model="scripted", engine=engine))
    rubric = Rubric.from_dict([
        {"weight": 10.0, "requirement": "States the answer"},
        {"weight": -5.0, "requirement": "Contains an error"},
    ])
    report = asyncio.run(rubric.grade(to_grade="42", grader=grader))
    assert [str(cr.final_verdict) for cr in report.report] == ["UNMET", "MET"]
    assert all(cr.is_error for cr in report.report)


def test_001_dataset_support(in_tmp: Path) -> None:
    """Dataset Support: build, serialise, load, score verdicts (10 of 15)."""
    from autorubric_local import Criterion, CriterionVerdict, Rubric, RubricDataset

    rubric = Rubric([
        Criterion(name="Accuracy", weight=10.0, requirement="Factually correct"),
        Criterion(name="Clarity", weight=5.0, requirement="Clear and concise"),
    ])
    dataset = RubricDataset(name="photosynthesis-eval", prompt="Explain photosynthesis", rubric=rubric)
    dataset.add_item(
        submission="Photosynthesis is the process by which plants convert sunlight...",
        description="Good response",
        ground_truth=[CriterionVerdict.MET, CriterionVerdict.MET],
    )
    json_str = dataset.to_json()
    dataset.to_file("dataset.json")
    loaded = RubricDataset.from_json(json_str)
    assert loaded.to_json() == json_str
    loaded = RubricDataset.from_file("dataset.json")
    assert (loaded.name, len(loaded), loaded.items[0].ground_truth) == (
        "photosynthesis-eval", 1, [CriterionVerdict.MET, CriterionVerdict.MET])
    score = dataset.compute_weighted_score([CriterionVerdict.MET, CriterionVerdict.UNMET], normalize=True)
    assert score == pytest.approx(10 / 15)


def test_001_per_item_rubrics(in_tmp: Path) -> None:
    """Per-Item Rubrics: each item's own rubric; a null rubric on both levels is a ValueError."""
    from autorubric_local import Criterion, DataItem, Rubric, RubricDataset

    item1 = DataItem(
        submission="Answer to question 1...",
        description="Q1",
        rubric=Rubric([Criterion(name="Accuracy", weight=1.0, requirement="Correct answer for Q1")]),
    )
    item2 = DataItem(
        submission="Answer to question 2...",
        description="Q2",
        rubric=Rubric([
            Criterion(name="Relevance", weight=2.0, requirement="Relevant to Q2"),
            Criterion(name="Depth", weight=1.0, requirement="Provides depth for Q2"),
        ]),
    )
    dataset = RubricDataset(prompt="Answer the question", rubric=None, items=[item1, item2])
    rubric = dataset.get_item_rubric(0)
    assert rubric is item1.rubric
    assert [c.name for c in dataset.get_item_rubric(1).rubric] == ["Relevance", "Depth"]

    document = {
        "prompt": "Answer the question",
        "rubric": None,
        "items": [{"submission": "Response text", "description": "Q1",
                   "rubric": [{"name": "Accuracy", "weight": 1.0, "requirement": "..."}]}],
    }
    write("items.json", json.dumps(document))
    assert RubricDataset.from_file("items.json").get_item_rubric(0).rubric[0].name == "Accuracy"
    del document["items"][0]["rubric"]
    write("items.json", json.dumps(document))
    with pytest.raises(ValueError):
        RubricDataset.from_file("items.json")


def test_001_reference_submissions() -> None:
    """Reference Submissions: item level wins over dataset level; the judge sees it."""
    from autorubric_local import Criterion, Rubric, RubricDataset
    from autorubric_local.graders import CriterionGrader

    dataset = RubricDataset(
        prompt="Explain photosynthesis",
        rubric=Rubric([
            Criterion(name="Completeness", weight=1.0, requirement="Covers all key steps"),
            Criterion(name="Accuracy", weight=1.0, requirement="Scientifically accurate"),
        ]),
        reference_submission="Photosynthesis is the process by which plants convert light "
        "energy into chemical energy. It occurs in chloroplasts and has two stages: "
        "light-dependent reactions in thylakoids producing ATP and NADPH, and the "
        "Calvin cycle in the stroma fixing CO2 into glucose.",
    )
    dataset.add_item(
        submission="Plants make food from sunlight.",
        description="Student answer",
        reference_submission="Custom reference for this specific item",
    )
    dataset.add_item(submission="Chlorophyll absorbs light.", description="Another answer")
    ref = dataset.get_item_reference_submission(0)
    assert ref == "Custom reference for this specific item"
    assert dataset.get_item_reference_submission(1).startswith("Photosynthesis is the process")

    judge = rule_judge()
    grader = CriterionGrader(llm_config=judge)
    item, rubric = dataset.items[0], dataset.rubric
    report = asyncio.run(rubric.grade(
        to_grade=item.submission, grader=grader, query=dataset.prompt, reference_submission=ref))
    assert report.error is None
    assert all(ref in r.prefix and "Explain photosynthesis" in r.prefix for r in judge.engine.history)


def test_001_fill_ground_truth(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Generating Synthetic Ground Truth: unlabelled items get verdicts; the input is unchanged."""
    from autorubric_local import CriterionVerdict, RubricDataset
    from autorubric_local.graders import CriterionGrader
    from autorubric_local.utils import fill_ground_truth

    original = _essays("unlabeled.json", n=3)
    original.items[0] = original.items[0].__class__(**{**original.items[0].__dict__,
                                                       "ground_truth": [CriterionVerdict.UNMET] * 2})
    original.to_file("unlabeled.json")

    async def main():
        dataset = RubricDataset.from_file("unlabeled.json")
        # max_parallel_requests=10 left out: see test_001_rate_limited_ensemble.
        grader = CriterionGrader(llm_config=rule_judge({"evidence": "UNMET"}))
        labeled = await fill_ground_truth(dataset, grader, force=False, show_progress=True)
        print(f"Labeled {len(labeled)} of {len(dataset)} items")
        labeled.to_file("labeled.json")
        return dataset, labeled

    dataset, labeled = asyncio.run(main())
    assert capsys.readouterr().out.splitlines()[-1] == "Labeled 3 of 3 items"
    met, unmet = CriterionVerdict.MET, CriterionVerdict.UNMET
    assert [item.ground_truth for item in labeled.items] == [[unmet, unmet], [met, unmet], [met, unmet]]
    assert [item.ground_truth for item in dataset.items] == [[unmet, unmet], None, None]  # not modified
    assert RubricDataset.from_file("labeled.json").items[1].ground_truth == [met, unmet]


def test_001_fill_ground_truth_multi_choice() -> None:
    """fill_ground_truth: multi-choice ground truth holds option label strings."""
    from autorubric_local import Rubric, RubricDataset
    from autorubric_local.graders import CriterionGrader
    from autorubric_local.utils import fill_ground_truth

    dataset = RubricDataset(prompt="Help the user", rubric=Rubric.from_yaml(SATISFACTION_YAML + EFFICIENCY_YAML))
    dataset.add_item(submission="Here is the answer.", description="one")
    grader = CriterionGrader(llm_config=rule_judge({"satisfied": "4", "exchange": "Just right"}))
    labeled = asyncio.run(fill_ground_truth(dataset, grader, show_progress=False))
    assert labeled.items[0].ground_truth == ["4", "Just right"]


def test_001_multi_choice_yaml_and_na(in_tmp: Path) -> None:
    """Ordinal / nominal YAML scales (001 and 000); an NA option is excluded from scoring."""
    from autorubric_local import Rubric

    rubric = Rubric.from_yaml(SATISFACTION_YAML + EFFICIENCY_YAML)
    satisfaction, efficiency = rubric.rubric
    assert (satisfaction.scale_type, efficiency.scale_type) == ("ordinal", "nominal")
    assert [o.value for o in satisfaction.options] == [0.0, 0.33, 0.67, 1.0]
    assert rubric.compute_score(["3", "Just right"]) == pytest.approx((10 * 0.67 + 5 * 1.0) / 15)
    assert rubric.compute_score(["4", "Too many interactions"]) == pytest.approx(10 / 15)

    na_rubric = Rubric.from_yaml("""\
- requirement: "Are the claims supported by references?"
  weight: 10.0
  options:
    - label: "None"
      value: 0.0
    - label: "All claims"
      value: 1.0
    - label: "NA - No references provided"
      na: true  # Excluded from scoring
- requirement: "Is it polite?"
  weight: 10.0
""")
    assert na_rubric.rubric[0].options[2].na is True
    assert na_rubric.compute_score(["NA - No references provided", "MET"]) == 1.0  # 10 / 10
    assert na_rubric.compute_score(["None", "MET"]) == 0.5


def test_001_multi_choice_ensemble_aggregation() -> None:
    """Multi-choice ensemble aggregation: mean for ordinal, mode for nominal, majority binary."""
    from autorubric_local import Rubric
    from autorubric_local.graders import CriterionGrader, JudgeSpec

    picks = [("2", "Just right", "MET"), ("3", "Just right", "MET"), ("4", "Too few interactions", "UNMET")]
    grader = CriterionGrader(
        judges=[JudgeSpec(rule_judge({"satisfied": s, "exchange": e}, default=b, name=f"j{i}"), f"j{i}")
                for i, (s, e, b) in enumerate(picks)],
        aggregation="majority",
        ordinal_aggregation="mean",
        nominal_aggregation="mode",
    )
    rubric = Rubric.from_yaml(SATISFACTION_YAML + EFFICIENCY_YAML + "- requirement: Is polite\n")
    report = asyncio.run(rubric.grade(to_grade="Hello", grader=grader))
    satisfaction, efficiency, polite = report.report
    mean = (0.33 + 0.67 + 1.0) / 3
    assert satisfaction.final_multi_choice_verdict.aggregated_value == pytest.approx(mean)
    assert satisfaction.final_multi_choice_verdict.selected_label == "3"  # snapped to 0.67
    assert efficiency.final_multi_choice_verdict.selected_label == "Just right"
    assert str(polite.final_verdict) == "MET"


def test_001_and_000_ground_truth_format(in_tmp: Path) -> None:
    """Ground Truth Format: a verdict for binary criteria, option labels for multi-choice."""
    from autorubric_local import CriterionVerdict, Rubric, RubricDataset

    rubric = Rubric.from_yaml("- requirement: Is accurate\n  weight: 10.0\n" + SATISFACTION_YAML + EFFICIENCY_YAML)
    dataset = RubricDataset(prompt="Help the user", rubric=rubric)
    dataset.add_item(
        submission="Response text...",
        description="Good response",
        ground_truth=[
            CriterionVerdict.MET,  # Binary criterion
            "4",  # Multi-choice: satisfaction (ordinal)
            "Just right",  # Multi-choice: efficiency (nominal)
        ],
    )
    assert dataset.compute_weighted_score(dataset.items[0].ground_truth) == 1.0
    dataset.to_file("gt.json")
    assert RubricDataset.from_file("gt.json").items[0].ground_truth == [CriterionVerdict.MET, "4", "Just right"]


CLIENT_EXPORTS = ["GenerateResult", "LLMClient", "ThinkingConfig", "generate"]


def test_001_public_exports() -> None:
    """Public Exports: the README's import list, less the LLM client names (next test)."""
    from autorubric_local import (  # noqa: F401
        AggregatedMultiChoiceVerdict,
        AggregationStrategy,
        BiasResult,
        BootstrapResult,
        BootstrapResults,
        CannotAssessConfig,
        CannotAssessMode,
        CannotAssessStrategy,
        ConfidenceInterval,
        CorrelationResult,
        CountFn,
        Criterion,
        CriterionJudgment,
        CriterionMetrics,
        CriterionOption,
        CriterionReport,
        CriterionVerdict,
        DataItem,
        DistributionResult,
        EMDResult,
        EnsembleCriterionReport,
        EnsembleEvaluationReport,
        EvalConfig,
        EvalResult,
        EvalRunner,
        EvalTimingStats,
        EvaluationReport,
        ExperimentManifest,
        FewShotConfig,
        FewShotExample,
        ItemResult,
        JudgeMetrics,
        JudgeVote,
        KSTestResult,
        LengthPenalty,
        LLMConfig,
        MetricsResult,
        MultiChoiceJudgeVote,
        MultiChoiceJudgment,
        MultiChoiceVerdict,
        NominalAggregation,
        OrdinalAggregation,
        PenaltyType,
        Rubric,
        RubricDataset,
        ScaleType,
        ThinkingLevel,
        ThinkingLevelLiteral,
        ThinkingOutputDict,
        ThinkingParam,
        ToGradeInput,
        TokenUsage,
        aggregate_completion_cost,
        aggregate_evaluation_usage,
        aggregate_token_usage,
        compute_length_penalty,
        compute_metrics,
        earth_movers_distance,
        evaluate,
        extract_verdicts_from_report,
        fill_ground_truth,
        filter_cannot_assess,
        ks_test,
        normalize_to_grade_input,
        parse_thinking_output,
        score_distribution,
        systematic_bias,
        verdict_to_binary,
        verdict_to_string,
        wasserstein_distance,
        word_count,
    )
    from autorubric_local.graders import (  # noqa: F401
        CriterionGrader,
        Grader,
        JudgeSpec,
    )

    assert callable(evaluate) and callable(compute_metrics)


def test_001_public_exports_llm_client() -> None:
    """Public Exports: the LLM infrastructure names."""
    from autorubric_local import GenerateResult, LLMClient, ThinkingConfig, generate  # type: ignore[attr-defined]

    assert all((GenerateResult, LLMClient, ThinkingConfig, generate))


# ==== spec 000: multi-choice =====================================================================


def _ensemble(picks: list[str], binary: str = "MET", **kwargs: Any) -> Any:
    """An ensemble whose judge i picks option ``picks[i]`` on every multi-choice criterion."""
    from autorubric_local.graders import CriterionGrader, JudgeSpec

    def judge(pick: str, i: int) -> Any:
        config = rule_judge(default=binary, name=f"j{i}")
        choose = config.engine.policy

        def policy(request: ScoreRequest) -> list[float]:
            if request.labels[0] == 'MET"':
                return choose(request)
            shown = re.findall(r"^(\d+)\. (.*)$", request.suffix.split("Options:")[1], flags=re.MULTILINE)
            position = next(int(p) - 1 for p, label in shown if label.strip() == pick)
            return [math.log(0.9 if k == position else 0.1 / (len(request.labels) - 1))
                    for k in range(len(request.labels))]

        config.engine.policy = policy
        return config

    return CriterionGrader(judges=[JudgeSpec(judge(p, i), f"j{i}") for i, p in enumerate(picks)], **kwargs)


SATISFIED = """\
- name: satisfaction
  requirement: "How satisfied would you be?"
  weight: {weight}
  scale_type: {scale}
  options:
    - {{label: "Very dissatisfied", value: 0.0}}
    - {{label: "Dissatisfied", value: 0.33}}
    - {{label: "Satisfied", value: 0.67}}
    - {{label: "Very satisfied", value: 1.0}}
"""


def _grade_choice(picks: list[str], weight: float = 10.0, scale: str = "ordinal", extra: str = "", **kwargs: Any):
    from autorubric_local import Rubric

    rubric = Rubric.from_yaml(SATISFIED.format(weight=weight, scale=scale) + extra)
    report = asyncio.run(rubric.grade(to_grade="Hi", grader=_ensemble(picks, **kwargs)))
    return report.report[0].final_multi_choice_verdict


def test_000_ordinal_min_max() -> None:
    """Ordinal min/max: selections {0.67, 0.67, 1.0} give min -> 0.67 option, max -> 1.0 option."""
    picks = ["Satisfied", "Satisfied", "Very satisfied"]
    assert _grade_choice(picks, ordinal_aggregation="min").selected_label == "Satisfied"
    assert _grade_choice(picks, ordinal_aggregation="max").selected_label == "Very satisfied"


def test_000_ordinal_mean_snaps() -> None:
    """AggregatedMultiChoiceVerdict: mean of [0.0, 0.33, 0.67] = 0.33, snapped to option 1."""
    verdict = _grade_choice(["Very dissatisfied", "Dissatisfied", "Satisfied"], ordinal_aggregation="mean")
    assert (verdict.selected_index, verdict.selected_label, verdict.value) == (1, "Dissatisfied", 0.33)
    assert verdict.aggregated_value == pytest.approx(0.3333, abs=1e-3)
    assert verdict.na is False


def test_000_tie_breaking() -> None:
    """Ties resolve to the score-minimizing option: lowest value for weight >= 0, highest below."""
    picks = ["Dissatisfied", "Satisfied"]
    assert _grade_choice(picks, ordinal_aggregation="mode").selected_label == "Dissatisfied"
    assert _grade_choice(picks, weight=-10.0, ordinal_aggregation="mode").selected_label == "Satisfied"
    # mean 0.5 lies halfway between 0.33 and 0.67: the snap tie goes the same way.
    assert _grade_choice(picks, ordinal_aggregation="mean").selected_label == "Dissatisfied"
    assert _grade_choice(picks, scale="nominal", nominal_aggregation="weighted_mode").selected_label == "Dissatisfied"


def test_000_nominal_unanimous() -> None:
    """Nominal unanimous: disagreement abstains through the NA option; without one, mode + warning."""
    from autorubric_local import Rubric

    with_na = """\
- requirement: "Which tone?"
  scale_type: nominal
  options:
    - {label: Formal, value: 1.0}
    - {label: Casual, value: 0.5}
    - {label: "NA - no text", value: 0.0, na: true}
- requirement: "Is polite"
"""
    grader = _ensemble(["Formal", "Casual", "Casual"], nominal_aggregation="unanimous", binary="MET")
    report = asyncio.run(Rubric.from_yaml(with_na).grade(to_grade="Hi", grader=grader))
    assert report.report[0].final_multi_choice_verdict.na is True
    assert report.score == 1.0  # the abstained criterion is skipped; the other is MET

    agree = _ensemble(["Formal"] * 3, nominal_aggregation="unanimous", binary="MET")
    report = asyncio.run(Rubric.from_yaml(with_na).grade(to_grade="Hi", grader=agree))
    assert report.report[0].final_multi_choice_verdict.selected_label == "Formal"

    with pytest.warns(UserWarning, match="mode"):
        verdict = _grade_choice(["Satisfied", "Satisfied", "Dissatisfied"], scale="nominal",
                                nominal_aggregation="unanimous")
    assert verdict.selected_label == "Satisfied"


def test_000_position_bias_seeds(in_tmp: Path) -> None:
    """Position Bias Mitigation: a seed is generated by default, a pinned seed reproduces the
    shuffles, shuffle_options=False disables them, and checkpoints keep the order."""
    from autorubric_local import EvalResult, Rubric, RubricDataset, evaluate
    from autorubric_local.graders import CriterionGrader

    config = rule_judge(default="Satisfied")
    rubric = Rubric.from_yaml("".join(SATISFIED.format(weight=10.0, scale="ordinal").replace(
        "satisfaction", f"s{i}").replace("How satisfied", f"Q{i}: how satisfied") for i in range(6)))

    def orders(grader: CriterionGrader) -> list[list[int] | None]:
        report = asyncio.run(rubric.grade(to_grade="Hi", grader=grader))
        assert all(cr.final_multi_choice_verdict.selected_label == "Satisfied" for cr in report.report)
        return [cr.shuffle_order for cr in report.report]

    default = CriterionGrader(llm_config=config)
    assert default.seed is not None
    assert orders(CriterionGrader(llm_config=config, seed=42)) == orders(CriterionGrader(llm_config=config, seed=42))
    assert len({tuple(o) for o in orders(CriterionGrader(llm_config=config, seed=42))}) > 1
    unshuffled = orders(CriterionGrader(llm_config=config, shuffle_options=False))
    assert unshuffled == [None] * 6

    dataset = RubricDataset(prompt="p", rubric=rubric)
    dataset.add_item(submission="Hi", description="one")
    result = asyncio.run(evaluate(dataset, CriterionGrader(llm_config=config, seed=42),
                                  experiment_name="shuffles", show_progress=False))
    stored = EvalResult.from_experiment("experiments/shuffles")
    assert [cr.shuffle_order for cr in stored.item_results[0].report.report] == [
        cr.shuffle_order for cr in result.item_results[0].report.report]


def test_000_criterion_option_and_verdicts() -> None:
    """CriterionOption, MultiChoiceVerdict, AggregatedMultiChoiceVerdict, MultiChoiceJudgeVote examples."""
    from pydantic import ValidationError

    from autorubric_local import (
        AggregatedMultiChoiceVerdict,
        CriterionOption,
        MultiChoiceJudgeVote,
        MultiChoiceJudgment,
        MultiChoiceVerdict,
    )

    options = [
        CriterionOption(label="Very dissatisfied", value=0.0),
        CriterionOption(label="Dissatisfied", value=0.33),
        CriterionOption(label="Satisfied", value=0.67),
        CriterionOption(label="Very satisfied", value=1.0),
    ]
    assert [o.na for o in options] == [False] * 4
    na_option = CriterionOption(label="N/A - No claims made", value=0.0, na=True)
    assert na_option.na
    with pytest.raises(ValidationError, match=re.escape("Option value must be in [0, 1], got 1.5")):
        CriterionOption(label="Too good", value=1.5)

    verdict = MultiChoiceVerdict(selected_index=2, selected_label="Satisfied", value=0.67, na=False)
    assert (verdict.selected_index, verdict.selected_label) == (2, "Satisfied")
    aggregated = AggregatedMultiChoiceVerdict(
        selected_index=1, selected_label="Dissatisfied", value=0.33, aggregated_value=0.33, na=False)
    assert isinstance(aggregated, MultiChoiceVerdict)
    vote = MultiChoiceJudgeVote(judge_id="gpt-4", selected_index=None, selected_label=None, value=0.0,
                                reason="", na=True, error="infrastructure: timeout")
    assert vote.is_error and vote.weight == 1.0
    judgment = MultiChoiceJudgment(selected_option=1, explanation="Basic.")
    assert (judgment.selected_option, judgment.reasoning) == (1, None)


# ==== spec 003: core grading ====================================================================


def test_003_quick_example(in_tmp: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Quick Example: constructors, default weight 10.0, file loading, guarded printing."""
    from autorubric_local import Criterion, LLMConfig, Rubric
    from autorubric_local.graders import CriterionGrader

    rubric = Rubric([
        Criterion(name="accuracy", weight=10.0, requirement="States the correct answer"),
        Criterion(name="clarity", weight=5.0, requirement="Explains reasoning clearly"),
        Criterion(weight=-15.0, requirement="Contains factual errors"),  # name optional
    ])
    assert rubric.rubric[2].name is None
    rubric = Rubric.from_dict([
        {"weight": 10.0, "requirement": "States the correct answer"},
        {"requirement": "Explains reasoning clearly"},  # weight defaults to 10.0
    ])
    assert rubric.rubric[1].weight == 10.0
    write("rubric.yaml", RUBRIC_YAML)
    rubric = Rubric.from_file("rubric.yaml")

    grader = CriterionGrader(llm_config=LLMConfig(model=str(tiny_model_dir)))
    result = asyncio.run(rubric.grade(to_grade="...", grader=grader))
    print(f"Score: {result.score:.2f}" if result.score is not None else "Score: n/a (grade failed)")
    for cr in result.report:
        verdict = cr.final_verdict.value if cr.final_verdict is not None else "n/a"
        print(f"  [{verdict}] {cr.criterion.requirement}")
        print(f"    Reason: {cr.final_reason}")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Score: {result.score:.2f}"
    assert [re.fullmatch(r"  \[(MET|UNMET|CANNOT_ASSESS)\] .+", line) is not None for line in out[1::2]] == [True] * 3
    assert result.score == pytest.approx(formula_score(result))


def test_003_criterion_examples_and_methods() -> None:
    """Criterion: binary and ordinal examples, option lookups and their errors."""
    from pydantic import ValidationError

    from autorubric_local import Criterion, CriterionOption

    binary = Criterion(name="accuracy", weight=10.0, requirement="The response is factually accurate")
    assert binary.is_binary and not binary.is_multi_choice and binary.na_option_index is None
    ordinal = Criterion(
        name="satisfaction",
        weight=10.0,
        requirement="How satisfied would you be?",
        options=[
            CriterionOption(label="1", value=0.0),
            CriterionOption(label="2", value=0.33),
            CriterionOption(label="3", value=0.67),
            CriterionOption(label="4", value=1.0),
        ],
        scale_type="ordinal",
    )
    assert ordinal.is_multi_choice and ordinal.get_option_value(2) == 0.67
    with pytest.raises(ValueError, match="Binary criterion has no options"):
        binary.get_option_value(0)
    with pytest.raises(ValueError, match=re.escape("Option index 4 out of range [0, 4)")):
        ordinal.get_option_value(4)
    assert ordinal.find_option_by_label("  3 ") == 2
    with pytest.raises(ValueError, match=re.escape("Label '5' not found. Available: ['1', '2', '3', '4']")):
        ordinal.find_option_by_label("5")

    assert ordinal.worst_option_among([3, 1, 2]) == 1
    negative = ordinal.model_copy(update={"weight": -10.0})
    assert negative.worst_option_among([1, 2, 3]) == 3
    with pytest.raises(ValueError):
        ordinal.worst_option_among([])
    assert ordinal.worst_scored_option() == (0, ordinal.options[0])
    assert negative.worst_scored_option() == (3, ordinal.options[3])

    guaranteed = ordinal.with_guaranteed_na_option()
    assert len(guaranteed.options) == 5 and guaranteed.options[4].na and guaranteed.na_option_index == 4
    assert guaranteed.options[:4] == ordinal.options  # indices 0..N-1 stay stable
    assert guaranteed.with_guaranteed_na_option() is guaranteed
    with pytest.raises(ValueError):
        binary.with_guaranteed_na_option()

    with pytest.raises(ValidationError, match="at least 2 options"):
        Criterion(requirement="x", options=[CriterionOption(label="a", value=0.0)])
    with pytest.raises(ValidationError, match="at least 2 non-NA options"):
        Criterion(requirement="x", options=[CriterionOption(label="a", value=0.0),
                                            CriterionOption(label="b", value=0.0, na=True)])


def test_003_verdicts_and_criterion_report() -> None:
    """CriterionVerdict values; CriterionReport's score_value, is_na and is_error."""
    from autorubric_local import (
        Criterion,
        CriterionOption,
        CriterionReport,
        CriterionVerdict,
        MultiChoiceVerdict,
    )

    assert [v.value for v in CriterionVerdict] == ["MET", "UNMET", "CANNOT_ASSESS"]
    binary = Criterion(requirement="Is polite")
    met = CriterionReport.from_criterion(binary, verdict=CriterionVerdict.MET, reason="ok")
    assert (met.score_value, met.is_na, met.is_error) == (1.0, False, False)
    unknown = CriterionReport.from_criterion(binary, verdict=CriterionVerdict.CANNOT_ASSESS, reason="?")
    assert (unknown.score_value, unknown.is_na) == (0.0, True)
    failed = CriterionReport.from_criterion(binary, verdict=CriterionVerdict.UNMET, reason="",
                                            error="infrastructure: engine down")
    assert failed.is_error

    choice = Criterion(requirement="Quality", options=[CriterionOption(label="low", value=0.2),
                                                       CriterionOption(label="high", value=0.9),
                                                       CriterionOption(label="NA", value=0.0, na=True)])
    high = CriterionReport.from_criterion(choice, multi_choice_verdict=MultiChoiceVerdict(
        selected_index=1, selected_label="high", value=0.9, na=False), reason="")
    assert (high.score_value, high.is_na, high.verdict) == (0.9, False, None)
    na = CriterionReport.from_criterion(choice, multi_choice_verdict=MultiChoiceVerdict(
        selected_index=2, selected_label="NA", value=0.0, na=True), reason="")
    assert na.is_na


def test_003_rubric_loading_errors(in_tmp: Path) -> None:
    """Rubric loaders: the documented failures raise ValueError / FileNotFoundError."""
    from autorubric_local import Rubric

    with pytest.raises(ValueError, match="'sections' or 'rubric'"):
        Rubric.from_dict({"criteria": []})
    with pytest.raises(ValueError, match="Expected a list, got str"):
        Rubric.from_dict({"rubric": "oops"})
    with pytest.raises(ValueError, match="No criteria found"):
        Rubric.from_dict([])
    with pytest.raises(ValueError, match="index 0"):
        Rubric.from_dict(["not a dict"])
    with pytest.raises(ValueError, match="'criteria' must be a list"):
        Rubric.from_dict([{"name": "s", "criteria": "oops"}])
    with pytest.raises(ValueError, match="index 1"):
        Rubric.from_dict([{"requirement": "ok"}, {"weight": 1.0}])
    with pytest.raises(ValueError, match="JSON"):
        Rubric.from_json("[not json")
    with pytest.raises(ValueError, match="YAML"):
        Rubric.from_yaml("- [unclosed")
    with pytest.raises(FileNotFoundError, match="missing.yaml"):
        Rubric.from_file("missing.yaml")
    write("rubric.txt", "x")
    with pytest.raises(ValueError, match="Unsupported file format '.txt'"):
        Rubric.from_file("rubric.txt")
    write("rubric.yaml", RUBRIC_YAML)
    with open("rubric.yaml", encoding="utf-8") as f:
        assert len(Rubric.from_file(f).rubric) == 3  # file objects: format from their name
    import io

    with pytest.raises(ValueError, match="Cannot determine file format"):
        Rubric.from_file(io.StringIO(RUBRIC_YAML))
    with pytest.raises(TypeError):
        asyncio.run(Rubric.from_yaml(RUBRIC_YAML).grade(to_grade="x"))  # grader is required


def test_003_compute_score() -> None:
    """Rubric.compute_score: binary and multi-choice verdicts, strategies, raw sums, errors."""
    from autorubric_local import CannotAssessStrategy, CriterionVerdict, Rubric

    rubric = Rubric.from_yaml("- {requirement: Accurate, weight: 10}\n- {requirement: Has errors, weight: -5}\n"
                              + SATISFACTION_YAML)
    assert rubric.compute_score([CriterionVerdict.MET, "UNMET", "4"]) == 1.0
    assert rubric.compute_score(["MET", "MET", "3"]) == pytest.approx((10 - 5 + 6.7) / 20)
    assert rubric.compute_score(["MET", "MET", "1"], normalize=False) == pytest.approx(5.0)
    assert rubric.compute_score(["CANNOT_ASSESS", "UNMET", "4"]) == 1.0
    assert rubric.compute_score(["CANNOT_ASSESS", "UNMET", "4"],
                                cannot_assess_strategy=CannotAssessStrategy.PARTIAL,
                                partial_credit=0.5) == pytest.approx(15 / 20)
    with pytest.raises(ValueError, match="Expected 3 verdicts, got 1"):
        rubric.compute_score(["MET"])
    with pytest.raises(ValueError, match=re.escape(
            "Invalid binary verdict 'YES'. Must be 'MET', 'UNMET', or 'CANNOT_ASSESS'.")):
        rubric.compute_score(["YES", "UNMET", "4"])
    with pytest.raises(ValueError, match="requires a label string"):
        rubric.compute_score(["MET", "UNMET", CriterionVerdict.MET])


def test_003_evaluation_report_and_token_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """EvaluationReport and TokenUsage examples."""
    from autorubric_local import Rubric, TokenUsage
    from autorubric_local.graders import CriterionGrader

    grader = CriterionGrader(llm_config=rule_judge({"source": "CANNOT_ASSESS"}))
    rubric = Rubric.from_dict([{"requirement": "Gives the answer"}, {"requirement": "Cites the source"}])
    result = asyncio.run(rubric.grade(to_grade="42", grader=grader))
    print(f"Score: {result.score:.2f}")
    if result.cannot_assess_count:
        print(f"Could not assess {result.cannot_assess_count} criteria")
    if result.token_usage:
        print(f"Tokens: {result.token_usage.total_tokens}")
    if result.completion_cost:
        print(f"Cost: ${result.completion_cost:.6f}")
    assert capsys.readouterr().out.splitlines() == [
        "Score: 1.00", "Could not assess 1 criteria", f"Tokens: {result.token_usage.total_tokens}"]

    usage = TokenUsage(prompt_tokens=100, completion_tokens=50, total_tokens=150)
    print(f"Total tokens: {usage.total_tokens}")
    assert capsys.readouterr().out == "Total tokens: 150\n"
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)


def test_003_to_grade_input() -> None:
    """ToGradeInput: a string or a ThinkingOutputDict, whose fields are both optional."""
    from autorubric_local import ThinkingOutputDict, normalize_to_grade_input

    partial: ThinkingOutputDict = {"output": "Final answer"}
    assert normalize_to_grade_input(partial)["output"] == "Final answer"
    assert normalize_to_grade_input(partial).get("thinking", "") == ""
    assert normalize_to_grade_input("plain")["output"] == "plain"

