"""Threshold calibration of a graded, labelled run (issue 20, part 2): the split, fitting on the
training items only (the leak tests), held-out agreement before and after, applying a
calibration to a copy of the run, storing it (migration 9), and ``autorubric-local calibrate``
through click's CliRunner. Runs are graded by a ScriptedEngine whose P(MET) is set per item."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import accuracy_score, cohen_kappa_score, roc_auc_score

import autorubric_local.calibration.fit as fit_module
from autorubric_local.calibration import (
    Method,
    apply_calibration,
    calibrate_run,
    evaluate_held_out,
    fit_thresholds,
    load_calibration,
    save_calibration,
    split_run,
)
from autorubric_local.calibration.rules import fit_rule
from autorubric_local.cli import main
from autorubric_local.core.errors import InputError
from autorubric_local.core.penalty import LengthPenalty
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionOption, CriterionVerdict
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader, criterion_grader
from autorubric_local.judges.config import LLMConfig
from autorubric_local.metrics import compute_metrics
from autorubric_local.metrics.calibration import expected_calibration_error
from autorubric_local.metrics.extract import binary_p_met
from autorubric_local.runner import EvalConfig, EvalResult, EvalRunner, load_result
from autorubric_local.store import Store

DENSITY = Criterion(name="density", weight=10.0, requirement="States the energy density")
CITES = Criterion(name="cites", weight=2.0, requirement="Cites a source")
DEPTH = Criterion(name="depth", weight=1.0, requirement="How deep?", options=[
    CriterionOption(label="Vague", value=0.0), CriterionOption(label="Expert", value=1.0)])
N = 20


def p_met(i: int) -> float:
    """A judge that says MET for everything: P(MET) 0.80-0.854 for UNMET items (even i), 0.88-0.952
    for MET items (odd i); all distinct, separable at any threshold between 0.854 and 0.88."""
    return 0.80 + 0.006 * (i // 2) if i % 2 == 0 else 0.88 + 0.008 * (i // 2)


def policy(request: ScoreRequest) -> LabelScores:
    found = re.search(r"<submission>\nanswer (\d+)\n</submission>", request.prefix)
    assert found is not None
    i = int(found.group(1))
    if 'MET"' not in request.labels:
        return LabelScores((math.log(0.7), math.log(0.3)))
    p = p_met(i) if "energy density" in request.suffix else 0.9
    return LabelScores((math.log(0.9 * p), math.log(0.9 * (1 - p)), math.log(0.1)))


def make_dataset(n: int = N) -> RubricDataset:
    data = RubricDataset(prompt="Compare NMC and LFP.", rubric=Rubric([DENSITY, CITES, DEPTH]), name="d")
    for i in range(n):
        data.add_item(f"answer {i}", ground_truth=["MET" if i % 2 else "UNMET", "MET", "Vague"], id=f"i{i:02d}")
    return data


def graded_run(path: Path, **grader: Any) -> tuple[EvalResult, RubricDataset]:
    engine = ScriptedEngine(policy=policy)
    g = CriterionGrader(LLMConfig(model="scripted", engine=engine), seed=0, **grader)
    EvalRunner(make_dataset(), g, EvalConfig(db_path=path, experiment_name="run", show_progress=False)).run_sync()
    return load_result(path, "run")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[EvalResult, RubricDataset, Path]:
    path = tmp_path_factory.mktemp("cal") / "r.sqlite"
    result, dataset = graded_run(path)
    return result, dataset, path


# ------------------------------------------------------------------------------ the split


def test_split_is_the_datasets_split_of_the_labelled_items(run: tuple[EvalResult, RubricDataset, Path]) -> None:
    result, dataset, _ = run
    train_ids, test_ids = split_run(result, dataset, 0.3, seed=4)
    assert (len(train_ids), len(test_ids)) == (14, 6)  # ceil(0.3 * 20) test items
    assert sorted(train_ids + test_ids) == sorted(r.item_id for r in result.item_results)
    train, test = dataset.split_train_test(14, stratify=True, seed=4)
    assert [i.id for i in train.items] == train_ids and [i.id for i in test.items] == test_ids
    assert dataset.train_test_indices(14, seed=4) == ([int(i[1:]) for i in train_ids], [int(i[1:]) for i in test_ids])


@pytest.mark.parametrize(("size", "message"), [(0.0, "in \\(0, 1\\)"), (1.0, "in \\(0, 1\\)"), (True, "in \\(0, 1\\)"),
                                               (0.99, "leaves no training item")])
def test_bad_test_sizes(run: tuple[EvalResult, RubricDataset, Path], size: float, message: str) -> None:
    result, dataset, _ = run
    with pytest.raises(InputError, match=message):
        split_run(result, dataset, size)


# ------------------------------------------------------------------------------ fitting


def test_threshold_rule_on_the_training_items(run: tuple[EvalResult, RubricDataset, Path]) -> None:
    result, dataset, _ = run
    train_ids, _ = split_run(result, dataset, 0.3, seed=0)
    calibration = fit_thresholds(result, train_ids, "threshold", n_folds=3, seed=0)
    train = [int(i[1:]) for i in train_ids]
    highest_unmet = max(p_met(i) for i in train if i % 2 == 0)
    lowest_met = min(p_met(i) for i in train if i % 2 == 1)
    rule = calibration.rules["density"]
    assert rule.threshold == pytest.approx((highest_unmet + lowest_met) / 2, abs=1e-9)
    assert (rule.n_train, rule.n_met) == (14, 7)
    assert calibration.cross_validation["density"].fold_kappas == [1.0, 1.0, 1.0]
    assert calibration.skipped == {"cites": "criterion 'cites': all 14 training items are MET; a rule needs both classes"}
    assert "depth" not in calibration.rules and "depth" not in calibration.skipped  # multi-choice: not calibrated
    assert calibration.train_item_ids == train_ids and calibration.objective == "cohen_kappa"
    assert "density: MET iff P(MET) >= 0.8" in calibration.summary()


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_platt_and_isotonic_rules_are_fitted_on_the_training_pairs(
    run: tuple[EvalResult, RubricDataset, Path], method: str
) -> None:
    result, dataset, _ = run
    train_ids, _ = split_run(result, dataset, 0.3, seed=0)
    calibration = fit_thresholds(result, train_ids, method, n_folds=3)
    train = [int(i[1:]) for i in train_ids]
    y = [i % 2 for i in train]
    p = [binary_p_met(next(r for r in result.item_results if r.item_id == f"i{i:02d}").report.report[0]
                      .label_probabilities) for i in train]
    assert p == pytest.approx([p_met(i) for i in train])
    assert calibration.rules["density"] == fit_rule("density", y, p, Method(method))


# ------------------------------------------------------------------------------ no leaks


def relabelled(result: EvalResult, ids: set[str], how: str) -> EvalResult:
    """``result`` with the items ``ids`` changed: labels flipped and reports rotated among them
    (``"permute"``), or their ground truth removed (``"remove"``)."""
    chosen = [r for r in result.item_results if r.item_id in ids]
    rotated = {r.item_id: chosen[(k + 1) % len(chosen)].report for k, r in enumerate(chosen)}
    items = []
    for r in result.item_results:
        if r.item_id in ids:
            truth = None if how == "remove" else [
                "UNMET" if label == "MET" else "MET" if label == "UNMET" else label for label in r.item.ground_truth]
            r = dataclasses.replace(r, item=dataclasses.replace(r.item, ground_truth=truth), report=rotated[r.item_id])
        items.append(r)
    return dataclasses.replace(result, item_results=items)


@pytest.mark.parametrize("method", ["threshold", "platt", "isotonic"])
@pytest.mark.parametrize("how", ["permute", "remove"])
def test_test_items_do_not_change_the_calibration(
    run: tuple[EvalResult, RubricDataset, Path], method: str, how: str
) -> None:
    result, dataset, _ = run
    train_ids, test_ids = split_run(result, dataset, 0.3, seed=0)
    baseline = fit_thresholds(result, train_ids, method, n_folds=3)
    changed = relabelled(result, set(test_ids), how)
    assert changed.item_results != result.item_results
    assert fit_thresholds(changed, train_ids, method, n_folds=3) == baseline
    # Control: the same change on training items does change the calibration.
    assert fit_thresholds(relabelled(result, set(train_ids[:4]), "permute"), train_ids, method, n_folds=3) != baseline


def test_the_fitter_is_given_training_items_only(run: tuple[EvalResult, RubricDataset, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    result, dataset, _ = run
    train_ids, test_ids = split_run(result, dataset, 0.3, seed=0)
    seen: list[str] = []
    real_samples, real_cv = fit_module.criterion_samples, fit_module.cross_validate

    def samples_spy(res: Any, ids: Any) -> Any:
        ids = list(ids)
        seen.extend(ids)
        out = real_samples(res, ids)
        seen.extend(i for s in out.values() for i in s.item_ids)
        return out

    def cv_spy(sample: Any, *args: Any) -> Any:
        seen.extend(sample.item_ids)
        return real_cv(sample, *args)

    monkeypatch.setattr(fit_module, "criterion_samples", samples_spy)
    monkeypatch.setattr(fit_module, "cross_validate", cv_spy)
    fit_thresholds(result, train_ids, "threshold", n_folds=3)
    assert seen and set(seen) <= set(train_ids)
    assert not set(seen) & set(test_ids)


def test_calibrate_run_fits_on_the_training_ids_only(run: tuple[EvalResult, RubricDataset, Path],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    result, dataset, _ = run
    given: list[list[str]] = []
    real_fit = fit_module.fit_thresholds

    def fit_spy(res: Any, ids: Any, *args: Any, **kwargs: Any) -> Any:
        given.append(list(ids))
        return real_fit(res, ids, *args, **kwargs)

    monkeypatch.setattr(fit_module, "fit_thresholds", fit_spy)
    fitted = calibrate_run(result, dataset, "threshold", test_size=0.3, seed=0, n_folds=3)
    assert given == [fitted.train_ids] and not set(fitted.train_ids) & set(fitted.test_ids)
    assert fitted.calibration.train_item_ids == fitted.train_ids


def test_evaluating_on_a_training_item_is_refused(run: tuple[EvalResult, RubricDataset, Path]) -> None:
    result, dataset, _ = run
    train_ids, test_ids = split_run(result, dataset, 0.3, seed=0)
    calibration = fit_thresholds(result, train_ids, n_folds=3)
    with pytest.raises(InputError, match="1 test item\\(s\\) were training items"):
        evaluate_held_out(calibration, result, [*test_ids, train_ids[0]])


def test_unknown_ids_and_empty_training_sets_are_refused(run: tuple[EvalResult, RubricDataset, Path]) -> None:
    result, _, _ = run
    with pytest.raises(InputError, match="item ids not in the run: \\['nope'\\]"):
        fit_thresholds(result, ["i00", "nope"])
    with pytest.raises(InputError, match="no training pairs"):
        fit_thresholds(result, [])
    with pytest.raises(InputError, match="n_folds must be an integer >= 2"):
        fit_thresholds(result, ["i00"], n_folds=1)


# ------------------------------------------------------------------------------ held out


def test_held_out_before_and_after_by_hand_and_scikit_learn(run: tuple[EvalResult, RubricDataset, Path]) -> None:
    result, dataset, _ = run
    fitted = calibrate_run(result, dataset, "threshold", test_size=0.3, seed=0, n_folds=3)
    (density,) = fitted.held_out.criteria
    assert density.key == "density" and fitted.held_out.not_evaluated == {
        "cites": "criterion 'cites': all 14 training items are MET; a rule needs both classes"}
    test = [int(i[1:]) for i in fitted.test_ids]
    y = np.array([i % 2 for i in test])
    p = np.array([p_met(i) for i in test])
    # Before: the judge says MET for every item: accuracy = share of MET labels, kappa 0.
    assert density.before.accuracy == pytest.approx(y.mean()) and density.before.kappa == 0.0
    assert density.before.kappa == cohen_kappa_score(y, np.ones_like(y))
    # After: the threshold separates the classes.
    assert (density.after.accuracy, density.after.kappa) == (1.0, 1.0)
    assert density.before.auroc == density.after.auroc == roc_auc_score(y, p) == 1.0
    assert density.before.ece == pytest.approx(expected_calibration_error(y.tolist(), p.tolist()))
    assert density.after.ece == density.before.ece  # a threshold leaves P(MET) as it is
    assert density.after.n == len(test) == 6
    assert accuracy_score(y, p >= fitted.calibration.rules["density"].threshold) == 1.0
    assert "density" in fitted.held_out.summary() and "0.000 -> 1.000" in fitted.held_out.summary()


# ------------------------------------------------------------------------------ apply


def test_apply_rewrites_verdicts_and_scores_in_a_copy(run: tuple[EvalResult, RubricDataset, Path]) -> None:
    result, dataset, _ = run
    fitted = calibrate_run(result, dataset, "threshold", test_size=0.3, seed=0, n_folds=3)
    calibrated = apply_calibration(fitted.calibration, result)
    t = fitted.calibration.rules["density"].threshold
    for before, after in zip(result.item_results, calibrated.item_results):
        i = int(before.item_id[1:])
        old, new = before.report.report[0], after.report.report[0]
        assert old.final_verdict is CriterionVerdict.MET
        assert new.final_verdict is (CriterionVerdict.MET if p_met(i) >= t else CriterionVerdict.UNMET)
        assert new.votes == old.votes and new.label_probabilities == old.label_probabilities
        assert after.report.report[1] is before.report.report[1]  # cites: no rule
        assert after.report.report[2] is before.report.report[2]  # depth: multi-choice
        # Weights 10 + 2 + 1: a density verdict turned UNMET takes 10/13 off the item's score.
        assert after.report.score == pytest.approx(before.report.score - 10 / 13 * (p_met(i) < t))
        assert after.report.raw_score == pytest.approx(before.report.raw_score - 10 * (p_met(i) < t))
        if new.final_verdict is CriterionVerdict.UNMET:
            assert new.agreement == 0.0  # the judge's own vote said MET
    assert result.item_results[0].report.report[0].final_verdict is CriterionVerdict.MET  # the original is kept
    assert calibrated.grader_settings["threshold_calibration"] == {"method": "threshold", "n_train_items": 14}
    metrics = compute_metrics(calibrated, dataset)
    density = next(c for c in metrics.per_criterion if c.name == "density")
    assert density.accuracy == 1.0 and density.kappa == pytest.approx(1.0)


def test_apply_platt_rescales_met_and_unmet_keeping_cannot_assess(run: tuple[EvalResult, RubricDataset, Path]) -> None:
    result, dataset, _ = run
    fitted = calibrate_run(result, dataset, "platt", test_size=0.3, seed=0, n_folds=3)
    rule = fitted.calibration.rules["density"]
    calibrated = apply_calibration(fitted.calibration, result)
    for before, after in zip(result.item_results, calibrated.item_results):
        old, new = before.report.report[0].label_probabilities, after.report.report[0].label_probabilities
        expected = float(rule.probability([binary_p_met(old)])[0])
        assert binary_p_met(new) == pytest.approx(expected)
        assert new["CANNOT_ASSESS"] == old["CANNOT_ASSESS"] and sum(new.values()) == pytest.approx(1.0)
        assert after.report.report[0].final_verdict is (
            CriterionVerdict.MET if expected >= 0.5 else CriterionVerdict.UNMET)


def test_apply_refuses_a_run_with_a_length_penalty(tmp_path: Path) -> None:
    result, dataset = graded_run(tmp_path / "p.sqlite", length_penalty=LengthPenalty(free_budget=1000))
    calibration = fit_thresholds(result, split_run(result, dataset, 0.3)[0], n_folds=3)
    with pytest.raises(InputError, match="length penalty"):
        apply_calibration(calibration, result)


# ------------------------------------------------------------------------------ store


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    result, dataset = graded_run(tmp_path / "r.sqlite")
    store = Store.open(tmp_path / "r.sqlite")
    with pytest.raises(InputError, match="no calibration stored"):
        load_calibration(store, result.run_id)  # type: ignore[arg-type]
    fitted = calibrate_run(result, dataset, "isotonic", test_size=0.3, seed=2, n_folds=3)
    row_id = save_calibration(store, result.run_id, fitted)  # type: ignore[arg-type]
    (row,) = store.threshold_calibrations(result.run_id)  # type: ignore[arg-type]
    assert row["id"] == row_id and row["method"] == "isotonic"
    assert json.loads(row["settings_json"]) == {"method": "isotonic", "test_size": 0.3, "seed": 2, "n_folds": 3,
                                                "stratify": True}
    assert json.loads(row["train_item_ids_json"]) == fitted.train_ids
    assert json.loads(row["test_item_ids_json"]) == fitted.test_ids
    assert load_calibration(store, result.run_id) == fitted.calibration  # type: ignore[arg-type]
    assert load_calibration(store, result.run_id, "isotonic") == fitted.calibration  # type: ignore[arg-type]
    with pytest.raises(InputError, match="no threshold calibration stored"):
        load_calibration(store, result.run_id, "threshold")  # type: ignore[arg-type]
    assert json.loads(row["held_out_json"]) == fitted.held_out.model_dump(mode="json")
    assert store.judgment_count(result.run_id) == N * 3  # type: ignore[arg-type]  # the run itself is untouched


# ------------------------------------------------------------------------------ CLI


@pytest.fixture
def graded_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run graded through the CLI: an AutoRubric dataset JSON with ground truth."""
    data = tmp_path / "q.json"
    data.write_text(make_dataset().to_json(), encoding="utf-8")
    engine = ScriptedEngine(policy=policy)
    monkeypatch.setattr(criterion_grader, "load_engine", lambda config: engine)
    db = tmp_path / "q.sqlite"
    result = CliRunner().invoke(main, ["grade", str(data), "--db", str(db), "--run", "q", "--no-progress"])
    assert result.exit_code == 0, result.output
    return db


def test_cli_prints_held_out_before_and_after_and_saves(graded_db: Path) -> None:
    result = CliRunner().invoke(main, ["calibrate", "q", "--db", str(graded_db), "--test-size", "0.3",
                                       "--seed", "0", "--method", "threshold", "--folds", "3"])
    assert result.exit_code == 0, result.output
    assert "threshold rules fitted on 14 training items" in result.stdout
    assert re.search(r"density: MET iff P\(MET\) >= 0\.8\d+ \(14 pairs, 7 MET; 3-fold CV kappa 1\.000", result.stdout)
    assert "cites: no rule: criterion 'cites': all 14 training items are MET" in result.stdout
    assert "held-out agreement (threshold; 6 test items; before -> after)" in result.stdout
    line = next(x for x in result.stdout.splitlines() if x.startswith("density") and "->" in x)
    assert "0.000 -> 1.000" in line  # kappa
    assert re.search(r"saved as calibration 1 of run q \(run-.*\) in ", result.stderr)
    store = Store.open(graded_db)
    run_id = store.find_run("q")["id"]  # type: ignore[index]
    assert [r["method"] for r in store.threshold_calibrations(run_id)] == ["threshold"]


def test_cli_json_and_no_save(graded_db: Path) -> None:
    result = CliRunner().invoke(main, ["calibrate", "--db", str(graded_db), "--method", "platt", "--json", "--no-save",
                                       "--folds", "3"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["calibration_id"] is None and out["calibration"]["method"] == "platt"
    assert out["held_out"]["criteria"][0]["key"] == "density" and len(out["test_item_ids"]) == 6
    store = Store.open(graded_db)
    assert store.threshold_calibrations(store.find_run("q")["id"]) == []  # type: ignore[index]


@pytest.mark.parametrize(("args", "code", "message"), [
    (["nope"], 1, "no run named 'nope'"),
    (["--test-size", "1.5"], 2, "--test-size"),
    (["--method", "beta"], 2, "--method"),
    (["--folds", "1"], 2, "--folds"),
])
def test_cli_errors(graded_db: Path, args: list[str], code: int, message: str) -> None:
    result = CliRunner().invoke(main, ["calibrate", *args, "--db", str(graded_db)])
    assert result.exit_code == code and message in result.output
