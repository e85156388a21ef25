"""Sweeps as first-class stored results (issue 51): ``sweep --criterion`` limits a sweep (and a
resume must match it), ``runs`` lists sweeps and comparisons with their kind, ``show NAME``
prints a stored sweep's table as ``sweep`` did (a comparison is pointed to ``ranking``), and the
table marks the intervals that replace a zero-width bootstrap interval. Every judge is a
ScriptedEngine swapped in for the model loader: no model is loaded."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from click.testing import CliRunner, Result

from autorubric_local.bias import SweepKind, SweepSettings, Variant, run_sweep
from autorubric_local.bias.aggregate import Estimate, IntervalMethod, SweepAggregate
from autorubric_local.bias import sweep as sweep_module
from autorubric_local.bias.checkpoint import sweep_content_hash, sweep_plan
from autorubric_local.bias.sweep import check_sweep_input, multi_choice_criteria
from autorubric_local.cli import main
from autorubric_local.cli.sweep import FEW_ITEMS, FEW_ITEMS_NOTE, WILSON_NOTE, _interval, sweep_table
from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders import criterion_grader
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import LLMConfig
from autorubric_local.store import Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RUBRIC_FILE, DATA_FILE = EXAMPLES / "battery_rubric.yaml", EXAMPLES / "battery_submissions.jsonl"
MULTI_CHOICE = ["technical_depth", "use_case_advice"]  # the example rubric's two; the rest are binary


def hashed(request: ScoreRequest) -> list[float]:
    """Label log-probabilities that vary with the prompt (deterministic)."""
    digest = hashlib.sha256((request.prefix + request.suffix).encode()).digest()
    weights = [1.0 + digest[k] for k in range(len(request.labels))]
    return [math.log(w / sum(weights)) for w in weights]


def always_first(request: ScoreRequest) -> list[float]:
    """Always the first shown option: LLM Score 0 and Grade Score 0 on every item."""
    return [0.0] + [-40.0] * (len(request.labels) - 1)


@pytest.fixture
def judge_policy(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], list[ScriptedEngine]]:
    """``judge_policy(policy)``: every judge the CLI loads (sweeps and grading) is a ScriptedEngine
    with ``policy``; returns the list of engines loaded."""
    engines: list[ScriptedEngine] = []

    def install(policy: Any) -> list[ScriptedEngine]:
        def load(config: LLMConfig) -> ScriptedEngine:
            engines.append(ScriptedEngine(model_id=config.model, policy=policy))
            return engines[-1]

        monkeypatch.setattr(sweep_module, "load_engine", load)
        monkeypatch.setattr(criterion_grader, "load_engine", load)
        return engines

    return install


def cli(*args: str | Path) -> Result:
    return CliRunner(env={"COLUMNS": "240"}).invoke(main, [str(a) for a in args], catch_exceptions=False)


def sweep(db: Path, *args: str | Path) -> Result:
    return cli("sweep", RUBRIC_FILE, DATA_FILE, "--db", db, "--bootstrap", "200", *args)


def table_rows(text: str) -> list[str]:
    """The body rows of the rich tables in ``text``, whitespace-normalised."""
    return [" ".join(line.split()) for line in text.splitlines() if line.startswith("│")]


# ------------------------------------------------------------------------ --criterion


def options(*labels: str) -> list[CriterionOption]:
    return [CriterionOption(label=label, value=i / (len(labels) - 1)) for i, label in enumerate(labels)]


RUBRIC = (
    Criterion(name="facts", requirement="States a figure"),  # binary
    Criterion(name="depth", requirement="How deep?", options=options("Vague", "Basic", "Solid", "Expert")),
    Criterion(name="tone", requirement="Which tone?", options=options("Formal", "Casual", "Rude"),
              scale_type="nominal"),
)
ITEMS = [GradeItem(submission=f"Essay {i} on batteries.", rubric=RUBRIC, item_id=f"e{i}") for i in range(3)]


def spec(policy: Any = hashed) -> JudgeSpec:
    return JudgeSpec(LLMConfig(model="scripted", engine=ScriptedEngine(model_id="j", policy=policy)), "j")


def test_criteria_limit_the_sweep_to_the_same_rotations_an_unlimited_sweep_has() -> None:
    everything = run_sweep(ITEMS, [spec()], SweepSettings(seed=3, n_bootstrap=0))
    judge = spec()
    limited = run_sweep(ITEMS, [judge], SweepSettings(seed=3, n_bootstrap=0, criteria=("tone",)))
    assert len(judge.llm_config.engine.history) == len(ITEMS) * 3  # type: ignore[union-attr]  # tone's rotations only
    assert [(a.criterion_name, a.criterion_index) for a in limited.aggregates] == [("tone", 2)]
    tone = [c for c in everything.cells if c.criterion_name == "tone"]
    assert [c.scores for c in limited.cells] == [c.scores for c in tone]  # same orders, same indices


def test_criteria_are_validated_and_named_in_the_errors() -> None:
    assert multi_choice_criteria(ITEMS) == ["depth", "tone"]
    with pytest.raises(InputError, match=r"sweep: 'facts' is not a multi-choice criterion of the rubric "
                                         r"\(multi-choice criteria: 'depth', 'tone'\)"):
        check_sweep_input(ITEMS, [spec()], None, 8, ("depth", "facts"))
    with pytest.raises(InputError, match="criteria must name at least one criterion"):
        SweepSettings(criteria=())
    with pytest.raises(InputError, match="a sequence of names, got the string 'depth'"):
        SweepSettings(criteria="depth")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="not of a selection sweep"):
        SweepSettings(kind=SweepKind.SELECTION, criteria=("best response",))
    assert SweepSettings(criteria=["tone", "depth", "tone"]).criteria == ("tone", "depth")  # type: ignore[arg-type]


def test_a_sweep_over_every_criterion_keeps_its_content_hash() -> None:
    """``criteria`` is stored only when set: sweeps stored before it existed stay resumable."""
    assert set(SweepSettings().to_dict()) == {"kind", "seed", "shuffle_options", "unrelated_option", "system_prompt",
                                              "n_bootstrap", "confidence"}
    every = sweep_content_hash(sweep_plan(ITEMS, [spec()], SweepSettings()))
    limited = sweep_content_hash(sweep_plan(ITEMS, [spec()], SweepSettings(criteria=("depth",))))
    assert every != limited


def test_cli_criterion_sweeps_one_criterion_and_a_resume_must_name_the_same(
    tmp_path: Path, judge_policy: Callable[[Any], list[ScriptedEngine]]
) -> None:
    engines = judge_policy(hashed)
    db = tmp_path / "r.sqlite"
    done = sweep(db, "--run", "depth", "--limit", "2", "--criterion", "technical_depth", "--json")
    assert done.exit_code == 0, done.output
    assert [(r["criterion"], r["variant"]) for r in json.loads(done.stdout)["results"]] == [("technical_depth", "base")]
    assert len(engines[0].history) == 2 * 4  # 2 items x the 4 rotations of technical_depth
    stored = sqlite_utils.Database(db)
    assert {r["criterion_name"] for r in stored["sweep_judgments"].rows} == {"technical_depth"}
    refused = sweep(db, "--run", "depth", "--limit", "2")
    assert refused.exit_code == 1
    assert 'cannot be resumed: settings changed: criteria (["technical_depth"] -> null)' in refused.output
    other = sweep(db, "--run", "depth", "--limit", "2", "--criterion", "use_case_advice")
    assert other.exit_code == 1 and "settings changed: criteria" in other.output
    again = sweep(db, "--run", "depth", "--limit", "2", "--criterion", "technical_depth", "--json")
    assert again.exit_code == 0 and "8 rotations from the checkpoint" in again.stderr
    assert len(engines) == 2 and not engines[1].history


@pytest.mark.parametrize(("name", "why"), [("nope", "is not a multi-choice criterion of RUBRIC"),
                                           ("lfp_cycle_life", "is a binary criterion (no option order to sweep)")])
def test_cli_criterion_that_is_not_a_multi_choice_criterion_is_a_usage_error(
    tmp_path: Path, judge_policy: Callable[[Any], list[ScriptedEngine]], name: str, why: str
) -> None:
    engines = judge_policy(hashed)
    result = sweep(tmp_path / "r.sqlite", "--criterion", "technical_depth", "--criterion", name)
    assert result.exit_code == 2 and not engines
    assert f"Invalid value for '--criterion': {name!r} {why}; multi-choice criteria: " \
           f"'technical_depth', 'use_case_advice'" in result.output
    assert not (tmp_path / "r.sqlite").exists()


# ------------------------------------------------------------------------ the table


def test_table_marks_an_interval_that_replaces_a_zero_width_one(
    tmp_path: Path, judge_policy: Callable[[Any], list[ScriptedEngine]]
) -> None:
    judge_policy(always_first)  # Grade Score 0 on every item: the bootstrap interval would be [0, 0]
    result = sweep(tmp_path / "r.sqlite", "--limit", "3", "--criterion", "technical_depth")
    assert result.exit_code == 0, result.output
    (row,) = table_rows(result.stdout)
    z2 = 1.959963984540054 ** 2
    assert f"0.000 [0.00, {z2 / (3 + z2):.2f}]*" in row  # Wilson at 0 of 3 items
    assert "[0.00, 0.00]" not in row
    assert " ".join(WILSON_NOTE.split()) in " ".join(result.stdout.split())
    assert " ".join(FEW_ITEMS_NOTE.split()) in " ".join(result.stdout.split())  # 3 items < 50


def test_the_few_items_warning_goes_at_50_items() -> None:
    def aggregate(n_items: int) -> SweepAggregate:
        score = Estimate(0.5, 0.3, 0.7, n_items, IntervalMethod.BOOTSTRAP)
        return SweepAggregate("j", 1, "depth", Variant.BASE, n_items, 4 * n_items, 0, *[score] * 6,
                              position_histogram=(1, 1), option_histogram=(1, 1), position_profile=(0.5, 0.5),
                              shown_vs_chosen=((1, 0), (0, 1)))

    assert sweep_table([aggregate(FEW_ITEMS)]).caption is None
    assert sweep_table([aggregate(FEW_ITEMS), aggregate(FEW_ITEMS - 1)]).caption == FEW_ITEMS_NOTE


def test_a_narrow_interval_is_printed_with_bounds_that_differ() -> None:
    assert _interval(0.2, 0.75) == "[0.20, 0.75]"
    assert _interval(0.5801, 0.5839) == "[0.580, 0.584]"  # not [0.58, 0.58]
    assert _interval(0.58001, 0.58004) == "[0.5800, 0.5800]"  # at most 4 digits


# ------------------------------------------------------------------------ runs and show


@pytest.fixture
def database(tmp_path: Path, judge_policy: Callable[[Any], list[ScriptedEngine]]) -> tuple[Path, Result]:
    """A graded run ``g1``, a sweep ``s1`` (printed as a table) and a comparison ``cmp``."""
    judge_policy(hashed)
    db = tmp_path / "results.sqlite"
    graded = cli("grade", RUBRIC_FILE, DATA_FILE, "--db", db, "--run", "g1", "--limit", "2", "--no-progress")
    assert graded.exit_code == 0, graded.output
    swept = sweep(db, "--run", "s1", "--limit", "3")
    assert swept.exit_code == 0, swept.output
    store = Store.open(db)
    comparison = store.start_sweep(name="cmp", kind="comparison", config={}, judges=[{"judge_id": "j", "model": "m"}],
                                   rubric=None, data_path=None)
    store.finish_sweep(comparison)
    store.close()
    return db, swept


def test_runs_lists_sweeps_and_comparisons_with_their_kind(database: tuple[Path, Result]) -> None:
    db, _ = database
    shown = cli("runs", "--db", db)
    assert shown.exit_code == 0, shown.output
    rows = table_rows(shown.stdout)
    assert any(r.startswith("│ g1 │") for r in rows)
    (s1,) = [r for r in rows if r.startswith("│ s1 │")]
    (cmp,) = [r for r in rows if r.startswith("│ cmp │")]
    assert "│ rubric sweep │" in s1 and "│ 3/3 │ finished │" in s1
    assert "│ comparison │" in cmp and "`ranking cmp`" in cmp
    assert "Sweeps and comparisons" in shown.stdout
    lines = [json.loads(line) for line in cli("runs", "--db", db, "--json").stdout.splitlines()]
    assert [line["kind"] for line in lines] == ["run", "comparison", "sweep"]
    run, comparison, swept = lines
    assert run["run_name"] == "g1" and run["items_done"] == 2  # the run's keys are kept
    assert (comparison["sweep_name"], comparison["sweep_kind"]) == ("cmp", "comparison")
    assert (swept["sweep_name"], swept["sweep_kind"], swept["status"]) == ("s1", "rubric", "finished")
    assert (swept["items_done"], swept["total_items"], swept["rotations"], swept["rotations_failed"]) == (3, 3, 21, 0)
    assert swept["criteria"] is None and swept["judges"] == ["smollm2-135m-instruct"]
    aggregates = {r["criterion_name"]: r["grade_score"] for r in sqlite_utils.Database(db)["sweep_aggregates"].rows}
    assert {s["criterion"]: s["grade_score"] for s in swept["grade_scores"]} == aggregates
    assert set(aggregates) == set(MULTI_CHOICE)


def test_runs_lists_sweeps_of_a_database_without_runs(
    tmp_path: Path, judge_policy: Callable[[Any], list[ScriptedEngine]]
) -> None:
    judge_policy(hashed)
    db = tmp_path / "r.sqlite"
    assert sweep(db, "--run", "only", "--limit", "1", "--criterion", "use_case_advice").exit_code == 0
    shown = cli("runs", "--db", db)
    assert shown.exit_code == 0 and "no runs yet" not in shown.output
    (row,) = table_rows(shown.stdout)
    assert row.startswith("│ only │") and "rubric sweep (use_case_advice)" in row


def test_show_prints_a_stored_sweeps_table_as_sweep_printed_it(database: tuple[Path, Result]) -> None:
    db, swept = database
    shown = cli("show", "s1", "--db", db)
    assert shown.exit_code == 0, shown.output
    assert table_rows(shown.stdout) == table_rows(swept.stdout) and len(table_rows(shown.stdout)) == 2
    header = shown.stdout.splitlines()[0]
    assert header.startswith("sweep s1 (sweep-") and "rubric sweep, finished, 3/3 items" in header
    assert "criteria: every multi-choice criterion" in header
    as_json = json.loads(cli("show", "s1", "--db", db, "--json").stdout)
    again = json.loads(sweep(db, "--run", "s1", "--limit", "3", "--json").stdout)  # resumed: nothing judged
    assert as_json["results"] == again["results"] and as_json["sweep_id"] == again["sweep_id"]
    assert (as_json["name"], as_json["kind"], as_json["status"]) == ("s1", "rubric", "finished")
    by_id = cli("show", as_json["sweep_id"], "--db", db)
    assert table_rows(by_id.stdout) == table_rows(shown.stdout)
    votes = cli("show", "s1", "--db", db, "--votes")
    assert votes.exit_code == 2
    assert "--item, --votes and --prompt show a run's judgments; 's1' is a sweep" in votes.output


def test_show_points_a_comparison_to_ranking_and_names_what_is_there(database: tuple[Path, Result]) -> None:
    db, _ = database
    comparison = cli("show", "cmp", "--db", db)
    assert comparison.exit_code == 1
    assert "'cmp'" in comparison.output and "is a comparison, not a run" in comparison.output
    assert f"`autorubric-local ranking cmp --db {db}` shows its ranking" in comparison.output
    missing = cli("show", "nope", "--db", db)
    assert missing.exit_code == 1 and "no run named or with id 'nope' (runs: 'g1')" in missing.output
    assert "(sweeps and comparisons: 's1', 'cmp')" in missing.output


def test_show_of_an_unfinished_sweep_says_how_to_finish_it(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    store = Store.open(db)
    store.start_sweep(name="half", kind="rubric", config=SweepSettings().to_dict(),
                      judges=[{"judge_id": "j", "model": "m"}], rubric=None, data_path=None, total_items=4)
    store.close()
    shown = cli("show", "half", "--db", db)
    assert shown.exit_code == 0, shown.output
    assert "0/4 items" in shown.stdout and "no results yet: the sweep is running" in shown.stdout
    assert f"--run half --db {db}" in shown.stdout
