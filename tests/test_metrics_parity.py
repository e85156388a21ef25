"""AutoRubric's ``autorubric.metrics`` helpers and per-type shapes (issue 53): hand-computed cases
and scikit-learn as the reference."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest
from sklearn.metrics import (
    cohen_kappa_score,
    confusion_matrix,
    matthews_corrcoef,
    mean_squared_error,
    precision_recall_fscore_support,
)
from test_metrics_support import BIN, NOM, ORD, _cr, make_run

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import CriterionReport, EnsembleEvaluationReport, EvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionVerdict, MultiChoiceVerdict
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.metrics import (
    BinaryCriterionMetrics,
    CannotAssessStats,
    ConfusionMatrix,
    CoverageStats,
    CriterionMetricsUnion,
    NAStats,
    NominalCriterionMetrics,
    OrdinalCriterionMetrics,
    abstention_stats,
    as_typed,
    classify_criteria,
    classify_criterion,
    compute_metrics,
    extract_all_verdicts_from_report,
    filter_na_multi_choice,
    get_option_value,
    is_na_option,
    pooled_scale_metrics,
    resolve_ground_truth,
    typed_per_criterion,
)
from autorubric_local.metrics.typed import interpret_kappa
from autorubric_local.runner.results import EvalResult, EvalTimingStats, ItemResult

MET, UNMET, CA = CriterionVerdict.MET, CriterionVerdict.UNMET, CriterionVerdict.CANNOT_ASSESS
NEG = Criterion.model_validate({  # negative weight: the worst option is the highest value
    "name": "neg", "weight": -1.0, "requirement": "penalty", "scale_type": "ordinal",
    "options": [{"label": "none", "value": 0.0}, {"label": "some", "value": 0.5},
                {"label": "many", "value": 1.0}, {"label": "n/a", "na": True}]})

# A mixed run (binary, ordinal with NA, nominal), two judges; item 3's binary judgment failed.
TRUTH = [["MET", "L0", "red"], ["UNMET", "L1", "green"], ["CANNOT_ASSESS", "NA", "blue"],
         ["MET", "L3", "red"], ["UNMET", "L2", "green"], ["MET", "L1", "blue"]]
FINAL = [["MET", "L1", "red"], ["MET", "L1", "blue"], ["UNMET", "L2", "blue"],
         [None, "NA", "red"], ["UNMET", "L2", "green"], ["CANNOT_ASSESS", "L0", "blue"]]
OTHER = [["UNMET", "L1", "red"], ["MET", "L0", "green"], ["UNMET", "L2", "blue"],
         ["MET", "NA", "red"], ["UNMET", "L3", "green"], ["MET", "L1", "red"]]


@pytest.fixture(scope="module")
def mixed() -> tuple[EvalResult, RubricDataset]:
    return make_run([BIN, ORD, NOM], TRUTH, FINAL, votes={"a": FINAL, "b": OTHER})


# ---- classify_criterion ----------------------------------------------------------------------


def test_classify_criterion_by_scale() -> None:
    assert classify_criterion(BIN) == "binary"
    assert classify_criterion(ORD) == "ordinal"
    assert classify_criterion(NOM) == "nominal"
    assert classify_criteria(Rubric([BIN, NOM, ORD, BIN])) == ["binary", "nominal", "ordinal", "binary"]
    assert classify_criteria([]) == []


# ---- option helpers --------------------------------------------------------------------------


def test_option_value_and_na() -> None:
    assert [get_option_value(ORD, i) for i in range(4)] == pytest.approx([0, 1 / 3, 2 / 3, 1])
    assert [is_na_option(ORD, i) for i in range(5)] == [False] * 4 + [True]
    assert get_option_value(NEG, 2) == 1.0 and is_na_option(NEG, 3)
    for bad in (-1, 5, True, 1.0):
        with pytest.raises(ValueError):
            get_option_value(ORD, bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="binary"):
        is_na_option(BIN, 0)


# ---- resolve_ground_truth ----------------------------------------------------------------------


def test_resolve_ground_truth_accepts_autorubrics_forms() -> None:
    criteria = [BIN, BIN, ORD, ORD, NOM, NOM]
    resolved = resolve_ground_truth([MET, "CANNOT_ASSESS", " l2 ", "NA", "blue", 1], criteria)
    assert resolved == [MET, CA, 2, 4, 2, 1]
    assert isinstance(resolved[1], CriterionVerdict)
    assert resolve_ground_truth([0, 3], [ORD, ORD]) == [0, 3]


@pytest.mark.parametrize(("truth", "criteria", "match"), [
    (["MET"], [BIN, BIN], "2 criteria"),
    (["maybe"], [BIN], "not valid"),
    ([1], [BIN], "expected one of"),
    (["purple"], [NOM], "not an option"),
    ([3], [NOM], "out of range"),
    ([True], [NOM], "integer"),
    ([0.5], [ORD], "integer"),
])
def test_resolve_ground_truth_refuses(truth: list[object], criteria: list[Criterion], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        resolve_ground_truth(truth, criteria)  # type: ignore[arg-type]


# ---- extract_all_verdicts_from_report ------------------------------------------------------------


def test_extract_all_verdicts_from_ensemble_reports(mixed: tuple[EvalResult, RubricDataset]) -> None:
    res, _ = mixed
    criteria = [BIN, ORD, NOM]
    got = [extract_all_verdicts_from_report(r.report, criteria) for r in res.item_results]
    assert got[0] == [MET, 1, 0]
    assert got[3] == [None, 4, 0]  # failed binary judgment: no verdict; NA option of ORD is index 4
    assert got[5] == [CA, 0, 2]
    assert extract_all_verdicts_from_report(EnsembleEvaluationReport(score=None), criteria) == [None] * 3
    with pytest.raises(InputError, match="3 criteria but 2"):
        extract_all_verdicts_from_report(res.item_results[0].report, criteria[:2])


def test_extract_all_verdicts_from_a_single_judge_report() -> None:
    # An abstain without an option on a criterion without NA options: the NA appended after them.
    rows = [CriterionReport(**BIN.model_dump(), verdict=UNMET, reason=""),
            CriterionReport(**NOM.model_dump(), reason="",
                            multi_choice_verdict=MultiChoiceVerdict(selected_index=None, selected_label=None,
                                                                    value=0.0, na=True)),
            CriterionReport(**NOM.model_dump(), reason="",
                            multi_choice_verdict=MultiChoiceVerdict(selected_index=1, selected_label="green",
                                                                    value=0.5)),
            CriterionReport(**BIN.model_dump(), verdict=MET, reason="", error="parse: no verdict")]
    report = EvaluationReport(score=0.5, report=rows)
    assert extract_all_verdicts_from_report(report, [BIN, NOM, NOM, BIN]) == [UNMET, 3, 1, None]


# ---- filter_na_multi_choice ----------------------------------------------------------------------


def test_filter_na_modes_by_hand() -> None:
    pred, true = [0, 4, 4, 2, 1], [0, 4, 1, 4, 3]  # NA is index 4
    assert filter_na_multi_choice(pred, true, ORD) == ([0, 1], [0, 3], 1, 1, 1)
    # as_unmet: NA -> the lowest-value scored option (weight > 0): index 0
    assert filter_na_multi_choice(pred, true, ORD, "as_unmet") == ([0, 0, 0, 2, 1], [0, 0, 1, 0, 3], 1, 1, 1)
    # weight < 0: the worst option is the highest value ("many", index 2)
    assert filter_na_multi_choice([3, 0], [1, 3], NEG, "AS_UNMET") == ([2, 0], [1, 2], 0, 1, 1)


def test_filter_na_as_category_and_guards() -> None:
    nominal_na = NOM.with_guaranteed_na_option()  # canonical NA appended at index 3
    assert filter_na_multi_choice([3, 0], [3, 1], nominal_na, "as_category") == ([3, 0], [3, 1], 1, 0, 0)
    with pytest.raises(InputError, match="ordinal"):
        filter_na_multi_choice([4], [0], ORD, "as_category")
    assert filter_na_multi_choice([0, 2], [1, 2], NOM, "as_category") == ([0, 2], [1, 2], 0, 0, 0)
    with pytest.raises(InputError, match="na_mode"):  # AutoRubric's old "as_worst" is refused too
        filter_na_multi_choice([0], [0], ORD, "as_worst")
    with pytest.raises(InputError, match="length"):
        filter_na_multi_choice([0, 1], [0], ORD)
    with pytest.raises(InputError, match="out of range"):
        filter_na_multi_choice([7], [0], ORD)
    with pytest.raises(InputError, match="binary"):
        filter_na_multi_choice([], [], BIN)


# ---- ConfusionMatrix -------------------------------------------------------------------------------


def test_confusion_matrix_matches_sklearn_and_binary_rates() -> None:
    y_true = ["MET", "MET", "MET", "UNMET", "UNMET", "MET", "UNMET"]
    y_pred = ["MET", "UNMET", "MET", "MET", "UNMET", "MET", "UNMET"]
    cm = ConfusionMatrix.from_pairs(y_true, y_pred, ["MET", "UNMET"])
    assert cm.matrix == confusion_matrix(y_true, y_pred, labels=["MET", "UNMET"]).tolist()
    assert (cm.tp, cm.fn, cm.fp, cm.tn) == (3, 1, 1, 2)
    assert (cm.precision, cm.recall, cm.fpr, cm.fnr) == pytest.approx((3 / 4, 3 / 4, 1 / 3, 1 / 4))
    assert cm.n_classes == 2 and cm.total == 7
    none = ConfusionMatrix(matrix=[[0, 0], [3, 1]], labels=["MET", "UNMET"])
    assert none.recall is None and none.fnr is None and none.precision == 0.0
    three = ConfusionMatrix.from_pairs(["a", "b", "c"], ["a", "c", "c"], ["a", "b", "c"])
    assert three.matrix == [[1, 0, 0], [0, 0, 1], [0, 0, 1]]
    with pytest.raises(InputError, match="2x2"):
        _ = three.tp
    with pytest.raises(ValueError, match="2x2"):
        ConfusionMatrix(matrix=[[1, 2]], labels=["MET", "UNMET"])
    with pytest.raises(ValueError, match=">= 0"):
        ConfusionMatrix(matrix=[[1, -1], [0, 0]], labels=["MET", "UNMET"])


def test_interpret_kappa_bands() -> None:
    assert [interpret_kappa(k) for k in (-0.1, 0.0, 0.3, 0.5, 0.7, 0.9, None)] == [
        "poor (worse than chance)", "slight", "fair", "moderate", "substantial", "almost perfect", "undefined"]


# ---- per-type views of compute_metrics -------------------------------------------------------------------


def _excluded_pairs(k: int) -> tuple[list[str], list[str]]:
    """Ground truth and final verdicts of criterion ``k`` of the mixed run, as compute_metrics
    pairs them under the exclude modes (no failed judgment, no CANNOT_ASSESS / NA)."""
    pairs = [(t[k], f[k]) for t, f in zip(TRUTH, FINAL, strict=True)
             if f[k] is not None and not {t[k], f[k]} & {"CANNOT_ASSESS", "NA"}]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def test_binary_view_against_sklearn(mixed: tuple[EvalResult, RubricDataset]) -> None:
    res, ds = mixed
    result = compute_metrics(res, ds)
    view = typed_per_criterion(result)[0]
    assert isinstance(view, BinaryCriterionMetrics) and view.criterion_type == "binary"
    h, j = _excluded_pairs(0)  # (MET, MET), (UNMET, MET), (UNMET, UNMET)
    assert view.n_samples == len(h) == 3
    assert view.confusion_matrix is not None
    assert view.confusion_matrix.matrix == confusion_matrix(h, j, labels=["MET", "UNMET"]).tolist()
    assert view.kappa == pytest.approx(cohen_kappa_score(h, j)) == result.per_criterion[0].kappa
    y, p = [int(v == "MET") for v in h], [int(v == "MET") for v in j]
    assert view.phi == pytest.approx(matthews_corrcoef(y, p))
    assert (view.support_true, view.support_pred) == (sum(y), sum(p))
    assert view.fpr == pytest.approx(1 / 2) and view.fnr == 0.0
    assert view.kappa_interpretation == interpret_kappa(view.kappa)
    inter = {c.name: c for c in result.inter_judge.per_criterion}  # type: ignore[union-attr]
    assert view.krippendorff_alpha == inter["b"].alpha and view.fleiss_kappa == inter["b"].fleiss_kappa
    assert view.coverage_stats == result.per_criterion[0].coverage_stats is not None  # set under the exclude modes


def test_binary_view_as_category_collapses_cannot_assess(mixed: tuple[EvalResult, RubricDataset]) -> None:
    res, ds = mixed
    cm = compute_metrics(res, ds, cannot_assess="as_category").per_criterion[0]
    view = as_typed(cm)
    assert cm.labels == ["UNMET", "MET", "CANNOT_ASSESS"] and view.n_samples == 5
    h = [t[0] for t, f in zip(TRUTH, FINAL, strict=True) if f[0] is not None]
    j = [f[0] for f in FINAL if f[0] is not None]
    met_h, met_j = ["MET" if v == "MET" else "UNMET" for v in h], ["MET" if v == "MET" else "UNMET" for v in j]
    assert isinstance(view, BinaryCriterionMetrics) and view.confusion_matrix is not None
    assert view.confusion_matrix.matrix == confusion_matrix(met_h, met_j, labels=["MET", "UNMET"]).tolist()
    assert view.accuracy == pytest.approx(np.mean([a == b for a, b in zip(h, j, strict=True)]))


def test_ordinal_and_nominal_views_against_sklearn(mixed: tuple[EvalResult, RubricDataset]) -> None:
    res, ds = mixed
    views: list[CriterionMetricsUnion] = typed_per_criterion(compute_metrics(res, ds))
    ordinal, nominal = views[1], views[2]
    assert isinstance(ordinal, OrdinalCriterionMetrics) and isinstance(nominal, NominalCriterionMetrics)
    labels = ["L0", "L1", "L2", "L3"]
    h, j = _excluded_pairs(1)
    assert ordinal.n_samples == len(h) and ordinal.n_options == 4
    assert ordinal.confusion_matrix.labels == labels
    assert ordinal.confusion_matrix.matrix == confusion_matrix(h, j, labels=labels).tolist()
    assert ordinal.weighted_kappa == pytest.approx(cohen_kappa_score(h, j, labels=labels, weights="quadratic"))
    assert ordinal.exact_accuracy == pytest.approx(np.mean([a == b for a, b in zip(h, j, strict=True)]))
    value = {label: k / 3 for k, label in enumerate(labels)}
    assert ordinal.rmse == pytest.approx(np.sqrt(mean_squared_error([value[v] for v in h], [value[v] for v in j])))
    prec, rec, _, sup = precision_recall_fscore_support(h, j, labels=labels, zero_division=np.nan)
    assert [o.label for o in ordinal.per_option] == labels
    for k, option in enumerate(ordinal.per_option):
        assert option.index == k and option.support_true == sup[k]
        assert option.support_pred == sum(v == labels[k] for v in j)
        assert option.precision == (None if np.isnan(prec[k]) else pytest.approx(prec[k]))
        assert option.recall == (None if np.isnan(rec[k]) else pytest.approx(rec[k]))
    h, j = _excluded_pairs(2)
    colours = ["red", "green", "blue"]
    assert nominal.kappa == pytest.approx(cohen_kappa_score(h, j))
    assert nominal.confusion_matrix.matrix == confusion_matrix(h, j, labels=colours).tolist()
    assert [(o.label, o.index) for o in nominal.per_option] == list(zip(colours, range(3), strict=True))
    assert [o.support_pred for o in nominal.per_option] == [sum(v == c for v in j) for c in colours]


def test_views_without_pairs_and_wrong_scale() -> None:
    res, ds = make_run([BIN, ORD], [["CANNOT_ASSESS", "NA"]] * 2, [["MET", "L1"]] * 2)
    binary, ordinal = typed_per_criterion(compute_metrics(res, ds))
    assert binary.n_samples == 0 and binary.confusion_matrix is None and binary.phi is None
    assert binary.kappa_interpretation == "undefined" and not binary.is_degenerate
    assert isinstance(ordinal, OrdinalCriterionMetrics) and ordinal.per_option == []
    assert ordinal.confusion_matrix.total == 0
    res, ds = make_run([BIN], [["MET"]] * 3, [["MET"]] * 3)
    (constant,) = typed_per_criterion(compute_metrics(res, ds))
    assert constant.is_degenerate and constant.phi is None
    with pytest.raises(InputError, match="binary, not ordinal"):
        OrdinalCriterionMetrics.from_criterion_metrics(compute_metrics(res, ds).per_criterion[0])


# ---- abstention and coverage ----------------------------------------------------------------------------


def test_abstention_stats_by_hand_and_against_sklearn(mixed: tuple[EvalResult, RubricDataset]) -> None:
    res, ds = mixed
    stats = abstention_stats(res, ds)
    # binary judged pairs (item 3 failed): truth CA at item 2, judge CA at item 5
    truth_ca = [t[0] == "CANNOT_ASSESS" for t, f in zip(TRUTH, FINAL, strict=True) if f[0] is not None]
    pred_ca = [f[0] == "CANNOT_ASSESS" for f in FINAL if f[0] is not None]
    ca = stats.cannot_assess_stats
    assert ca is not None and ca == CannotAssessStats.from_decisions(truth_ca, pred_ca)
    assert (ca.ca_count_true, ca.ca_count_pred, ca.ca_false_positive, ca.ca_false_negative) == (1, 1, 1, 1)
    assert ca.ca_kappa == pytest.approx(cohen_kappa_score(truth_ca, pred_ca))
    # NA over the ordinal and nominal pairs (the nominal one has no NA option: never NA)
    truth_na = [t[1] == "NA" for t in TRUTH] + [False] * 6
    pred_na = [f[1] == "NA" for f in FINAL] + [False] * 6
    assert stats.na_stats == NAStats.from_decisions(truth_na, pred_na)
    assert stats.na_stats.na_kappa == pytest.approx(cohen_kappa_score(truth_na, pred_na))  # type: ignore[union-attr]
    b = stats.per_criterion["b"]
    assert (b.n_total, b.n_covered, b.n_errored) == (6, 3, 1)
    assert (b.judge_abstain_rate, b.gt_abstain_rate, b.coverage) == pytest.approx((1 / 6, 1 / 6, 0.5))
    o = stats.per_criterion["o"]
    assert (o.n_total, o.n_covered, o.n_errored) == (6, 4, 0)
    assert stats.coverage_stats.n_total == 18 and stats.coverage_stats.n_covered == 3 + 4 + 6
    assert stats.coverage_stats.error_rate == pytest.approx(1 / 18)


def test_coverage_counts_failed_items_and_follows_the_modes() -> None:
    res, ds = make_run([BIN, NOM], [["MET", "red"], ["UNMET", "blue"], ["MET", "green"]],
                       [["MET", "red"], None, ["CANNOT_ASSESS", "green"]])
    stats = abstention_stats(res, ds)
    assert stats.per_criterion["b"] == CoverageStats.from_counts(3, 1, 1, 0, 1)
    assert stats.per_criterion["n"] == CoverageStats.from_counts(3, 2, 0, 0, 1)
    excluded = typed_per_criterion(compute_metrics(res, ds), stats)
    assert excluded[0].coverage_stats == stats.per_criterion["b"]
    assert excluded[0].n_samples == stats.per_criterion["b"].n_covered
    as_unmet = typed_per_criterion(compute_metrics(res, ds, cannot_assess="as_unmet"), stats)
    assert all(v.coverage_stats is None for v in as_unmet)
    assert CoverageStats.from_counts(0, 0, 0, 0, 0).coverage is None
    with pytest.raises(InputError):
        CoverageStats.from_counts(2, 3, 0, 0, 0)


def test_dichotomy_kappa_degenerate_is_none() -> None:
    assert NAStats.from_decisions([False, False], [False, False]).na_kappa is None
    assert NAStats.from_decisions([], []).na_kappa is None
    with pytest.raises(InputError, match="length"):
        CannotAssessStats.from_decisions([True], [])


# ---- pooled rubric points (per-item rubrics) -------------------------------------------------------------


def _per_item_run(items: list[tuple[list[Criterion], list[str], list[str | None]]]) -> tuple[EvalResult, RubricDataset]:
    dataset = RubricDataset(prompt="q", rubric=None, items=[
        DataItem(submission=f"s{i}", rubric=Rubric(crit), ground_truth=truth)
        for i, (crit, truth, _) in enumerate(items)])
    results = []
    for i, (crit, _, final) in enumerate(items):
        report = EnsembleEvaluationReport(score=0.5, report=[_cr(c, f, {}) for c, f in zip(crit, final, strict=True)])
        results.append(ItemResult(item_idx=i, item=dataset[i], report=report, duration_seconds=0.0, item_id=f"i{i}"))
    now = datetime(2025, 1, 1)
    run = EvalResult(item_results=results, total_items=len(results), successful_items=len(results), failed_items=0,
                     total_token_usage=None, total_completion_cost=None,
                     timing_stats=EvalTimingStats(0, 0, 0, 0, 0, 0, 0, 0), started_at=now, completed_at=now)
    return run, dataset


def test_pooled_scale_metrics_over_heterogeneous_rubrics() -> None:
    a = Criterion(weight=1.0, requirement="cites a source")
    b = Criterion(weight=1.0, requirement="no errors")
    run, ds = _per_item_run([
        ([a, ORD], ["MET", "L3"], ["MET", "L2"]),
        ([b], ["UNMET"], ["MET"]),
        ([a, b, NOM], ["MET", "UNMET", "red"], ["UNMET", "UNMET", "green"]),
        ([b, ORD], ["CANNOT_ASSESS", "L1"], ["MET", "NA"]),
        ([a, b], ["MET", "MET"], ["MET", None]),
    ])
    binary, ordinal, nominal = pooled_scale_metrics(run, ds)
    y, p = [1, 0, 1, 0, 1], [1, 1, 0, 0, 1]
    assert binary.scale_type == "binary" and binary.n_points == 5 and binary.n_gt_abstain == 1
    assert binary.exact_accuracy == pytest.approx(3 / 5)
    assert binary.kappa == pytest.approx(cohen_kappa_score(y, p))
    assert binary.phi == pytest.approx(matthews_corrcoef(y, p))
    assert binary.confusion_matrix.matrix == confusion_matrix(y, p, labels=[1, 0]).tolist()  # type: ignore[union-attr]
    assert binary.value_rmse == pytest.approx(np.sqrt(2 / 5)) and binary.value_mae == pytest.approx(2 / 5)
    assert (ordinal.n_points, ordinal.n_abstain, ordinal.exact_accuracy) == (1, 1, 0.0)
    assert ordinal.value_mae == pytest.approx(1 / 3) and ordinal.value_spearman is None
    assert ordinal.kappa is None and ordinal.confusion_matrix is None
    assert (nominal.n_points, nominal.value_mae) == (1, pytest.approx(0.5))
