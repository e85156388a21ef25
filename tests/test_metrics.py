"""Metrics: hand-computed cases, edge cases, modes, bootstrap, output and storage."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError
from test_metrics_support import BIN, NOM, ORD, make_run

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.metrics import (
    BiasResult,
    BootstrapResults,
    CannotAssessMode,
    ConfidenceInterval,
    CorrelationResult,
    KSTestResult,
    MetricsResult,
    OptionMetrics,
    compute_metrics,
    earth_movers_distance,
    extract_verdicts_from_report,
    filter_cannot_assess,
    fleiss_kappa,
    ks_test,
    load_metrics,
    save_metrics,
    score_distribution,
    systematic_bias,
    verdict_to_binary,
    verdict_to_string,
    wasserstein_distance,
    write_plots,
)
from autorubric_local.metrics.calibration import calibration, expected_calibration_error
from autorubric_local.metrics.types import interpret_kappa
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


# ---- AutoRubric 1.6.1's fields and parameter names (issue 53) --------------------------------


def test_emd_autorubric_fields_by_hand() -> None:
    e = earth_movers_distance([0.75, 0.5, 1.0], [0.5, 0.25, 0.75])  # a shift by 0.25
    assert e.distance == e.emd == pytest.approx(0.25)
    assert (e.mean_diff, e.std_diff, e.bias_magnitude) == pytest.approx((0.25, 0.0, 0.25))
    assert (e.bias_direction, e.interpretation, e.n_judge, e.n_human) == ("higher", "substantial differences", 3, 3)
    # normalize=True: pooled range [0.25, 1.0] -> the shift is 0.25 / 0.75; distance stays in score units
    n = earth_movers_distance(dist1=[0.75, 0.5, 1.0], dist2=[0.5, 0.25, 0.75], normalize=True)
    assert (n.distance, n.emd, n.mean_diff) == pytest.approx((0.25, 1 / 3, 1 / 3))
    assert wasserstein_distance([0.75, 0.5, 1.0], [0.5, 0.25, 0.75], normalize=True) == pytest.approx(1 / 3)
    # same mean, judge spread out: |F_j - F_h| = 0.5 on [0, 1); population stds 0.5 and 0
    s = earth_movers_distance(judge_scores=[0.0, 1.0], human_scores=[0.5, 0.5])
    assert (s.emd, s.mean_diff, s.std_diff) == pytest.approx((0.5, 0.0, 0.5))
    assert s.bias_direction == "none" and s.bias_magnitude == 0.0
    assert earth_movers_distance([0.5], [0.52]).interpretation == "very similar"
    assert earth_movers_distance([0.5], [0.43]).bias_direction == "higher"
    with pytest.raises(TypeError, match="dist1"):
        earth_movers_distance([0.1], [0.2], judge_scores=[0.1])
    with pytest.raises(TypeError, match="missing dist2"):
        earth_movers_distance([0.1])


def test_ks_test_significance_and_one_sample_form() -> None:
    ks = ks_test(sample1=[1, 2, 3], sample2=[4, 5, 6])
    # D = 1; exact two-sided p = 2 / C(6, 3) = 0.1 -> not significant at AutoRubric's 0.05
    assert (ks.statistic, ks.p_value, ks.is_significant) == pytest.approx((1.0, 0.1, False))
    assert ks == ks_test(judge_scores=[1, 2, 3], human_scores=[4, 5, 6])
    one = ks_test([1, 2, 3])  # vs N(2, sqrt(2/3)): D = 1/3 - Phi(-sqrt(3/2))
    phi = 0.5 * math.erfc(math.sqrt(1.5) / math.sqrt(2))
    assert one.statistic == pytest.approx(1 / 3 - phi) and (one.n_judge, one.n_human) == (3, None)
    assert KSTestResult(statistic=0.5, p_value=0.01).is_significant is True


def test_score_distribution_moments_by_hand() -> None:
    scores = [0.0, 0.25, 0.5, 1.0]
    d = score_distribution(scores)
    mean = 0.4375
    dev = [s - mean for s in scores]
    m2, m3, m4 = (sum(x**k for x in dev) / 4 for k in (2, 3, 4))
    assert d.variance == pytest.approx(sum(x**2 for x in dev) / 3) and d.variance == pytest.approx(d.std**2)
    assert (d.q25, d.q75, d.iqr) == pytest.approx((0.1875, 0.625, 0.4375))
    assert d.skewness == pytest.approx(m3 / m2**1.5)
    assert d.kurtosis == pytest.approx(m4 / m2**2 - 3)
    three = score_distribution([0.0, 0.5, 0.7])
    assert three.skewness is not None and three.kurtosis is None
    assert score_distribution([0.3, 0.3, 0.3, 0.3]).skewness is None
    one = score_distribution([0.4], include_histogram=False)
    assert one.variance is None and one.iqr == 0.0 and one.histogram is None and one.bin_edges is None


def test_systematic_bias_autorubric_fields_and_unpaired() -> None:
    b = systematic_bias(y_pred=[0.5, 0.7, 0.9], y_true=[0.4, 0.4, 0.6], confidence=0.9)
    assert b == systematic_bias([0.5, 0.7, 0.9], [0.4, 0.4, 0.6], 0.9)
    assert (b.direction, b.n_samples, b.n, b.ci.confidence, b.ci.method) == ("positive", 3, 3, 0.9, "t")
    assert b.is_significant is False  # t = 3.5 on 2 df: p = 0.073
    one = systematic_bias([0.4], [0.5])
    assert (one.direction, one.is_significant, one.std_bias) == ("negative", False, None)
    # independent samples: diff = 2 - 3; pooled s_p = sqrt((2 + 2) / 3); se = s_p sqrt(1/3 + 1/2)
    u = systematic_bias([1.0, 2.0, 3.0], [2.0, 4.0], paired=False)
    sp = math.sqrt(4 / 3)
    se = sp * math.sqrt(1 / 3 + 1 / 2)
    assert (u.mean_bias, u.std_bias, u.effect_size) == pytest.approx((-1.0, sp, -1 / sp))
    assert u.t_statistic == pytest.approx(-1 / se) and u.direction == "negative"
    assert u.ci.upper - u.ci.lower == pytest.approx(2 * 3.182446 * se, rel=1e-6)  # t_{.975, 3}
    with pytest.raises(InputError, match="differ in length"):
        systematic_bias([1.0, 2.0, 3.0], [2.0, 4.0])
    with pytest.raises(TypeError, match="two names"):
        systematic_bias([0.1, 0.2], [0.1, 0.3], 0.9, confidence=0.8)


def test_result_types_accept_autorubric_names() -> None:
    ci = ConfidenceInterval(lower=0.1, upper=0.4, confidence=0.9)
    assert (ci.confidence_level, ci.method) == (0.9, "normal")
    with pytest.raises(ValidationError, match="differ"):
        ConfidenceInterval(lower=0.1, upper=0.4, confidence=0.9, confidence_level=0.8)
    r = CorrelationResult(coefficient=0.75, n_samples=4)
    assert (r.n, r.interpretation, r.method) == (4, "strong positive", "spearman")
    assert CorrelationResult(coefficient=-0.2, n=9).interpretation == "very weak negative"
    with pytest.raises(ValidationError, match="n_samples"):
        CorrelationResult(coefficient=0.5)
    assert OptionMetrics(precision=None, recall=None, f1=None, support=3).support_true == 3
    # results stored before these fields existed: the methods come from where they sit
    old = {"mean_bias": 0.1, "std_bias": 0.2, "ci": {"lower": 0.0, "upper": 0.2, "confidence_level": 0.95},
           "t_statistic": 1.0, "p_value": 0.3, "effect_size": 0.5, "significant": False, "n": 5}
    bias = BiasResult.model_validate(old)
    assert (bias.ci.method, bias.ci.confidence, bias.n_samples, bias.direction) == ("t", 0.95, 5, None)


def test_criterion_and_run_fields_by_hand() -> None:
    # tp 2 (items 0, 4), fn 1 (item 1), fp 1 (item 2), tn 1 (item 3)
    truth = [["MET", "L1"], ["MET", "L2"], ["UNMET", "L3"], ["UNMET", "L0"], ["MET", "L1"]]
    judge = [["MET", "L1"], ["UNMET", "L3"], ["MET", "L3"], ["UNMET", "L0"], ["MET", "L2"]]
    m = compute_metrics(*make_run([BIN, ORD], truth, judge))
    b, o = m.per_criterion
    assert (b.criterion_type, b.n_samples, b.support_true, b.support_pred) == ("binary", 5, 3, 3)
    assert (b.fpr, b.fnr, b.phi) == pytest.approx((1 / 2, 1 / 3, (2 * 1 - 1 * 1) / math.sqrt(3 * 3 * 2 * 2)))
    assert b.kappa == pytest.approx((0.6 - 0.52) / 0.48) and b.kappa_interpretation == "slight"
    assert b.is_degenerate is False and b.krippendorff_alpha is None  # one judge
    assert o.criterion_type == "ordinal" and o.fpr is None and o.support_true is None
    assert o.kappa_interpretation == interpret_kappa(o.weighted_kappa)
    assert (m.n_binary_criteria, m.n_ordinal_criteria, m.n_nominal_criteria, m.n_samples) == (1, 1, 0, 10)
    assert m.macro_accuracy == pytest.approx((0.6 + 0.6) / 2) and m.criterion_phi == pytest.approx(1 / 6)
    assert m.mean_krippendorff_alpha is None
    assert (m.score_spearman.method, m.score_kendall.method, m.score_pearson.method) == (
        "spearman", "kendall", "pearson")
    # a result stored before the fields existed gets them on reading
    stored = m.model_dump(mode="json")
    for key in ("n_binary_criteria", "n_ordinal_criteria", "n_samples", "macro_accuracy", "criterion_phi"):
        del stored[key]
    for c in stored["per_criterion"]:
        for key in ("criterion_type", "n_samples", "kappa_interpretation", "is_degenerate", "support_true",
                    "support_pred", "fpr", "fnr", "phi"):
            del c[key]
    for key in ("score_spearman", "score_kendall", "score_pearson"):
        del stored[key]["method"], stored[key]["n_samples"], stored[key]["interpretation"]
    assert MetricsResult.model_validate(stored) == m


def test_degenerate_criterion_and_judge_fields() -> None:
    m = compute_metrics(*make_run([BIN], [["MET"]] * 4, [["MET"]] * 4))
    c = m.per_criterion[0]
    assert c.is_degenerate is True and c.kappa_interpretation == "undefined"
    assert (c.fpr, c.fnr, c.phi, m.criterion_phi) == (None, 0.0, None, None)
    truth = [["MET"], ["UNMET"], ["MET"], ["UNMET"]]
    votes = {"a": [["MET"], ["UNMET"], ["MET"], ["UNMET"]], "b": [["MET"], ["MET"], ["MET"], ["UNMET"]]}
    m = compute_metrics(*make_run([BIN], truth, votes["a"], votes), per_judge=True)
    assert m.per_judge["a"].phi == pytest.approx(1.0)
    assert m.per_judge["b"].phi == pytest.approx(2 / math.sqrt(3 * 2 * 2 * 1))  # tp 2, fn 0, fp 1, tn 1
    assert m.per_judge["a"].bias.mean_bias == pytest.approx(0.0) and m.per_judge["b"].bias.n_samples == 4
    ic = m.inter_judge.per_criterion[0]
    assert (m.per_criterion[0].krippendorff_alpha, m.per_criterion[0].fleiss_kappa) == (ic.alpha, ic.fleiss_kappa)
    assert m.mean_krippendorff_alpha == m.inter_judge.mean_alpha


def test_bootstrap_autorubric_fields() -> None:
    truth = [["MET"], ["UNMET"], ["MET"], ["UNMET"], ["MET"], ["UNMET"]]
    final = [["MET"], ["MET"], ["MET"], ["UNMET"], ["UNMET"], ["UNMET"]]
    boot = compute_metrics(*make_run([BIN], truth, final), bootstrap=True, n_bootstrap=50, seed=3).bootstrap
    acc = boot.metrics["criterion_accuracy"]
    assert boot.accuracy_ci == (acc.ci.lower, acc.ci.upper)
    assert boot.kappa_ci == (boot.metrics["mean_kappa"].ci.lower, boot.metrics["mean_kappa"].ci.upper)
    assert boot.rmse_ci == (boot.metrics["score_rmse"].ci.lower, boot.metrics["score_rmse"].ci.upper)
    assert (acc.n_bootstrap, acc.standard_error, acc.ci.method) == (50, acc.std_error, "percentile")
    assert acc.bootstrap_distribution is None
    stored = boot.model_dump(mode="json")
    del stored["accuracy_ci"], stored["kappa_ci"], stored["rmse_ci"]
    for r in stored["metrics"].values():
        del r["ci"]["method"], r["standard_error"]
    assert BootstrapResults.model_validate(stored) == boot


@pytest.mark.parametrize("paired", [True, False])
def test_systematic_bias_interval_covers_the_true_bias_95_percent(paired: bool) -> None:
    """Coverage by simulation against a known truth (Student's t interval, paired and pooled):
    2,000 draws of normal scores with a true bias of 0.1; 95% intervals should cover it
    95 +/- 1.5% of the time (three binomial standard errors)."""
    import numpy as np

    rng = np.random.default_rng(20261203)
    covered = 0
    for _ in range(2000):
        if paired:
            human = rng.normal(0.5, 0.2, 10)
            judge = human + 0.1 + rng.normal(0.0, 0.1, 10)
        else:
            human, judge = rng.normal(0.5, 0.2, 12), rng.normal(0.6, 0.2, 8)
        ci = systematic_bias(judge.tolist(), human.tolist(), paired=paired, confidence=0.95).ci
        covered += ci.lower <= 0.1 <= ci.upper
    assert 0.935 <= covered / 2000 <= 0.965


# ---- AutoRubric 1.6.1's remaining fields and helper forms (issue 53) -------------------------------

BIN2 = Criterion(name="c", weight=1.0, requirement="another binary")


def test_micro_kappa_abstention_stats_and_coverage_by_hand() -> None:
    from sklearn.metrics import cohen_kappa_score

    truth = [["MET", "MET"], ["UNMET", "MET"], ["MET", "UNMET"], ["CANNOT_ASSESS", "UNMET"]]
    final = [["MET", "MET"], ["MET", "CANNOT_ASSESS"], ["MET", "UNMET"], ["MET", "MET"]]
    res, ds = make_run([BIN, BIN2], truth, final)
    m = compute_metrics(res, ds)
    # exclude: b keeps (M,M) (U,M) (M,M), c keeps (M,M) (U,U) (U,M); pooled: MM 3, UM 2, UU 1
    # p_o = 4/6, p_e = (3*5 + 3*1)/36 = 1/2 -> (2/3 - 1/2) / (1/2) = 1/3
    assert m.micro_kappa == pytest.approx(1 / 3)
    h, j = ["MET", "UNMET", "MET", "MET", "UNMET", "UNMET"], ["MET", "MET", "MET", "MET", "UNMET", "MET"]
    assert m.micro_kappa == pytest.approx(cohen_kappa_score(h, j))
    assert m.mean_kappa == pytest.approx((0.0 + 0.4) / 2)  # macro: b 0, c (2/3 - 4/9) / (5/9)
    # CANNOT_ASSESS on {CA, not CA} over all 8 judged pairs: truth CA once (b, item 3), judge once
    # (c, item 1): p_o = 6/8, p_e = (1 + 49)/64 -> (48 - 50) / 14 = -1/7, whatever the mode
    ca = m.cannot_assess_stats
    assert ca is not None and (ca.ca_count_true, ca.ca_count_pred) == (1, 1)
    assert (ca.ca_false_positive, ca.ca_false_negative) == (1, 1)
    assert ca.ca_kappa == pytest.approx(-1 / 7) and ca.ca_kappa_interpretation == "poor (worse than chance)"
    assert m.na_stats is None and m.pooled_by_scale is None  # no multi-choice; one rubric
    b, c = (cm.coverage_stats for cm in m.per_criterion)
    assert b is not None and (b.n_total, b.n_covered, b.coverage, b.gt_abstain_rate, b.judge_abstain_rate) \
        == (4, 3, 0.75, 0.25, 0.0)
    assert c is not None and (c.n_total, c.n_covered, c.judge_abstain_rate, c.gt_abstain_rate) == (4, 3, 0.25, 0.0)
    run = m.coverage_stats
    assert run is not None and (run.n_total, run.n_covered, run.n_errored) == (8, 6, 0)
    assert (run.coverage, run.union_exclusion_rate, run.judge_abstain_rate) == (0.75, 0.25, 1 / 8)
    unmet = compute_metrics(res, ds, cannot_assess="as_unmet")
    # pooled MM 3, UM 3, MU 1, UU 1: p_o = 1/2, p_e = (4*6 + 4*2)/64 = 1/2 -> 0
    assert unmet.micro_kappa == pytest.approx(0.0)
    assert unmet.coverage_stats is None and all(cm.coverage_stats is None for cm in unmet.per_criterion)
    assert unmet.cannot_assess_stats == ca
    assert "Pooled binary kappa: 0.333" in m.summary()
    assert "Coverage: 75.0% of 8 pairs (judge abstained 12.5%, ground truth 12.5%, errored 0)" in m.summary()
    assert "Coverage:" not in unmet.summary()


def test_na_stats_and_coverage_count_failed_judgments() -> None:
    res, ds = make_run([ORD], [["NA"], ["L0"], ["L3"]], [["L0"], ["NA"], ["L3"]])
    m = compute_metrics(res, ds)
    na = m.na_stats
    # 3 pairs: NA only in truth (item 0), only in judge (item 1): p_o = 1/3, p_e = 5/9 -> -1/2
    assert na is not None and (na.na_count_true, na.na_count_pred) == (1, 1)
    assert (na.na_false_positive, na.na_false_negative, na.na_kappa) == (1, 1, pytest.approx(-0.5))
    assert m.cannot_assess_stats is None and m.micro_kappa is None  # no binary pairs
    cov = m.per_criterion[0].coverage_stats
    assert cov is not None and (cov.n_total, cov.n_covered) == (3, 1)
    res, ds = make_run([BIN, ORD], [["MET", "L1"], ["UNMET", "L2"], ["MET", "L0"]],
                       [["MET", "L1"], None, [None, "L0"]])
    b = compute_metrics(res, ds).per_criterion[0].coverage_stats
    # a failed item and a failed judgment: errored pairs, never abstentions
    assert b is not None and (b.n_total, b.n_covered, b.n_errored, b.error_rate) == (3, 1, 2, pytest.approx(2 / 3))
    assert b.judge_abstain_rate == 0.0


def _drop_vote(res, item: int, criterion: int, judge: str) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    r = res.item_results[item]
    crs = list(r.report.report)
    crs[criterion] = crs[criterion].model_copy(
        update={"votes": [v for v in crs[criterion].votes if v.judge_id != judge]})
    res.item_results[item] = dataclasses.replace(r, report=r.report.model_copy(update={"report": crs}))


def test_judge_confusion_matrix_coverage_and_pairs() -> None:
    truth = [["MET"], ["UNMET"], ["CANNOT_ASSESS"], ["MET"]]
    votes = {"a": [["MET"], ["CANNOT_ASSESS"], ["CANNOT_ASSESS"], ["UNMET"]],
             "b": [["MET"], ["UNMET"], ["MET"], ["MET"]]}
    res, ds = make_run([BIN], truth, votes["a"], votes)
    _drop_vote(res, 3, 0, "b")  # b was not consulted on item 3 (as a cascade's escalation judge)
    m = compute_metrics(res, ds, per_judge=True)
    a, b = m.per_judge["a"], m.per_judge["b"]  # type: ignore[index]
    assert a.confusion_matrix is not None and a.confusion_matrix.labels == ["MET", "UNMET", "CANNOT_ASSESS"]
    # rows truth, columns judge, before the mode: (M,M) (U,CA) (CA,CA) (M,U)
    assert a.confusion_matrix.matrix == [[1, 1, 0], [0, 0, 1], [0, 0, 1]]
    assert (a.coverage, a.n_pairs) == ("full", 2)  # exclude keeps (M,M) (M,U)
    assert b.confusion_matrix.matrix == [[1, 0, 0], [0, 1, 0], [1, 0, 0]]  # type: ignore[union-attr]
    assert (b.coverage, b.n_pairs) == ("partial", 2)  # (M,M) (U,U); item 2 excluded, 3 absent
    assert any(w.startswith("judge 'b': no vote on 1 criterion judgment") for w in m.warnings)
    assert not any("judge 'b'" in w and "failed call" in w for w in m.warnings)
    assert compute_metrics(res, ds, per_judge=True, cannot_assess="as_category").per_judge["b"].n_pairs == 3  # type: ignore[index]


def test_per_item_metrics_adds_pooled_points() -> None:
    from autorubric_local.data.dataset import DataItem, RubricDataset
    from autorubric_local.metrics.typed import pooled_scale_metrics
    from autorubric_local.core.rubric import Rubric

    res, ds = make_run([BIN, ORD], [["MET", "L1"], ["UNMET", "L2"]], [["MET", "L1"], ["MET", "L3"]])
    assert compute_metrics(res, ds).pooled_by_scale is None  # one rubric: "auto" does not pool
    pooled = compute_metrics(res, ds, per_item_metrics="pooled")
    assert pooled.pooled_by_scale == pooled_scale_metrics(res, ds)
    assert pooled.per_criterion == compute_metrics(res, ds).per_criterion  # kept, same meaning
    binary = pooled.pooled_by_scale[0]  # type: ignore[index]
    assert (binary.scale_type, binary.n_points, binary.exact_accuracy) == ("binary", 2, 0.5)
    with pytest.raises(InputError, match="per_item_metrics"):
        compute_metrics(res, ds, per_item_metrics="items")  # type: ignore[arg-type]
    # per-item rubrics that differ: "auto" pools, "per_criterion" does not
    items = [DataItem(submission="s0", rubric=Rubric([BIN, ORD]), ground_truth=["MET", "L1"]),
             DataItem(submission="s1", rubric=Rubric([BIN2]), ground_truth=["UNMET"])]
    per_item = RubricDataset(prompt="q", rubric=None, items=items)
    res.item_results[1] = type(res.item_results[1])(
        item_idx=1, item=per_item[1], report=res.item_results[1].report.model_copy(
            update={"report": [res.item_results[1].report.report[0].model_copy(update={"criterion": BIN2})]}),
        duration_seconds=0.0, item_id="item-1")
    auto = compute_metrics(res, per_item)
    assert auto.pooled_by_scale == pooled_scale_metrics(res, per_item) and auto.pooled_by_scale
    assert [c.name for c in auto.per_criterion] == ["b", "o", "c"]
    assert compute_metrics(res, per_item, per_item_metrics="per_criterion").pooled_by_scale is None


def test_converters_take_autorubrics_lists() -> None:
    verdicts = [CriterionVerdict.MET, "unmet", "CANNOT_ASSESS", None]
    assert verdict_to_binary(verdicts) == [1, 0, None, None]  # one value per verdict, in order
    assert verdict_to_binary(("MET",)) == [1] and verdict_to_binary([]) == []
    assert verdict_to_binary(CriterionVerdict.MET) == 1  # one verdict: one value
    assert verdict_to_string(verdicts) == ["MET", "unmet", "CANNOT_ASSESS", "None"]
    assert verdict_to_string("red") == "red" and verdict_to_string(["red"]) == ["red"]
    with pytest.raises(InputError):
        verdict_to_binary(["MET", "maybe"])


def test_filter_cannot_assess_in_autorubrics_order() -> None:
    pred = ["MET", "CANNOT_ASSESS", "UNMET", "MET"]
    true = ["UNMET", "MET", "CANNOT_ASSESS", "MET"]
    # AutoRubric's call: (pred_verdicts, true_verdicts, mode), results in that order
    p, t = filter_cannot_assess(pred, true, "as_unmet")
    assert (p, t) == (["MET", "UNMET", "UNMET", "MET"], ["UNMET", "MET", "UNMET", "MET"])
    assert filter_cannot_assess(pred_verdicts=pred, true_verdicts=true, mode="as_unmet") == (p, t)
    # the mode treats both sides alike: swapping the lists swaps the results
    assert filter_cannot_assess(true, pred, "as_unmet") == (t, p)
    assert filter_cannot_assess(pred, true) == (["MET", "MET"], ["UNMET", "MET"])
    assert filter_cannot_assess(pred, true, "as_category") == (pred, true)
    with pytest.raises(InputError, match="pred_verdicts and true_verdicts"):
        filter_cannot_assess(["MET"], [])


def test_extract_verdicts_with_num_criteria() -> None:
    res, ds = make_run([BIN, NOM], [["MET", "red"], ["UNMET", "blue"]], [["MET", "red"], None])
    assert extract_verdicts_from_report(res.item_results[0].report, 2) == [CriterionVerdict.MET, "red"]
    assert extract_verdicts_from_report(res.item_results[1].report, num_criteria=2) == [None, None]
    assert extract_verdicts_from_report(res.item_results[1].report) == []
    with pytest.raises(InputError, match="num_criteria"):
        extract_verdicts_from_report(res.item_results[0].report, 3)
    with pytest.raises(InputError, match="num_criteria"):
        extract_verdicts_from_report(res.item_results[0].report, -1)


def test_new_fields_round_trip_and_stored_results_read_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    truth = [["MET"], ["UNMET"], ["CANNOT_ASSESS"], ["MET"]]
    votes = {"a": [["MET"], ["CANNOT_ASSESS"], ["UNMET"], ["UNMET"]], "b": [["MET"], ["UNMET"], ["MET"], ["MET"]]}
    res, ds = make_run([BIN], truth, votes["a"], votes)
    m = compute_metrics(res, ds, per_judge=True)
    db = open_db(tmp_path / "m.db")
    save_metrics(db, "run-1", m)
    assert load_metrics(db, "run-1") == m
    # a result stored before these fields existed: derivable ones come back, the others None
    data = json.loads(m.model_dump_json())
    for name in ("micro_kappa", "cannot_assess_stats", "na_stats", "coverage_stats", "pooled_by_scale"):
        data.pop(name)
    data["per_criterion"][0].pop("coverage_stats")
    for jm in data["per_judge"].values():
        for name in ("confusion_matrix", "coverage", "n_pairs"):
            jm.pop(name)
    old = MetricsResult.model_validate_json(json.dumps(data))
    assert old.micro_kappa == m.micro_kappa == pytest.approx(m.per_criterion[0].kappa)  # one criterion
    assert old.cannot_assess_stats is None and old.coverage_stats is None and old.per_criterion[0].coverage_stats is None
    assert old.per_judge["a"].n_pairs == m.per_judge["a"].n_pairs == 2  # type: ignore[index]
    assert old.per_judge["a"].coverage == "full" and old.per_judge["a"].confusion_matrix is None  # type: ignore[index]
