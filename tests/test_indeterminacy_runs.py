"""Rating indeterminacy (issue 18) over graded runs: human labels from the dataset, judge ratings
from stored label probabilities (threshold response sets, Maybe criteria), the report, migration
10, plots, ``autorubric-local indeterminacy`` through click's CliRunner, and bad input. Runs are
graded by ScriptedEngines whose label probabilities are set per item."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine import LabelScores, ScoreRequest
from autorubric_local.indeterminacy import (
    IndeterminacySettings,
    analyse_runs,
    collect_ratings,
    load_report,
    load_sources,
    maybe_rubric,
    save_report,
)
from autorubric_local.indeterminacy.plots import write_plots
from autorubric_local.runner import EvalConfig, EvalRunner
from autorubric_local.store import Store, open_db
from fake_judge import fake_grader

DENSITY = Criterion(name="density", weight=10.0, requirement="States the energy density")
DEPTH = Criterion(name="depth", weight=1.0, requirement="How deep?", options=[
    CriterionOption(label="Vague", value=0.0), CriterionOption(label="Expert", value=1.0)])
N = 10


def item_of(request: ScoreRequest) -> int:
    found = re.search(r"<submission>\nanswer (\d+)\n</submission>", request.prefix)
    assert found is not None
    return int(found.group(1))


def sharp(request: ScoreRequest) -> LabelScores:
    """P(MET) 0.9 on odd items, 0.2 on even ones (renormalised over MET/UNMET); depth: Expert 0.8."""
    i = item_of(request)
    if len(request.labels) == 2:
        return LabelScores((math.log(0.2), math.log(0.8)))
    if len(request.labels) == 3 and 'MET"' not in request.labels:  # a Maybe criterion: MET, UNMET, MAYBE
        return LabelScores((math.log(0.5), math.log(0.2), math.log(0.3)) if i % 2 else
                           (math.log(0.1), math.log(0.6), math.log(0.3)))
    p = 0.9 if i % 2 else 0.2
    return LabelScores((math.log(0.9 * p), math.log(0.9 * (1 - p)), math.log(0.1)))


def flat(request: ScoreRequest) -> LabelScores:
    """P(MET) 0.6 everywhere; depth: Vague 0.5 / Expert 0.5."""
    if len(request.labels) == 2:
        return LabelScores((math.log(0.5), math.log(0.5)))
    if len(request.labels) == 3 and 'MET"' not in request.labels:
        return LabelScores((math.log(0.3), math.log(0.3), math.log(0.4)))
    return LabelScores((math.log(0.6), math.log(0.4), math.log(1e-3)))


def dataset(rubric: Rubric, label: Callable[[int], str] = lambda i: "MET" if i % 2 else "UNMET") -> RubricDataset:
    data = RubricDataset(prompt="Compare NMC and LFP.", rubric=rubric, name="d")
    for i in range(N):
        data.add_item(f"answer {i}", ground_truth=[label(i), "Expert" if i < 5 else "Vague"], id=f"i{i:02d}")
    return data


def grade(path: Path, name: str, policy: Callable[[ScoreRequest], LabelScores], data: RubricDataset) -> None:
    grader = fake_grader(policy=policy, seed=0, shuffle_options=False)
    EvalRunner(data, grader, EvalConfig(db_path=path, experiment_name=name, show_progress=False)).run_sync()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("indet") / "r.sqlite"
    rubric = Rubric([DENSITY, DEPTH])
    grade(path, "sharp", sharp, dataset(rubric))
    grade(path, "flat", flat, dataset(rubric))
    grade(path, "sharp-maybe", sharp, dataset(maybe_rubric(rubric)))
    return path


def test_ratings_read_off_the_runs(db: Path) -> None:
    ratings, warnings = collect_ratings([s for s, _, _ in load_sources([db], ["sharp", "flat"])])
    assert warnings == []
    density, depth = ratings
    assert density.options == ("MET", "UNMET") and density.positive == 0 and len(density.item_ids) == N
    assert density.human_forced[:, 0].tolist() == [i % 2 for i in range(N)]
    sharp_r, flat_r = density.judges["sharp"], density.judges["flat"]
    assert sharp_r.forced[:, 0] == pytest.approx([0.9 if i % 2 else 0.2 for i in range(N)])
    # threshold 0.25: 0.9/0.1 -> {MET}; 0.2/0.8 -> {UNMET}; 0.6/0.4 -> {MET, UNMET}
    assert sharp_r.set_positions.tolist() == [1 if i % 2 == 0 else 0 for i in range(N)]
    assert flat_r.set_positions.tolist() == [2] * N and flat_r.omega.tolist() == [[1, 1]] * N
    # multi-choice: the highest-valued option (Expert) is positive by default
    assert depth.options == ("Vague", "Expert") and depth.positive == 1
    assert depth.judges["sharp"].forced[0] == pytest.approx([0.2, 0.8])


def test_maybe_runs_give_theta_directly(db: Path) -> None:
    ratings, _ = collect_ratings([s for s, _, _ in load_sources([db], ["sharp-maybe"])])
    density = next(r for r in ratings if r.criterion == "density")
    assert density.options == ("MET", "UNMET")
    judge = density.judges["sharp-maybe"]
    assert judge.theta[1] == pytest.approx([0.5, 0.2, 0.3]) and judge.theta[0] == pytest.approx([0.1, 0.6, 0.3])
    assert judge.omega[1] == pytest.approx([0.8, 0.5])
    assert judge.forced[1] == pytest.approx([0.5 / 0.7, 0.2 / 0.7])


def test_report_by_hand(db: Path) -> None:
    settings = IndeterminacySettings.model_validate({"analysis": {"betas": [0.0, 0.5], "taus": [0.5]},
                                                     "criteria": ["density"]})
    report, run_ids = analyse_runs([db], ["sharp", "flat"], settings)
    assert len(run_ids) == 2 and report.judges == ["sharp", "flat"]
    c = report.criteria[0]
    agreement = {a.judge: a for a in c.agreement}
    assert agreement["sharp"].hit_rate == 1.0 and agreement["flat"].hit_rate == 0.5
    assert agreement["flat"].kappa == 0.0 and agreement["flat"].set_size == 2.0
    # beta 0: humans' Omega is one-hot; sharp's too (MSE 0); flat's is [1, 1], off by 1 on every item
    assert c.value("sharp", 0.0, 0.5).mse == 0.0 and c.value("flat", 0.0, 0.5).mse == pytest.approx(1.0)
    # beta 0.5: UNMET items' human Omega = [0.5, 1]: sharp errs 0.25 there (mean 0.125), flat 0.25 there
    # and 1 on the MET items ([1, 1] against [1, 0]): mean 0.625
    assert c.value("sharp", 0.5, 0.5).mse == pytest.approx(0.125)
    assert c.value("flat", 0.5, 0.5).mse == pytest.approx(0.625)
    # tau 0.5 at beta 0.5: humans filter every item; sharp only the MET ones
    assert c.value("sharp", 0.5, 0.5).consistency == 0.5 and c.value("flat", 0.5, 0.5).consistency == 1.0
    hit = c.selection("hit_rate", 0.5, 0.5)
    assert hit.chosen == "sharp" and hit.regret_consistency == 0.5 and hit.regret_bias == 0.5
    assert "Forced-choice agreement" in report.summary()


def test_stored_and_plotted(db: Path, tmp_path: Path) -> None:
    settings = IndeterminacySettings.model_validate({"analysis": {"betas": [0.0, 0.2, 0.4], "taus": [0.3, 0.5]}})
    report, run_ids = analyse_runs([db], ["sharp", "flat"], settings)
    store = Store.open(db)
    try:
        analysis_id = save_report(store, report, run_ids)
        assert load_report(store, analysis_id) == report
        values = store.indeterminacy_values(analysis_id)
    finally:
        store.close()
    assert len(values) == len(report.rows())
    hit = [v for v in values if v["name"] == "hit_rate" and v["criterion"] == "density" and v["judge"] == "flat"]
    assert hit == [{"analysis_id": analysis_id, "criterion": "density", "judge": "flat", "beta": None, "tau": None,
                    "name": "hit_rate", "value": 0.5}]
    paths = write_plots(report, tmp_path / "plots")
    assert [p.name for p in paths] == ["metrics-vs-beta.png", "regret-vs-beta.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000 for p in paths)


def test_migration_10() -> None:
    db = open_db(":memory:")
    assert {"indeterminacy_analyses", "indeterminacy_values"} <= set(db.table_names())
    assert db["_migrations"].get(10)["name"] == "rating-indeterminacy analyses and their figures"


def test_cli(db: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["indeterminacy", "sharp", "flat", "--db", str(db), "--beta", "0:0.4:0.2",
                                       "--tau", "0.5", "--plot", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert "Forced-choice agreement with the humans" in result.output
    assert re.search(r"^sharp\s+0\.750", result.output, flags=re.MULTILINE)  # hit rate: density 1, depth 0.5
    assert re.search(r"^ 0\.40 ", result.output, flags=re.MULTILINE)  # the grid 0, 0.2, 0.4
    assert (tmp_path / "p" / "metrics-vs-beta.png").is_file()
    assert "saved as indeterminacy analysis" in result.output
    assert open_db(db)["indeterminacy_analyses"].count >= 1
    help_text = CliRunner().invoke(main, ["indeterminacy", "--help"]).output
    assert "Example:" in help_text and "--beta" in help_text


def test_cli_bad_input(db: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["indeterminacy", "nope", "--db", str(db), "--no-save"])
    assert result.exit_code == 1 and "run(s) ['nope'] not found" in result.output
    result = CliRunner().invoke(main, ["indeterminacy", "--db", str(db), "--beta", "0,2"])
    assert result.exit_code == 2 and "in [0, 1]" in result.output
    result = CliRunner().invoke(main, ["indeterminacy", "--db", str(db), "--criterion", "nope", "--no-save"])
    assert result.exit_code == 1 and "criteria not in the runs: ['nope']" in result.output
    empty = tmp_path / "empty.sqlite"
    open_db(empty).close()
    result = CliRunner().invoke(main, ["indeterminacy", "--db", str(empty), "--no-save"])
    assert result.exit_code == 1 and "no runs in" in result.output


def test_runs_that_disagree_on_a_label_name_the_item_and_field(db: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    grade(other, "relabelled", flat, dataset(Rubric([DENSITY, DEPTH]), label=lambda i: "MET"))
    sources = [s for s, _, _ in load_sources([db], ["sharp"])] + [s for s, _, _ in load_sources([other])]
    with pytest.raises(InputError) as info:
        collect_ratings(sources)
    message = str(info.value)
    assert "other.sqlite, run relabelled, item 'i00', criterion 'density', field ground_truth[0]" in message
    assert "label 'MET' differs from 'UNMET'" in message
    with pytest.raises(InputError, match="positive option 'Nope' is not one of"):
        collect_ratings(sources[:1], positive={"density": "Nope"})


def test_label_probabilities_without_an_option_name_the_run_item_and_field(db: Path) -> None:
    source = load_sources([db], ["sharp"])[0][0]
    first = source.result.item_results[0]
    criterion = first.report.report[0]
    vote = criterion.votes[0].model_copy(update={"label_probabilities": {"MET": 1.0}})
    report = first.report.model_copy(update={"report": [criterion.model_copy(update={"votes": [vote]}),
                                                        *first.report.report[1:]]})
    broken = dataclasses.replace(source.result, item_results=[dataclasses.replace(first, report=report),
                                                              *source.result.item_results[1:]])
    with pytest.raises(InputError) as info:
        collect_ratings([dataclasses.replace(source, result=broken)])
    assert str(info.value) == (f"{db}, run sharp, item 'i00', criterion 'density', judge 'scripted': field "
                               "label_probabilities has no entry for ['UNMET'] (has ['MET'])")


def test_maybe_and_plain_runs_of_a_criterion_are_not_mixed(db: Path) -> None:
    """Same options (MET, UNMET), read two ways: one analysis refuses to mix them."""
    with pytest.raises(InputError, match="analyse Maybe and plain runs separately") as info:
        collect_ratings([s for s, _, _ in load_sources([db], ["sharp", "sharp-maybe"])])
    assert f"{db}, run sharp-maybe, item 'i00', criterion 'density': a Maybe criterion" in str(info.value)


def test_na_ground_truth_of_a_multi_choice_criterion_is_left_out(tmp_path: Path) -> None:
    with_na = Criterion(name="depth", weight=1.0, requirement="How deep?", options=[
        CriterionOption(label="Vague", value=0.0), CriterionOption(label="Expert", value=1.0),
        CriterionOption(label="Not applicable", value=0.0, na=True)])
    data = RubricDataset(prompt="Compare NMC and LFP.", rubric=Rubric([DENSITY, with_na]), name="d")
    for i in range(N):
        data.add_item(f"answer {i}", ground_truth=["MET", "Not applicable" if i < 3 else "Expert"], id=f"i{i:02d}")
    path = tmp_path / "na.sqlite"
    grade(path, "na", sharp, data)
    ratings, warnings = collect_ratings([s for s, _, _ in load_sources([path])])
    depth = next(r for r in ratings if r.criterion == "depth")
    assert depth.options == ("Vague", "Expert")
    assert depth.item_ids == tuple(f"i{i:02d}" for i in range(3, N))
    assert depth.human_forced[:, 1].tolist() == [1.0] * (N - 3)
    assert warnings == ["criterion 'depth': 3 item(s) without a human label or a rating of every judge left out"]


def test_a_criterion_with_more_options_than_the_model_handles_is_left_out(tmp_path: Path) -> None:
    wide = Criterion(name="wide", weight=1.0, requirement="Which?",
                     options=[CriterionOption(label=f"o{k}", value=k / 8) for k in range(9)])
    data = RubricDataset(prompt="Compare NMC and LFP.", rubric=Rubric([DENSITY, wide]), name="d")
    for i in range(N):
        data.add_item(f"answer {i}", ground_truth=["MET" if i % 2 else "UNMET", "o3"], id=f"i{i:02d}")
    path = tmp_path / "wide.sqlite"

    def policy(request: ScoreRequest) -> LabelScores:
        return sharp(request) if len(request.labels) == 3 else LabelScores((math.log(1 / 9),) * 9)

    grade(path, "wide", policy, data)
    ratings, warnings = collect_ratings([s for s, _, _ in load_sources([path])])
    assert [r.criterion for r in ratings] == ["density"]
    assert warnings == ["criterion 'wide': 9 options, more than the 8 the response-set model handles "
                        "(2**K - 1 sets); left out"]
