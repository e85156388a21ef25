"""Golden hashes of every prompt text the judges see (issue 32, step S0).

Structured requests (issue 32) will move how requests are built; the text the engines see must
not move with it: prompt bytes are reused as prompt ids, content-free prior ids and the local
and hosted cache keys. This test plans every kind of task of the bundled example
(``examples/battery_*``) under the planning variants (single and cyclic option orders, shuffled
or not, auto-NA, few-shot examples, a job's and a judge's own system prompt, selection tasks,
content-free priors) with three chat formatters (the hosted serialisation, the scripted ChatML
rendering and the completion layout for base models), and hashes (SHA-256) every text an
engine is sent for them: prefix, verdict-first suffix, both reasoning-first suffixes (open and
with an explanation), the explain suffixes after every label in both explanation styles, and
the label sets. For the hosted formatter it also runs each judging mode through a
:class:`~autorubric_local.engine.hosted.backend.HostedEngine` with a recording client and
hashes the messages it sends and the answer schema it asks with.

The hashes are recorded in ``tests/data/request_golden.json``. After an intended prompt change,
record them again with ``python tests/test_request_golden.py --record`` and say why in the
commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.bias.selection import SelectionTask, plan_selection_tasks
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import CriterionJudgment, CriterionVerdict, MultiChoiceJudgment
from autorubric_local.engine.chat_text import format_completion
from autorubric_local.engine.hosted.backend import HostedEngine
from autorubric_local.engine.hosted.chat import format_chat as hosted_format_chat
from autorubric_local.engine.hosted_types import GenerateResult
from autorubric_local.engine.scripted import ScriptedEngine
from autorubric_local.graders.content_free import plan_content_free
from autorubric_local.graders.contextual import CONTENT_FREE_INPUTS
from autorubric_local.graders.execution import JudgeMode, run_tasks
from autorubric_local.graders.few_shot import FewShotExample, render_examples
from autorubric_local.graders.planning import GradeItem, JudgmentTask, OptionPermutations, plan_tasks
from autorubric_local.graders.prompts import explanation_after_verdict, judge_system_prompt, render_item

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "request_golden.json"
REASON = "The submission states the figures."

Format = Callable[[list[dict[str, str]]], str]
FORMATS: dict[str, Format] = {
    "hosted": hosted_format_chat,
    "scripted": ScriptedEngine().format_chat,
    "completion": lambda messages: format_completion(messages, bos="<s>"),
}


def example_items() -> list[GradeItem]:
    rubric = tuple(Rubric.from_file(ROOT / "examples" / "battery_rubric.yaml"))
    rows = [json.loads(line) for line in (ROOT / "examples" / "battery_submissions.jsonl").read_text().splitlines() if line.strip()]
    return [GradeItem(submission=row["submission"], rubric=rubric, query=row.get("query"),
                      reference_submission=row.get("reference_submission"), item_id=row["id"]) for row in rows]


def selection_items() -> list[GradeItem]:
    """Selection tasks made of the example: its question and three of its answers (the second preferred)."""
    items = example_items()
    task = SelectionTask("battery", items[0].query or "", tuple(item.submission for item in items[:3]), preferred=1)
    return [task.to_grade_item()]


def few_shot(criterion: Any) -> str:
    items = example_items()
    label = criterion.options[0].label if criterion.options else "MET"
    examples = [FewShotExample(items[1].submission, label, "It gives the figures."),
                FewShotExample(items[2].submission, "UNMET" if not criterion.options else criterion.options[-1].label)]
    return render_examples(criterion, examples)


def scenarios(fmt: Format) -> dict[str, list[JudgmentTask]]:
    """Every planned task variant for one chat formatter."""
    items = example_items()
    judges = [("judge-a", fmt)]
    out = {
        "default": plan_tasks(items, judges),
        "unshuffled": plan_tasks(items, judges, shuffle_options=False),
        "cyclic_auto_na_seed7": plan_tasks(items, judges, permutations=OptionPermutations.CYCLIC,
                                           auto_na_option=True, seed=7),
        "few_shot": plan_tasks(items[:3], judges, examples=few_shot),
        "job_system_prompt": plan_tasks(items[:2], judges, system_prompt="Grade strictly. Answer in JSON."),
        "judge_system_prompts": plan_tasks(
            items[:2], [("judge-a", fmt, judge_system_prompt("YES", "NO", cannot_assess=False)), ("judge-b", fmt, None)],
            system_prompt="Job prompt."),
        "selection": plan_selection_tasks(selection_items(), "judge-a", fmt),
        "selection_unshuffled_own_prompt": plan_selection_tasks(
            selection_items(), "judge-a", fmt, shuffle_options=False, system_prompt="Pick the best response."),
    }
    return out


def content_free(fmt: Format) -> tuple[list[str], list[JudgmentTask]]:
    """The content-free plan of the default tasks: prior ids and the planned tasks."""
    items = example_items()
    tasks = plan_tasks(items, [("judge-a", fmt)])

    def render(judge_index: int, submission: str, query: str | None, reference: str | None) -> Any:
        return render_item(fmt, submission, query=query, reference_submission=reference)

    plan = plan_content_free(tasks, items, ["judge-a"], render, CONTENT_FREE_INPUTS)
    return plan.prior_ids, [task for prior in plan.tasks.values() for task in prior]


def task_texts(task: JudgmentTask) -> list[str]:
    """Every text an engine may be sent for ``task``, and its label sets."""
    labels = task.labels()
    texts = [task.prefix, task.suffix, json.dumps(labels), json.dumps(task.labels(True)),
             task.reasoning_suffix(REASON)]
    for style in ("free", "sentence"):
        texts.append(task.reasoning_suffix(None, style))  # type: ignore[arg-type]
        texts.extend(task.suffix + explanation_after_verdict(label, style) for label in labels)  # type: ignore[arg-type]
    return texts


def sha(value: object) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False).encode("utf-8")).hexdigest()


class RecordingClient:
    """A hosted client stand-in: records (messages, schema name) and answers the first label."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.config = type("Config", (), {"model": "recording"})()

    async def complete(self, messages: list[dict[str, str]], schema: Any, **_: Any) -> GenerateResult:
        self.calls.append((json.dumps(messages, ensure_ascii=False), schema.__name__))
        answer: CriterionJudgment | MultiChoiceJudgment
        if schema is CriterionJudgment:
            answer = CriterionJudgment(criterion_status=CriterionVerdict.MET, explanation=REASON)
        else:
            answer = MultiChoiceJudgment(selected_option=1, explanation=REASON)
        return GenerateResult(content=answer.model_dump_json(), parsed=answer, cost=0.0)


HOSTED_MODES: dict[str, dict[str, Any]] = {
    "score": {"mode": JudgeMode.SCORE, "reasoning_first": False},
    "explain_free": {"mode": JudgeMode.EXPLAIN, "reasoning_first": False},
    "explain_sentence": {"mode": JudgeMode.EXPLAIN, "reasoning_first": False, "explanation_style": "sentence"},
    "reasoning_first": {"mode": JudgeMode.SCORE, "reasoning_first": True},
}


def hosted_calls(tasks: list[JudgmentTask], settings: dict[str, Any]) -> list[tuple[str, str]]:
    client = RecordingClient()
    run_tasks(HostedEngine(client, top_logprobs=0), tasks, explanation_tokens=40, **settings)  # type: ignore[arg-type]
    return client.calls


def compute() -> dict[str, dict[str, Any]]:
    """The golden record: per scenario, the task count and the hash of its texts; for the hosted
    formatter, per scenario and mode, the hash of the distinct messages sent and of the calls
    (messages with the schema asked for, each call counted)."""
    record: dict[str, dict[str, Any]] = {}
    for name, fmt in FORMATS.items():
        planned = scenarios(fmt)
        prior_ids, free_tasks = content_free(fmt)
        planned["content_free"] = free_tasks
        for scenario, tasks in planned.items():
            entry: dict[str, Any] = {"tasks": len(tasks), "texts": sha([task_texts(t) for t in tasks])}
            if scenario == "content_free":
                entry["prior_ids"] = sha(prior_ids)
            if name == "hosted":
                for mode, settings in HOSTED_MODES.items():
                    calls = hosted_calls(tasks, settings)
                    entry[f"messages:{mode}"] = sha(sorted({messages for messages, _ in calls}))
                    entry[f"calls:{mode}"] = sha(sorted(calls))
                    entry[f"n_calls:{mode}"] = len(calls)
            record[f"{name}/{scenario}"] = entry
    return record


@pytest.fixture(scope="module")
def current() -> dict[str, dict[str, Any]]:
    return compute()


def test_every_scenario_is_recorded(current: dict[str, dict[str, Any]]) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert sorted(current) == sorted(golden)
    assert all(entry["tasks"] > 0 for entry in current.values())


def golden_keys() -> list[str]:
    return sorted(json.loads(GOLDEN.read_text())) if GOLDEN.exists() else []


@pytest.mark.parametrize("key", golden_keys())
def test_prompt_texts_match_the_golden_hashes(key: str, current: dict[str, dict[str, Any]]) -> None:
    """Every prompt byte of every planned task, and every hosted message and schema, as recorded."""
    golden = json.loads(GOLDEN.read_text())[key]
    assert current[key] == golden, f"{key}: prompt texts changed (re-record only for an intended change)"


def test_content_free_prior_ids_are_hashed_for_every_formatter(current: dict[str, dict[str, Any]]) -> None:
    assert all("prior_ids" in current[f"{name}/content_free"] for name in FORMATS)


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    GOLDEN.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
