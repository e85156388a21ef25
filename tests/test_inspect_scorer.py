"""The Inspect scorer (autorubric_local.inspect): Inspect evals run offline with ``mockllm/model``
as the model under test and our judges as the grader, the logs read back with Inspect's own
``read_eval_log``; the scorer found by name through the ``inspect_ai`` entry point."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

try:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import EvalLog, read_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate
except ImportError as exc:  # scripts/setup.sh installs the [inspect] extra: missing is a failure there
    from setup_state import missing

    missing(f"inspect-ai (the [inspect] extra) is missing: {exc}", "setup.sh", allow_module_level=True)

from autorubric_local.engine import ScriptedEngine
from autorubric_local.engine.base import ScoreRequest
from autorubric_local.graders import CriterionGrader
from autorubric_local.inspect import load_criteria, rubric_scorer
from autorubric_local.judges.config import LLMConfig

RUBRIC: list[dict[str, Any]] = [
    {"name": "answers", "weight": 10.0, "requirement": "The response answers the question asked."},
    {"name": "units", "weight": 5.0, "requirement": "The response states the units of its result."},
    {"name": "rude", "weight": -3.0, "requirement": "The response is rude to the reader."},
    {"name": "clarity", "weight": 4.0, "requirement": "How clear is the response?",
     "options": [{"label": "unclear", "value": 0.0}, {"label": "fair", "value": 0.5},
                 {"label": "clear", "value": 1.0}]},
]
SAMPLES = [
    ("What is 2 + 3 apples?", "5 apples", "Two plus three apples makes 5 apples."),
    ("How far is 3 km in metres?", "3000 m", "It is 3000 metres."),
    ("Name a primary colour.", "", "Red is a primary colour, obviously."),
]
"""(input, target, the mock model's completion); the third has no target (no reference)."""


def mock_model(samples: Sequence[tuple[str, str, str]] = SAMPLES) -> Any:
    """``mockllm/model`` answering each sample's input with its scripted completion (whatever the
    order Inspect runs the samples in). Each output carries its usage: without it mockllm counts
    tokens with tiktoken, which downloads its encoding (no network here)."""
    answers = {question: completion for question, _, completion in samples}

    def outputs(messages: list[Any], *_: Any) -> ModelOutput:
        output = ModelOutput.from_content(model="mockllm", content=answers[messages[-1].text])
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    return get_model("mockllm/model", custom_outputs=outputs)


def run_eval(scorer: Any, log_dir: Path, *, epochs: int = 1) -> EvalLog:
    """One eval of :data:`SAMPLES` with ``scorer``; its log as read back from disk."""
    task = Task(dataset=[Sample(input=q, target=t or [], id=i + 1) for i, (q, t, _) in enumerate(SAMPLES)],
                solver=generate(), scorer=scorer, epochs=epochs)
    [log] = eval(task, model=mock_model(), log_dir=str(log_dir), display="none", max_samples=2)
    assert log.status == "success", log.error
    read = read_eval_log(log.location)
    assert read.samples is not None and len(read.samples) == len(SAMPLES) * epochs
    return read


@pytest.fixture(scope="module")
def tiny_judge(tiny_model_dir: Path) -> LLMConfig:
    return LLMConfig(model=str(tiny_model_dir), backend="transformers", device="cpu")


def test_eval_scores_equal_grading_the_completion_directly(tiny_judge: LLMConfig, tmp_path: Path) -> None:
    log = run_eval(rubric_scorer(RUBRIC, model=tiny_judge, seed=3), tmp_path)
    direct = CriterionGrader(tiny_judge, seed=3)
    criteria = load_criteria(RUBRIC)
    assert log.samples is not None
    for sample in sorted(log.samples, key=lambda s: int(s.id)):
        question, target, completion = SAMPLES[int(sample.id) - 1]
        assert sample.output.completion == completion
        assert sample.scores is not None
        score = sample.scores["rubric_scorer"]
        report = direct.grade_inputs([(completion, criteria, question, target or None, "")])[0].report
        assert report.score is not None and isinstance(score.value, float)
        assert score.value == pytest.approx(report.score, abs=1e-6)
        assert score.answer == completion
        meta = score.metadata or {}
        assert meta["raw_score"] == pytest.approx(report.raw_score, abs=1e-6)
        rows, expected = meta["criteria"], report.report or []
        assert [row["name"] for row in rows] == ["answers", "units", "rude", "clarity"]
        for row, criterion in zip(rows, expected, strict=True):
            verdict = (criterion.final_verdict.value if criterion.final_verdict is not None
                       else criterion.final_multi_choice_verdict.selected_label)  # type: ignore[union-attr]
            assert row["verdict"] == verdict
            assert row["label_probabilities"] == pytest.approx(criterion.label_probabilities, abs=1e-6)
            assert row["probability"] == pytest.approx(row["label_probabilities"][verdict])
            assert row["off_label_mass"] is not None and 0.0 <= row["off_label_mass"] <= 1.0
            assert row["error"] is None
        lines = (score.explanation or "").splitlines()
        assert len(lines) == 4 and lines[0].startswith(f"answers: {rows[0]['verdict']} (p=")
    metrics = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}  # type: ignore[union-attr]
    values = [s.scores["rubric_scorer"].value for s in log.samples]  # type: ignore[index]
    assert metrics["mean"] == pytest.approx(sum(values) / len(values))


def _raising(request: ScoreRequest) -> Sequence[float]:
    raise RuntimeError("the judge's device fell over")


def test_a_failing_judge_gives_unscored_and_metrics_skip_it(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=_raising)
    log = run_eval(rubric_scorer(RUBRIC, model=LLMConfig(model="scripted", engine=engine)), tmp_path)
    assert log.samples is not None
    for sample in log.samples:
        score = sample.scores["rubric_scorer"]  # type: ignore[index]
        assert isinstance(score.value, float) and math.isnan(score.value)
        assert score.reason == "grader_failed"
        assert "the judge's device fell over" in (score.explanation or "")
        assert score.answer == sample.output.completion
        assert all(row["error"] for row in (score.metadata or {})["criteria"])
    assert engine.history  # the judge was called


def _favouring(verdict: str) -> Any:
    """A policy putting (almost) all the mass on ``verdict`` (labels are the verdict's JSON text: ``MET"``)."""
    return lambda request: [0.0 if label.startswith(f'{verdict}"') else -20.0 for label in request.labels]


def test_every_criterion_abstaining_is_unscored(tmp_path: Path) -> None:
    rubric = [c for c in RUBRIC if "options" not in c]
    engine = ScriptedEngine(policy=_favouring("CANNOT_ASSESS"))
    log = run_eval(rubric_scorer(rubric, model=LLMConfig(model="scripted", engine=engine)), tmp_path)
    assert log.samples is not None
    for sample in log.samples:
        score = sample.scores["rubric_scorer"]  # type: ignore[index]
        assert math.isnan(score.value) and score.reason == "grader_abstained"  # type: ignore[arg-type]
        assert [row["verdict"] for row in (score.metadata or {})["criteria"]] == ["CANNOT_ASSESS"] * 3


def test_epochs_and_reducers_see_each_epochs_score(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=_favouring("MET"))
    rubric = [c for c in RUBRIC if "options" not in c]
    log = run_eval(rubric_scorer(rubric, model=LLMConfig(model="scripted", engine=engine)), tmp_path, epochs=2)
    assert {s.epoch for s in log.samples or []} == {1, 2}
    # answers and units MET, rude MET (a penalty): (10 + 5 - 3) / 15, every epoch, so the mean reducer keeps it
    metrics = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}  # type: ignore[union-attr]
    assert metrics["mean"] == pytest.approx(12 / 15)


def test_inspect_finds_the_scorer_by_name(tiny_model_dir: Path, tmp_path: Path) -> None:
    """``inspect eval task.py --model mockllm/model``, then ``inspect score --scorer
    autorubric_local/rubric_scorer``: the name resolves through the entry point alone. Run outside the
    checkout, as a user would (from the checkout's root its build metadata, autorubric_local.egg-info,
    shadows the installed distribution and Inspect registers the name without its package prefix)."""
    (tmp_path / "rubric.json").write_text(json.dumps(RUBRIC[:2]), encoding="utf-8")
    (tmp_path / "task.py").write_text(
        "from inspect_ai import Task, task\n"
        "from inspect_ai.dataset import Sample\n"
        "from inspect_ai.model import ModelOutput, ModelUsage, get_model\n"
        "from inspect_ai.solver import generate\n"
        "from autorubric_local.inspect import rubric_scorer\n\n"
        "def hi(*_):  # with its usage: mockllm's own default counts tokens with tiktoken (a download)\n"
        "    output = ModelOutput.from_content(model='mockllm', content='Hi there!')\n"
        "    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)\n"
        "    return output\n\n"
        "@task\n"
        "def graded():\n"
        "    return Task(dataset=[Sample(input='Say hi.', target='hi')], solver=generate(),\n"
        "                model=get_model('mockllm/model', custom_outputs=hi),\n"
        f"                scorer=rubric_scorer('rubric.json', model={str(tiny_model_dir)!r}))\n",
        encoding="utf-8",
    )
    inspect_cli = Path(sys.executable).with_name("inspect")
    env = {**os.environ, "INSPECT_LOG_DIR": str(tmp_path / "logs"), "INSPECT_DISPLAY": "none"}
    done = subprocess.run([str(inspect_cli), "eval", "task.py", "--model", "mockllm/model"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [log_file] = sorted((tmp_path / "logs").glob("*.eval"))
    first = read_eval_log(str(log_file)).samples[0].scores["rubric_scorer"]  # type: ignore[index]
    rescored = subprocess.run(
        [str(inspect_cli), "score", str(log_file), "--scorer", "autorubric_local/rubric_scorer",
         "-S", "rubric=rubric.json", "-S", f"model={tiny_model_dir}", "--action", "overwrite", "--overwrite", "--display", "none"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert rescored.returncode == 0, rescored.stdout[-2000:] + rescored.stderr[-2000:]
    again = read_eval_log(str(log_file)).samples[0].scores["rubric_scorer"]  # type: ignore[index]
    assert isinstance(first.value, float) and again.value == pytest.approx(first.value, abs=1e-6)
