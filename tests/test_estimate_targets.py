"""What the estimates estimate: targets built from a run's reports and labels, hand-computed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_metrics_support import BIN, ORD, make_run

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion
from autorubric_local.estimates.targets import build_targets, soft_score

NEG = Criterion(name="neg", weight=-1.0, requirement="a penalty")


def by_name(targets):  # type: ignore[no-untyped-def]
    return {t.name: t for t in targets}


def test_soft_score_follows_autorubric_formula() -> None:
    # raw = 2*1 + 1*0.5 - 1*1 = 1.5; positive weights 3 -> 0.5
    assert soft_score([2.0, 1.0, -1.0], [1.0, 0.5, 1.0]) == pytest.approx(0.5)
    # clamped at 0: raw = 1*0.2 - 3*1 < 0
    assert soft_score([1.0, -3.0], [0.2, 1.0]) == 0.0
    # penalty-only rubric: 1 + raw / N = 1 - 1/2
    assert soft_score([-1.0, -1.0], [1.0, 0.0]) == pytest.approx(0.5)
    # a nan (skipped) criterion leaves numerator and denominator: 1*0.4 / 1
    assert soft_score([1.0, 2.0], [0.4, math.nan]) == pytest.approx(0.4)
    assert soft_score([2.0, -1.0], [0.5, 1.0], normalize=False) == pytest.approx(0.0)
    assert soft_score([0.0], [1.0]) == 0.0


def test_binary_share_reads_p_met_and_the_cannot_assess_modes() -> None:
    res, ds = make_run([BIN], [["MET"], ["UNMET"], ["MET"], ["CANNOT_ASSESS"], None],
                       [["MET"], ["MET"], ["MET"], ["UNMET"], ["UNMET"]],
                       p_met=[[0.8], [0.6], [0.9], [0.1], [0.3]])
    labels = {f"item-{i}": ds[i].ground_truth for i in range(5) if ds[i].ground_truth is not None}
    t = by_name(build_targets(res, ds, labels))["b"]
    assert t.kind == "share_met" and t.item_ids == tuple(f"item-{i}" for i in range(5))
    np.testing.assert_allclose(t.f, [0.8, 0.6, 0.9, 0.1, 0.3])
    np.testing.assert_array_equal(t.y, [1.0, 0.0, 1.0, np.nan, np.nan])  # CANNOT_ASSESS excluded
    np.testing.assert_array_equal(t.verdict, [1.0, 1.0, 1.0, 0.0, 0.0])
    as_unmet = by_name(build_targets(res, ds, labels, cannot_assess="as_unmet"))["b"]
    np.testing.assert_array_equal(as_unmet.y, [1.0, 0.0, 1.0, 0.0, np.nan])
    with pytest.raises(InputError, match="as_category"):
        build_targets(res, ds, labels, cannot_assess="as_category")


def test_multi_choice_mean_value_option_shares_and_score() -> None:
    # ORD: options L0..L3 with values k/3, plus NA. No label probabilities: the final verdict
    # counts one-hot.
    res, ds = make_run([BIN, ORD], [["MET", "L3"], ["UNMET", "NA"], ["MET", "L0"]],
                       [["MET", "L2"], ["UNMET", "L1"], ["MET", "L3"]],
                       p_met=[[0.7, None], [0.2, None], [0.9, None]])
    labels = {f"item-{i}": ds[i].ground_truth for i in range(3)}
    t = by_name(build_targets(res, ds, labels))
    np.testing.assert_allclose(t["o"].f, [2 / 3, 1 / 3, 1.0])
    np.testing.assert_array_equal(t["o"].y, [1.0, np.nan, 0.0])  # NA has no value
    np.testing.assert_allclose(t["o=L2"].f, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(t["o=NA"].y, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(t["o=L3"].y, [1.0, 0.0, 0.0])
    # score: judge (p_met + value) / 2; human by the rubric's own formula (NA skipped: SKIP)
    np.testing.assert_allclose(t["score"].f, [(0.7 + 2 / 3) / 2, (0.2 + 1 / 3) / 2, (0.9 + 1.0) / 2])
    np.testing.assert_allclose(t["score"].y, [1.0, 0.0, 0.5])


def test_a_failed_item_is_left_out_and_partial_labels_leave_the_score_unlabelled() -> None:
    res, ds = make_run([BIN, NEG], [["MET", "MET"], ["UNMET", "UNMET"], ["MET", "UNMET"]],
                       [["MET", "MET"], None, ["MET", "UNMET"]],
                       p_met=[[0.6, 0.5], [None, None], [0.8, 0.25]])
    labels = {"item-0": ["MET", None], "item-2": ["MET", "UNMET"]}
    t = by_name(build_targets(res, ds, labels))
    assert t["b"].item_ids == ("item-0", "item-2") and t["b"].n_left_out == 1
    np.testing.assert_array_equal(t["neg"].y, [np.nan, 0.0])
    # score: (1*0.6 - 1*0.5) / 1 and (0.8 - 0.25) / 1; item-0 is not fully labelled
    np.testing.assert_allclose(t["score"].f, [0.1, 0.55])
    np.testing.assert_array_equal(t["score"].y, [np.nan, 1.0])
    assert t["score"].n_left_out == 1


def test_labels_of_the_wrong_length_are_refused() -> None:
    res, ds = make_run([BIN], [["MET"]], [["MET"]], p_met=[[0.5]])
    with pytest.raises(InputError, match="item 'item-0': 2 label"):
        build_targets(res, ds, {"item-0": ["MET", "MET"]})


def _target(y, f, excluded=None, verdict=None):  # type: ignore[no-untyped-def]
    from autorubric_local.estimates.targets import TargetData

    n = len(f)
    return TargetData("t", "share_met", tuple(f"i{k}" for k in range(n)), np.asarray(f, float), np.asarray(y, float),
                      None if verdict is None else np.asarray(verdict, float), 0,
                      np.zeros(n, bool) if excluded is None else np.asarray(excluded, bool))


def rows(targets, **kwargs):  # type: ignore[no-untyped-def]
    from autorubric_local.estimates.api import estimate_targets

    return {r.method: r for r in estimate_targets(targets, **kwargs)}


def test_every_item_labelled_gives_the_labels_alone_instead_of_failing() -> None:
    y = [1, 0, 1, 1, 0, 1]
    got = rows([_target(y, [0.9, 0.2, 0.8, 0.7, 0.1, 0.6], verdict=[1, 0, 1, 1, 0, 1])])
    assert got["ppi"].estimate == pytest.approx(4 / 6) and got["ppi"].lam == 0.0
    assert got["ppi"].ci_low == got["classical"].ci_low and "every item is labelled" in got["ppi"].note
    assert math.isnan(got["rogan_gladen"].estimate) and got["rogan_gladen"].ci_low is None


def test_excluded_labels_make_ppi_undefined_but_keep_classical() -> None:
    y = [1, np.nan, 0, 1, np.nan, np.nan, np.nan]
    excluded = [False, True, False, False, False, False, False]  # item 1: a human CANNOT_ASSESS
    got = rows([_target(y, [0.9, 0.9, 0.2, 0.8, 0.5, 0.4, 0.3], excluded, verdict=[1, 1, 0, 1, 0, 0, 0])])
    assert got["classical"].estimate == pytest.approx(2 / 3) and "left out" in got["classical"].note
    for method in ("ppi", "rogan_gladen"):
        assert math.isnan(got[method].estimate) and got[method].ci_low is None
        assert "as_unmet" in got[method].note


def test_a_drawn_item_without_a_value_makes_the_weighted_estimates_undefined() -> None:
    y = [1, np.nan, 0, 1, np.nan]
    design = {"i0": (0.5, True), "i1": (0.5, True), "i2": (0.5, True), "i3": (0.5, True), "i4": (0.5, False)}
    got = rows([_target(y, [0.9, 0.8, 0.2, 0.7, 0.5])], design=design, sampling="active (selection 1)")
    for method in ("classical", "ppi"):
        assert math.isnan(got[method].estimate) and "1 drawn item(s) have no value" in got[method].note
    design["i1"] = (0.5, False)
    got = rows([_target(y, [0.9, 0.8, 0.2, 0.7, 0.5])], design=design, sampling="active (selection 1)")
    assert got["ppi"].ci_low is not None and got["ppi"].n_labelled == 3


def test_a_one_hot_cannot_assess_keeps_the_item_with_a_neutral_prediction() -> None:
    res, ds = make_run([BIN], [["MET"], ["UNMET"]], [["MET"], ["CANNOT_ASSESS"]])
    t = by_name(build_targets(res, ds, {"item-0": ["MET"], "item-1": ["UNMET"]}))["b"]
    np.testing.assert_allclose(t.f, [1.0, 0.5])
    np.testing.assert_array_equal(t.verdict, [1.0, 0.0])  # the judge did not say MET
    np.testing.assert_array_equal(t.y, [1.0, 0.0])
