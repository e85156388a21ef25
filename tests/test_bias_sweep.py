"""Position-bias sweeps end to end on scripted engines of known behaviour (plan_tasks / run_tasks,
one engine call per judge), unrelated options, selection tasks and their loader, SQLite rows,
and the ``sweep`` / ``sweep-select`` CLI on the tiny random judge."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from click.testing import CliRunner
from scipy.stats import entropy as scipy_entropy

from autorubric_local.bias import (
    SelectionTask,
    SweepKind,
    SweepSettings,
    Variant,
    load_selection_tasks,
    run_sweep,
)
from autorubric_local.bias.aggregate import IntervalMethod
from autorubric_local.bias.records import sweep_records
from autorubric_local.bias.report import sweep_to_dict
from autorubric_local.cli import main
from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import LLMConfig
from autorubric_local.store import Store, open_db

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SURE = 0.0
NEVER = -40.0


class CountingEngine(ScriptedEngine):
    """A scripted engine that counts its ``score`` calls (one workload = one call)."""

    def __init__(self, policy: Any, model_id: str = "scripted") -> None:
        super().__init__(model_id=model_id, policy=policy)
        self.score_calls = 0

    def score(self, requests: Sequence[ScoreRequest]) -> list[Any]:
        self.score_calls += 1
        return super().score(requests)


def shown(request: ScoreRequest) -> list[str]:
    """Option labels in shown order (rubric '1. label' lines or selection <response k> blocks)."""
    responses = re.findall(r"<response (\d+)>\n(.*?)\n</response \1>", request.suffix, flags=re.DOTALL)
    if responses:
        return [text for _, text in responses]
    block = request.suffix.split("</criterion>")[0]
    return [m.group(1) for m in re.finditer(r"^\d+\. (.*)$", block, flags=re.MULTILINE)]


def pick(position: int, n: int) -> list[float]:
    return [SURE if k == position else NEVER for k in range(n)]


def always_first(request: ScoreRequest) -> list[float]:
    return pick(0, len(request.labels))


def favourite(request: ScoreRequest) -> list[float]:
    """Always the same content: the alphabetically first label (whatever its position)."""
    labels = shown(request)
    return pick(labels.index(min(labels)), len(labels))


def uniform_random(seed: int) -> Any:
    rng = random.Random(seed)
    return lambda request: pick(rng.randrange(len(request.labels)), len(request.labels))


def options(*labels: str) -> list[CriterionOption]:
    return [CriterionOption(label=label, value=i / (len(labels) - 1)) for i, label in enumerate(labels)]


RUBRIC = (
    Criterion(name="facts", requirement="States a figure"),  # binary: skipped
    Criterion(name="depth", requirement="How deep?", options=options("Vague", "Basic", "Solid", "Expert")),
    Criterion(name="tone", requirement="Which tone?", options=options("Formal", "Casual", "Rude"), scale_type="nominal"),
)
ITEMS = [GradeItem(submission=f"Essay number {i} about batteries.", rubric=RUBRIC, item_id=f"e{i}") for i in range(5)]


def judge(policy: Any, judge_id: str = "j") -> tuple[JudgeSpec, CountingEngine]:
    engine = CountingEngine(policy, model_id=judge_id)
    return JudgeSpec(LLMConfig(model="scripted", engine=engine), judge_id), engine


# ---------------------------------------------------------------------------- known behaviours


def test_always_first_position_judge_scores_llm_0_and_grade_0() -> None:
    spec, engine = judge(always_first)
    result = run_sweep(ITEMS, [spec], SweepSettings(seed=1, n_bootstrap=50))
    assert engine.score_calls == 1  # the whole sweep is one workload
    assert len(engine.history) == len(ITEMS) * (4 + 3)  # binary criterion skipped
    assert len(result.cells) == len(ITEMS) * 2
    for cell in result.cells:
        assert cell.scores.llm_score == 0.0 and cell.scores.grade_score == 0.0
        assert cell.scores.choice_score == pytest.approx(1 / cell.scores.n_options)
        assert cell.scores.expected_grade_score == pytest.approx(0.0, abs=1e-9)
    depth, tone = result.aggregates
    assert (depth.criterion_name, tone.criterion_name) == ("depth", "tone")
    assert depth.grade_score.mean == 0.0 and depth.choice_score.mean == pytest.approx(0.25)
    assert depth.position_histogram == (4 * len(ITEMS), 0, 0, 0)
    assert depth.option_histogram == (len(ITEMS),) * 4
    assert depth.position_profile == pytest.approx((1.0, 0.0, 0.0, 0.0))
    # Wherever the modal option is shown, the judge picks position 1: one full column.
    assert depth.shown_vs_chosen == ((len(ITEMS), 0, 0, 0),) * 4


def test_same_content_judge_scores_1_everywhere() -> None:
    spec, _engine = judge(favourite)
    result = run_sweep(ITEMS, [spec], SweepSettings(seed=2, n_bootstrap=50))
    for cell in result.cells:
        s = cell.scores
        assert (s.llm_score, s.choice_score, s.grade_score) == (pytest.approx(1.0), 1.0, pytest.approx(1.0))
        labels = [o.label for o in cell.criterion.options or []]
        assert s.mode_option == labels.index(min(labels))
    for aggregate in result.aggregates:
        assert aggregate.grade_score.mean == pytest.approx(1.0)
        # every item scores 1: no zero-width [1, 1] but the Wilson interval of 5 items
        assert aggregate.grade_score.method is IntervalMethod.WILSON and aggregate.grade_score.ci_high == pytest.approx(1.0)
        assert aggregate.grade_score.ci_low == pytest.approx(5 / (5 + 1.959963984540054 ** 2))
        n = len(aggregate.shown_vs_chosen)
        assert all(aggregate.shown_vs_chosen[k][j] == (len(ITEMS) if k == j else 0) for k in range(n) for j in range(n))


def test_uniform_random_judge_matches_the_formulas() -> None:
    spec, _ = judge(uniform_random(7))
    result = run_sweep(ITEMS, [spec], SweepSettings(seed=3, n_bootstrap=0))
    for cell in result.cells:
        n = cell.scores.n_options
        positions = [r.chosen for r in cell.results]
        chosen_options = [r.task.option_order[r.chosen] for r in cell.results]  # type: ignore[index]
        llm = scipy_entropy([positions.count(k) for k in range(n)], base=2) / math.log2(n)
        choice = max(chosen_options.count(i) for i in range(n)) / n
        grade = 0.0 if llm + choice == 0 else 2 * llm * choice / (llm + choice)
        assert cell.scores.llm_score == pytest.approx(llm)
        assert cell.scores.choice_score == pytest.approx(choice)
        assert cell.scores.grade_score == pytest.approx(grade)
    depth = result.aggregates[0]
    assert depth.grade_score.mean == pytest.approx(
        sum(c.scores.grade_score for c in result.cells if c.criterion_index == 1) / len(ITEMS)  # type: ignore[misc]
    )
    assert depth.grade_score.ci_low is None  # n_bootstrap=0


def test_rotations_show_every_option_at_every_position_once() -> None:
    spec, engine = judge(always_first)
    run_sweep(ITEMS[:1], [spec], SweepSettings(seed=4))
    depth = [shown(r) for r in engine.history if isinstance(r, ScoreRequest) and "How deep?" in r.suffix]
    assert len(depth) == 4
    for position in range(4):
        assert sorted(order[position] for order in depth) == sorted(["Vague", "Basic", "Solid", "Expert"])
    assert len({r.prefix for r in engine.history if isinstance(r, ScoreRequest)}) == 1  # shared prefix


def test_failed_rotations_are_dropped_and_counted() -> None:
    spec, engine = judge(favourite)
    engine.enqueue_scores("engine: out of memory", "engine: out of memory")  # first two rotations
    result = run_sweep(ITEMS[:1], [spec], SweepSettings(seed=0, n_bootstrap=0))
    depth = result.cells[0]
    assert (depth.scores.n_rotations, depth.scores.n_dropped) == (2, 2)
    assert depth.scores.choice_score == 1.0
    assert depth.scores.llm_score == pytest.approx(math.log2(2) / math.log2(4))  # 2 distinct positions
    assert result.aggregates[0].n_dropped == 2
    assert sweep_to_dict(result)["items"][0]["errors"] == ["engine: out of memory"] * 2


def test_two_judges_one_engine_call_each() -> None:
    (a, engine_a), (b, engine_b) = judge(always_first, "first"), judge(favourite, "content")
    result = run_sweep(ITEMS, [a, b], SweepSettings(seed=5, n_bootstrap=20))
    assert (engine_a.score_calls, engine_b.score_calls) == (1, 1)
    by_judge = {(x.judge_id, x.criterion_name): x.grade_score.mean for x in result.aggregates}
    assert by_judge == {("first", "depth"): 0.0, ("first", "tone"): 0.0,
                        ("content", "depth"): pytest.approx(1.0), ("content", "tone"): pytest.approx(1.0)}
    payload = sweep_to_dict(result)
    assert {"llm_score", "choice_score", "grade_score", "grade_score_ci"} <= set(payload["results"][0])


def test_sweep_rejects_rubrics_without_multi_choice_criteria() -> None:
    spec, _ = judge(always_first)
    items = [GradeItem(submission="x", rubric=(RUBRIC[0],))]
    with pytest.raises(InputError, match="no multi-choice criterion"):
        run_sweep(items, [spec])


def test_sweep_rejects_items_sharing_an_id() -> None:
    # Stored rows are keyed by item id: an explicit "item-1" and a generated one would overwrite.
    spec, _ = judge(always_first)
    items = [GradeItem(submission="a", rubric=RUBRIC, item_id="item-1"), GradeItem(submission="b", rubric=RUBRIC)]
    with pytest.raises(InputError, match="item 1: id 'item-1' is already used by item 0"):
        run_sweep(items, [spec], SweepSettings(n_bootstrap=0))


# -------------------------------------------------------------------------- unrelated option


def test_unrelated_option_is_seeded_reproducible_and_borrowed() -> None:
    spec, engine = judge(favourite)
    settings = SweepSettings(seed=11, unrelated_option=True, n_bootstrap=20)
    first = run_sweep(ITEMS, [spec], settings)
    assert engine.score_calls == 1
    assert len(engine.history) == len(ITEMS) * (4 + 3 + 5 + 4)
    again = run_sweep(ITEMS, [judge(favourite)[0]], settings)
    labels = [(c.item_id, c.criterion_name, c.unrelated.label) for c in first.cells if c.unrelated]
    assert labels == [(c.item_id, c.criterion_name, c.unrelated.label) for c in again.cells if c.unrelated]
    for cell in first.cells:
        own = [o.label for o in RUBRIC[cell.criterion_index].options or []]
        if cell.variant is Variant.BASE:
            assert cell.unrelated is None and cell.scores.n_options == len(own)
            continue
        assert cell.unrelated is not None and cell.unrelated.label not in own
        assert cell.unrelated.source_criterion != cell.criterion_index
        assert cell.scores.n_options == len(own) + 1 and cell.unrelated_index == len(own)
        assert cell.criterion.options[-1].value == 0.0  # type: ignore[index]
    variants = [(a.criterion_name, a.variant.value) for a in first.aggregates]
    assert variants == [("depth", "base"), ("depth", "unrelated"), ("tone", "base"), ("tone", "unrelated")]
    assert all(a.unrelated_rate is not None for a in first.aggregates if a.variant is Variant.UNRELATED)


def test_unrelated_option_needs_something_to_borrow() -> None:
    spec, _ = judge(always_first)
    items = [GradeItem(submission=f"s{i}", rubric=(RUBRIC[1],)) for i in range(3)]
    with pytest.raises(InputError, match="no option from another criterion or item"):
        run_sweep(items, [spec], SweepSettings(unrelated_option=True))


def test_settings_are_validated() -> None:
    with pytest.raises(InputError, match=r"confidence must be in \(0, 1\), got 1.5"):
        SweepSettings(confidence=1.5)
    with pytest.raises(InputError, match="n_bootstrap must be >= 0, got -1"):
        SweepSettings(n_bootstrap=-1)


# ------------------------------------------------------------------------------ selection


def write_jsonl(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


SELECTION_ROWS = [
    {"id": "q1", "prompt": "Name a cathode material.", "candidates": ["LFP", "Water", "Sand", "Air"], "preferred": 0},
    {"id": "q2", "prompt": "Name an anode material.", "candidates": ["Copper", "Graphite", "Glass"], "preferred": 1},
    {"prompt": "Name a separator material.", "candidates": ["Polyethylene", "Steel"]},
]


def test_selection_tasks_load(tmp_path: Path) -> None:
    tasks = load_selection_tasks(write_jsonl(tmp_path / "t.jsonl", SELECTION_ROWS))
    assert [t.item_id for t in tasks] == ["q1", "q2", "item-2"]
    assert tasks[1] == SelectionTask("q2", "Name an anode material.", ("Copper", "Graphite", "Glass"), 1)
    item = tasks[0].to_grade_item()
    (criterion,) = item.rubric
    assert [o.label for o in criterion.options or []] == ["LFP", "Water", "Sand", "Air"]
    assert criterion.scale_type == "nominal"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"candidates": ["a", "b"]}, "line 2: field 'prompt': missing"),
        ({"prompt": "p", "candidates": ["a"]}, "line 2: field 'candidates': need at least 2 candidates, got 1"),
        ({"prompt": "p", "candidates": "ab"}, "line 2: field 'candidates': expected a list of strings, got string"),
        ({"prompt": "p", "candidates": ["a", " A"]}, "line 2: field 'candidates': candidate 1 repeats candidate 0"),
        ({"prompt": "p", "candidates": ["a", ""]}, "line 2: field 'candidates': candidate 1: empty"),
        ({"prompt": "p", "candidates": ["a", "b"], "preferred": 2}, r"line 2: field 'preferred': expected a candidate index in \[0, 1\], got 2"),
        ({"prompt": "p", "candidates": ["a", "b"], "best": 0}, "line 2: unknown field 'best' \\(allowed: "),
        ({"id": "q1", "prompt": "p", "candidates": ["a", "b"]}, "line 2: field 'id': duplicate id 'q1' \\(first on line 1\\)"),
        ("{not json", "line 2: invalid JSON"),
    ],
)
def test_selection_loader_errors_name_file_line_and_field(tmp_path: Path, row: object, message: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [SELECTION_ROWS[0], row])
    with pytest.raises(InputError, match=re.escape(str(path)) + ": " + message):
        load_selection_tasks(path)


def test_selection_loader_rejects_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="no selection tasks"):
        load_selection_tasks(path)


def test_selection_sweep_prompt_layout_and_agreement(tmp_path: Path) -> None:
    tasks = load_selection_tasks(write_jsonl(tmp_path / "t.jsonl", SELECTION_ROWS))

    def prefers_human_choice(request: ScoreRequest) -> list[float]:
        labels = shown(request)
        answers = {"cathode": "LFP", "anode": "Graphite", "separator": "Polyethylene"}
        best = next(answer for topic, answer in answers.items() if topic in request.prefix)
        return pick(labels.index(best), len(labels))

    spec, engine = judge(prefers_human_choice)
    settings = SweepSettings(kind=SweepKind.SELECTION, seed=0, n_bootstrap=20, unrelated_option=True)
    result = run_sweep([t.to_grade_item() for t in tasks], [spec], settings, preferred=[t.preferred for t in tasks])
    assert engine.score_calls == 1
    request = engine.history[0]
    assert isinstance(request, ScoreRequest)
    assert "<prompt>\nName a cathode material.\n</prompt>" in request.prefix and "LFP" not in request.prefix
    assert "<response 1>" in request.suffix and request.suffix.endswith('{"selected_option": ')
    base = [c for c in result.cells if c.variant is Variant.BASE]
    assert [c.scores.grade_score for c in base] == [pytest.approx(1.0)] * 3
    assert [c.agreement for c in base] == [1.0, 1.0, None]
    aggregate = result.aggregates[0]
    assert aggregate.agreement is not None and aggregate.agreement.mean == 1.0 and aggregate.agreement.n == 2
    assert aggregate.mode_agreement is not None and aggregate.mode_agreement.mean == 1.0
    unrelated = [c for c in result.cells if c.variant is Variant.UNRELATED]
    assert all(c.unrelated is not None and c.unrelated.source_item != c.item_index for c in unrelated)
    assert all(c.unrelated_chosen == 0 for c in unrelated)


# -------------------------------------------------------------------------------- storage


def test_sweep_rows_in_sqlite() -> None:
    spec, _ = judge(favourite)
    result = run_sweep(ITEMS[:2], [spec], SweepSettings(seed=1, unrelated_option=True, n_bootstrap=10))
    db = open_db(":memory:")
    store = Store(db)
    sweep_id = store.start_sweep(name="t", kind="rubric", config=result.settings.to_dict(), judges=[{"judge_id": "j"}],
                                 rubric=None, data_path=None)
    store.record_sweep(sweep_id, *sweep_records(result))
    store.finish_sweep(sweep_id)
    assert {"sweeps", "sweep_judgments", "sweep_scores", "sweep_aggregates"} <= set(db.table_names())
    (sweep,) = list(db["sweeps"].rows)
    assert sweep["status"] == "finished" and json.loads(sweep["config_json"])["unrelated_option"] is True
    assert db["sweep_judgments"].count == 2 * (4 + 3 + 5 + 4)
    assert db["sweep_scores"].count == 2 * 4 and db["sweep_aggregates"].count == 4
    row = next(db["sweep_judgments"].rows_where("variant = 'base' and criterion_index = 1 and rotation = 2"))
    order = json.loads(row["option_order_json"])
    assert row["chosen_option"] == order[row["chosen_position"]]
    assert len(json.loads(row["probabilities_json"])) == 4
    score = next(db["sweep_scores"].rows_where("variant = 'unrelated'"))
    assert score["grade_score"] == pytest.approx(1.0) and score["unrelated_label"]


# ------------------------------------------------------------------------------------ CLI


@pytest.fixture(scope="module")
def tiny_judge_dir(tmp_path_factory: pytest.TempPathFactory, tiny_model: Any) -> Path:
    """The tiny random judge saved as a Hugging Face folder (4096 positions: long prompts)."""
    folder = tmp_path_factory.mktemp("tiny-sweep-judge")
    tiny_model.model.save_pretrained(folder)
    tiny_model.tokenizer.save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["max_position_embeddings"] = 4096
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def invoke(*args: str | Path) -> Any:
    import torch

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch, "set_num_threads", lambda n: None)  # keep the suite single-threaded
        return CliRunner(env={"COLUMNS": "240"}).invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("command", ["sweep", "sweep-select"])
def test_sweep_commands_have_help_with_an_example(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0 and "Example:" in result.output
    assert f"autorubric-local {command}" in result.output
    for option in ("--model", "--judges", "--unrelated-option", "--db", "--plot", "--json"):
        assert option in result.output


def test_cli_sweep_json_plots_and_database(tmp_path: Path, tiny_judge_dir: Path) -> None:
    db_path, plots = tmp_path / "r.sqlite", tmp_path / "plots"
    result = invoke("sweep", EXAMPLES / "battery_rubric.yaml", EXAMPLES / "battery_submissions.jsonl",
                    "--model", tiny_judge_dir, "--limit", "2", "--unrelated-option", "--db", db_path,
                    "--plot", plots, "--json", "--bootstrap", "50")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    entries = payload["results"]
    assert [(e["criterion"], e["variant"]) for e in entries] == [
        ("technical_depth", "base"), ("technical_depth", "unrelated"),
        ("use_case_advice", "base"), ("use_case_advice", "unrelated"),
    ]
    for entry in entries:
        for key in ("llm_score", "choice_score", "grade_score"):
            assert 0.0 <= entry[key] <= 1.0
        assert entry["judge_id"] == str(tiny_judge_dir) and entry["n_items"] == 2
    assert sorted(p.name for p in plots.iterdir()) == sorted(["grade-scores.png", f"heatmap-{'_'.join(p for p in re.split(r'[^A-Za-z0-9._-]+', str(tiny_judge_dir)) if p)}.png"])
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in plots.iterdir())
    db = sqlite_utils.Database(db_path)
    assert db["sweep_judgments"].count == 2 * (4 + 3 + 5 + 4)
    assert payload["sweep_id"] in result.stderr


def test_cli_sweep_select_table(tmp_path: Path, tiny_judge_dir: Path) -> None:
    data = write_jsonl(tmp_path / "sel.jsonl", SELECTION_ROWS)
    result = invoke("sweep-select", data, "--model", tiny_judge_dir, "--db", tmp_path / "r.sqlite")
    assert result.exit_code == 0, result.output
    assert "best response" in result.stdout and "agreement" in result.stdout
    assert "3 items, 9 rotations" in result.stderr


def test_cli_sweep_select_bad_data_is_a_clean_error(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "sel.jsonl", [{"prompt": "p", "candidates": ["only"]}])
    result = invoke("sweep-select", data, "--db", tmp_path / "r.sqlite")
    assert result.exit_code == 1
    assert "line 1: field 'candidates': need at least 2 candidates" in result.output


def test_selection_rows_split_on_newlines_only_and_refuse_reserved_characters(tmp_path: Path) -> None:
    row = {"prompt": "line\u2028separator inside", "candidates": ["a\u0085b", "c"], "preferred": 0}
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")  # literal U+2028, U+0085
    assert "\u2028" in path.read_text(encoding="utf-8")
    (task,) = load_selection_tasks(path)
    assert task.prompt == "line\u2028separator inside" and task.candidates == ("a\u0085b", "c")
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "p", "candidates": ["a\ufdd0", "b"]}])
    with pytest.raises(InputError, match=r"line 1: field 'candidates': candidate 0: U\+FDD0"):
        load_selection_tasks(bad)
