"""Metrics: hand-computed cases, edge cases, modes, bootstrap, output and storage."""

from __future__ import annotations

import json
import math

import pytest
from test_metrics_support import BIN, NOM, ORD, make_run

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.metrics import (
    CannotAssessMode,
    MetricsResult,
    compute_metrics,
    extract_verdicts_from_report,
    filter_cannot_assess,
    fleiss_kappa,
    load_metrics,
    save_metrics,
    systematic_bias,
    verdict_to_binary,
    verdict_to_string,
    write_plots,
)
from autorubric_local.metrics.calibration import calibration, expected_calibration_error
from autorubric_local.store import open_db


def _no_nan(m: MetricsResult) -> None:
    text = m.model_dump_json()
    assert "NaN" not in text and "Infinity" not in text


# ---- hand-computed ---------------------------------------------------------------------------


def test_adjacent_accuracy_by_hand() -> None:
    res, ds = make_run([ORD], [["L0"], ["L1"], ["L2"], ["L3"]], [["L1"], ["L3"], ["L2"], ["L0"]])
    c = compute_metrics(res, ds).per_criterion[0]
    assert c.adjacent_accuracy == pytest.approx(0.5)  # |diff| = 1, 2, 0, 3
    assert c.accuracy == pytest.approx(0.25)
    assert c.mae == pytest.approx((1 + 2 + 0 + 3) / 3 / 4)


def test_ece_by_hand() -> None:
    y, p = [0, 1, 1, 0], [0.1, 0.2, 0.85, 0.95]
    # bins [0, .5): conf .15, frac .5; [.5, 1]: conf .9, frac .5 -> .5*.35 + .5*.4
    assert expected_calibration_error(y, p, n_bins=2) == pytest.approx(0.375)
    c = calibration(y, p, n_bins=2)
    assert [b.count for b in c.bins] == [2, 2]
    assert c.bins[1].mean_confidence == pytest.approx(0.9)


def test_bias_ci_by_hand() -> None:
    b = systematic_bias([0.5, 0.7, 0.9], [0.4, 0.4, 0.6], 0.95)
    assert b.mean_bias == pytest.approx(0.233333, abs=1e-6)
    assert b.std_bias == pytest.approx(0.115470, abs=1e-6)
    assert (b.ci.lower, b.ci.upper) == pytest.approx((-0.053511, 0.520178), abs=1e-5)
    assert b.effect_size == pytest.approx(2.020726, abs=1e-5)
    assert b.significant is False


def test_fleiss_kappa_published_example() -> None:
    # Fleiss (1971) style example as tabulated in Wikipedia "Fleiss' kappa": 10 items, 14 raters.
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-4)


def test_fleiss_kappa_small_and_degenerate() -> None:
    # 2 items, 2 raters: one agreement on A, one split -> P_bar = .5, p = (.75, .25), Pe = .625
    assert fleiss_kappa([[2, 0], [1, 1]]) == pytest.approx((0.5 - 0.625) / 0.375)
    assert fleiss_kappa([[3, 0], [3, 0]]) is None
    with pytest.raises(InputError):
        fleiss_kappa([[2, 0], [1, 0]])


# ---- edge cases --------------------------------------------------------------------------------


def test_one_class_only_gives_none_kappa_with_warning() -> None:
    res, ds = make_run([BIN], [["MET"]] * 4, [["MET"]] * 4)
    m = compute_metrics(res, ds)
    assert m.criterion_accuracy == 1.0 and m.criterion_precision == 1.0
    assert m.mean_kappa is None and m.per_criterion[0].kappa is None
    assert any("kappa undefined" in w for w in m.warnings)
    assert m.score_spearman is None  # constant scores
    _no_nan(m)


def test_all_cannot_assess_excluded() -> None:
    res, ds = make_run([BIN], [["CANNOT_ASSESS"]] * 3, [["MET"]] * 3)
    m = compute_metrics(res, ds)
    assert m.criterion_accuracy is None and m.criterion_f1 is None
    assert m.per_criterion[0].support == 0 and m.per_criterion[0].n_excluded == 3
    assert any("no (human, judge)" in w for w in m.warnings)
    _no_nan(m)
    m2 = compute_metrics(res, ds, cannot_assess="as_category")
    assert m2.criterion_accuracy == 0.0 and m2.per_criterion[0].labels[-1] == "CANNOT_ASSESS"
    m3 = compute_metrics(res, ds, cannot_assess=CannotAssessMode.AS_UNMET)
    assert m3.criterion_accuracy == 0.0 and m3.criterion_precision == 0.0
    assert m3.criterion_recall is None


def test_single_item() -> None:
    res, ds = make_run([BIN, ORD], [["MET", "L2"]], [["UNMET", "L3"]])
    m = compute_metrics(res, ds, bootstrap=True, n_bootstrap=20, seed=0)
    assert m.n_items == 1 and m.score_pearson is None
    judge = res.item_results[0].report.score
    assert m.bias.mean_bias == pytest.approx(judge - ds.compute_weighted_score(ds[0].ground_truth))
    assert m.bias.ci is None and m.bias.p_value is None
    _no_nan(m)


def test_no_ground_truth_and_mismatch_are_clear_errors() -> None:
    res, ds = make_run([BIN], [None, None], [["MET"], ["UNMET"]])
    with pytest.raises(InputError, match="ground truth"):
        compute_metrics(res, ds)
    res, ds = make_run([BIN], [["MET"], ["UNMET"]], [["MET"], ["UNMET"]])
    _, ds1 = make_run([BIN], [["MET"]], [["MET"]])
    with pytest.raises(InputError, match="dataset has 1"):
        compute_metrics(res, ds1)
    with pytest.raises(InputError, match="cannot_assess"):
        compute_metrics(res, ds, cannot_assess="drop")
    with pytest.raises(InputError, match="confidence_level"):
        compute_metrics(res, ds, confidence_level=1.5)


def test_partial_run_failed_items_and_failed_judgments() -> None:
    res, ds = make_run([BIN, ORD], [["MET", "L1"], ["UNMET", "L2"], ["MET", "L0"]],
                       [["MET", "L1"], None, [None, "L0"]])
    m = compute_metrics(res, ds)
    assert m.n_items == 2
    assert m.per_criterion[0].support == 1 and m.per_criterion[0].n_excluded == 1
    assert any("failed item" in w for w in m.warnings)
    assert any("without a verdict" in w for w in m.warnings)
    res.item_results.pop()
    assert any("not in the result" in w for w in compute_metrics(res, ds).warnings)


def test_na_modes_for_multi_choice() -> None:
    res, ds = make_run([ORD], [["NA"], ["L0"], ["L3"]], [["L0"], ["NA"], ["L3"]])
    assert compute_metrics(res, ds).per_criterion[0].support == 1
    unmet = compute_metrics(res, ds, na_mode="as_unmet").per_criterion[0]
    assert unmet.support == 3 and unmet.accuracy == 1.0  # NA -> worst option L0
    cat = compute_metrics(res, ds, na_mode="as_category").per_criterion[0]
    assert cat.labels[-1] == "NA" and cat.accuracy == pytest.approx(1 / 3)
    assert cat.adjacent_accuracy == 1.0  # NA pairs have no scale position


def test_failed_multi_choice_judgment_is_excluded() -> None:
    res, ds = make_run([NOM], [["red"], ["blue"]], [["red"], [None]])
    m = compute_metrics(res, ds)
    assert m.per_criterion[0].support == 1
    assert extract_verdicts_from_report(res.item_results[0].report) == ["red"]


def test_per_judge_and_inter_judge() -> None:
    truth = [["MET"], ["UNMET"], ["MET"], ["UNMET"]]
    votes = {"a": [["MET"], ["UNMET"], ["MET"], ["UNMET"]],
             "b": [["MET"], ["MET"], ["MET"], ["UNMET"]]}
    res, ds = make_run([BIN], truth, votes["a"], votes)
    m = compute_metrics(res, ds, per_judge=True)
    assert m.per_judge["a"].criterion_accuracy == 1.0
    assert m.per_judge["b"].criterion_accuracy == 0.75
    assert m.inter_judge.judges == ["a", "b"]
    assert m.inter_judge.per_criterion[0].fleiss_kappa == pytest.approx(
        fleiss_kappa([[2, 0], [1, 1], [2, 0], [0, 2]]))
    single = compute_metrics(*make_run([BIN], truth, votes["a"], {"a": votes["a"]}))
    assert single.inter_judge is None


def test_calibration_from_label_probabilities() -> None:
    res, ds = make_run([BIN], [["MET"], ["UNMET"], ["MET"], ["CANNOT_ASSESS"]],
                       [["MET"], ["UNMET"], ["UNMET"], ["MET"]], p_met=[[0.9], [0.2], [0.4], [0.7]])
    c = compute_metrics(res, ds).calibration
    assert c.n == 3  # human CANNOT_ASSESS has no MET/UNMET label
    assert c.brier_score == pytest.approx((0.01 + 0.04 + 0.36) / 3)
    assert c.auroc == 1.0


def test_bootstrap_is_seeded_and_covers_multi_choice() -> None:
    truth = [["MET", "L1", "red"], ["UNMET", "L2", "blue"], ["MET", "L3", "green"],
             ["UNMET", "L0", "red"], ["MET", "L2", "blue"], ["UNMET", "L1", "red"]]
    final = [["MET", "L1", "red"], ["MET", "L2", "blue"], ["MET", "L2", "green"],
             ["UNMET", "L0", "blue"], ["UNMET", "L3", "blue"], ["UNMET", "L1", "red"]]
    res, ds = make_run([BIN, ORD, NOM], truth, final)
    a = compute_metrics(res, ds, bootstrap=True, n_bootstrap=200, seed=7).bootstrap
    b = compute_metrics(res, ds, bootstrap=True, n_bootstrap=200, seed=7).bootstrap
    assert a == b
    acc = a.metrics["criterion_accuracy"]
    assert acc.ci.lower <= acc.estimate <= acc.ci.upper
    assert {"accuracy", "kappa", "weighted_kappa", "adjacent_accuracy"} <= set(a.per_criterion["o"])
    assert "kappa" in a.per_criterion["n"]
    with pytest.raises(InputError):
        compute_metrics(res, ds, bootstrap=True, n_bootstrap=0)


# ---- helpers, output, storage ------------------------------------------------------------------


def test_spec_helpers() -> None:
    assert verdict_to_binary("MET") == 1 and verdict_to_binary(CriterionVerdict.UNMET) == 0
    assert verdict_to_binary("CANNOT_ASSESS") is None and verdict_to_binary(None) is None
    with pytest.raises(InputError):
        verdict_to_binary("maybe")
    assert verdict_to_string(CriterionVerdict.MET) == "MET"
    h, j = filter_cannot_assess(["MET", "CANNOT_ASSESS", "UNMET"], ["MET", "MET", None])
    assert (h, j) == (["MET"], ["MET"])
    h, j = filter_cannot_assess(["CANNOT_ASSESS"], ["MET"], "as_unmet")
    assert (h, j) == (["UNMET"], ["MET"])


def test_summary_dataframe_file_and_db(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res, ds = make_run([BIN, ORD], [["MET", "L1"], ["UNMET", "L2"], ["MET", "L3"]],
                       [["MET", "L1"], ["MET", "L2"], ["MET", "L2"]],
                       p_met=[[0.8, None], [0.6, None], [0.9, None]])
    m = compute_metrics(res, ds, bootstrap=True, n_bootstrap=50, seed=1)
    text = m.summary()
    assert "Accuracy:" in text and "Bootstrap CIs (95%" in text and "Brier" in text
    df = m.to_dataframe()
    assert list(df.columns) == ["level", "name", "metric", "value", "ci_lower", "ci_upper"]
    assert set(df["level"]) >= {"aggregate", "criterion"}
    path = tmp_path / "out" / "m.json"
    m.to_file(path)
    assert MetricsResult.model_validate_json(path.read_text()) == m
    assert math.isclose(json.loads(path.read_text())["criterion_accuracy"], m.criterion_accuracy)
    db = open_db(":memory:")
    assert "metrics" in db.table_names()
    save_metrics(db, "run-1", m)
    assert load_metrics(db, "run-1") == m and load_metrics(db, "other") is None
    files = write_plots(m, tmp_path / "plots", res, ds)
    assert {f.name for f in files} == {"confusion_b.png", "confusion_o.png", "reliability.png",
                                       "scores.png"}
    assert all(f.stat().st_size > 0 for f in files)


def test_human_scores_follow_the_runs_scoring_settings() -> None:
    """Judge scores from a ``normalize=False`` run are raw sums: the ground truth must be too."""
    from dataclasses import replace as dc_replace

    criteria = [Criterion(name="a", weight=10.0, requirement="A"), Criterion(name="b", weight=5.0, requirement="B")]
    truth = [["MET", "UNMET"], ["MET", "MET"], ["UNMET", "UNMET"]]
    raw = [10.0, 15.0, 0.0]  # the judge agrees exactly, scored as raw weighted sums
    result, dataset = make_run(criteria, truth, [list(t) for t in truth], scores=raw)
    result = dc_replace(result, grader_settings={"normalize": False,
                                                 "cannot_assess_config": {"strategy": "skip", "partial_credit": 0.5}})
    metrics = compute_metrics(result, dataset)
    assert metrics.score_rmse == 0.0 and metrics.score_mae == 0.0
    penalised = dc_replace(result, grader_settings={"normalize": False, "length_penalty": {"free_budget": 10}})
    assert any("length penalty" in w for w in compute_metrics(penalised, dataset).warnings)
