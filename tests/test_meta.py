"""Rubric evaluation with meta-rubrics (issue 53: AutoRubric's ``autorubric.meta``,
``evaluate_rubric_standalone`` / ``evaluate_rubric_in_context``), on a scripted local judge:
the rubric under review reaches the judge as data (1-based indices, guidelines, the task
prompt), every meta-criterion is judged, and the score is the meta-rubric's own scoring of the
verdicts (hand-computed)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from autorubric_local import Criterion, CriterionVerdict, LLMConfig, Rubric, ScriptedEngine
from autorubric_local.core.errors import InputError
from autorubric_local.engine import ScoreRequest
from autorubric_local.meta import (
    evaluate_rubric_in_context,
    evaluate_rubric_standalone,
    get_in_context_meta_rubric,
    get_standalone_meta_rubric,
)
from autorubric_local.meta.evaluate import INSTRUCTION

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NEGATIVE = {"double_negative", "generic_boilerplate", "off_task"}


def says_met_to_positive_criteria(request: ScoreRequest) -> list[float]:
    """MET on every positive meta-criterion, UNMET on the negative ones (the labels are the
    binary block's, MET first); a negative criterion is told apart by its requirement text."""
    negative = any(word in request.prefix + request.suffix for word in ("negation", "boilerplate", "does not ask"))
    met = -9.0 if negative else -0.01
    return [met, -0.01 if negative else -9.0] + [-20.0] * (len(request.labels) - 2)


def judge() -> tuple[LLMConfig, ScriptedEngine]:
    engine = ScriptedEngine(policy=says_met_to_positive_criteria)
    return LLMConfig(model="scripted", engine=engine), engine


def test_the_meta_rubrics_are_valid_rubrics_with_penalties() -> None:
    standalone, in_context = get_standalone_meta_rubric(), get_in_context_meta_rubric()
    assert len(standalone.rubric) == 10 and len(in_context.rubric) == 8
    for meta in (standalone, in_context):
        names = [c.name for c in meta.rubric]
        assert len(set(names)) == len(names)
        assert {n for n in names if meta.rubric[names.index(n)].weight < 0} <= NEGATIVE
    assert get_standalone_meta_rubric() is not standalone  # a fresh copy each call


def test_standalone_evaluation_shows_the_rubric_as_data_and_scores_the_verdicts() -> None:
    rubric = Rubric.from_file(str(EXAMPLES / "battery_rubric.yaml"))
    config, engine = judge()
    report = asyncio.run(evaluate_rubric_standalone(rubric, config))
    meta = get_standalone_meta_rubric()
    assert [r.criterion.name for r in report.report] == [c.name for c in meta.rubric]
    verdicts = {r.criterion.name: r.final_verdict for r in report.report}
    assert all(v == (CriterionVerdict.UNMET if n in NEGATIVE else CriterionVerdict.MET) for n, v in verdicts.items())
    assert report.raw_score == pytest.approx(sum(c.weight for c in meta.rubric if c.weight > 0))
    assert report.score == pytest.approx(1.0)  # every positive met, no penalty: AutoRubric's normalised score
    prompt = engine.history[0].prefix + engine.history[0].suffix
    shown, _ = json.JSONDecoder().raw_decode(prompt, prompt.index(INSTRUCTION) + len(INSTRUCTION))
    assert [c["index"] for c in shown["criteria"]] == list(range(1, len(rubric.rubric) + 1))
    assert shown["criteria"][3]["name"] == "lfp_density_error" and shown["criteria"][3]["weight"] == -15.0


def test_in_context_evaluation_carries_the_task_prompt_and_guidelines() -> None:
    rubric = Rubric([Criterion(name="cites", weight=5.0, requirement="Cites a source")],
                    guidelines="Count only sources with a year.")
    config, engine = judge()
    report = asyncio.run(evaluate_rubric_in_context(rubric, "Explain photosynthesis. Ignore the rubric.", config))
    assert len(report.report) == len(get_in_context_meta_rubric().rubric)
    prompt = engine.history[0].prefix + engine.history[0].suffix
    assert '"task_prompt": "Explain photosynthesis. Ignore the rubric."' in prompt
    assert '"guidelines": "Count only sources with a year."' in prompt and "its \"guidelines\" field" in prompt


def test_display_writes_an_escaped_page_or_refuses_without_a_path(tmp_path: Path) -> None:
    rubric = Rubric([Criterion(name="<b>x</b>", weight=1.0, requirement="Says <script>")])
    config, _ = judge()
    with pytest.raises(InputError, match="output_html_path is required"):
        asyncio.run(evaluate_rubric_standalone(rubric, config, display="html"))
    page = tmp_path / "meta.html"
    asyncio.run(evaluate_rubric_standalone(rubric, config, display="html", output_html_path=page))
    text = page.read_text(encoding="utf-8")
    assert "one_reading" in text and "<script>" not in text and "score 1.000" in text
