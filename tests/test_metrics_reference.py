"""Every metric against scikit-learn / scipy / krippendorff on randomised inputs (fixed seeds)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import (
    accuracy_score,
    brier_score_loss,
    cohen_kappa_score,
    confusion_matrix,
    log_loss,
    precision_recall_fscore_support,
    roc_auc_score,
)
from test_metrics_support import BIN, NOM, ORD, make_run

from autorubric_local.metrics import (
    compute_metrics,
    earth_movers_distance,
    ks_test,
    systematic_bias,
    wasserstein_distance,
)
from autorubric_local.metrics.agreement import confusion_counts, kappa_from_confusion
from autorubric_local.metrics.bootstrap import point_figures
from autorubric_local.metrics.calibration import calibration
from autorubric_local.metrics.extract import align

BL = ["MET", "UNMET", "CANNOT_ASSESS"]
OL = ["L0", "L1", "L2", "L3", "NA"]
NL = ["red", "green", "blue"]
N = 40


def _row(rng: np.random.Generator) -> list[str]:
    return [str(rng.choice(BL, p=[0.5, 0.4, 0.1])), str(rng.choice(OL, p=[.2, .2, .25, .25, .1])),
            str(rng.choice(NL))]


def _run(seed: int, judges: int = 3):
    rng = np.random.default_rng(seed)
    truth = [_row(rng) for _ in range(N)]
    final = [_row(rng) for _ in range(N)]
    votes = {f"j{k}": [_row(rng) for _ in range(N)] for k in range(judges)}
    p_met = [[float(rng.random()), None, None] for _ in range(N)]
    return truth, final, votes, p_met, make_run([BIN, ORD, NOM], truth, final, votes, p_met)


def _ca(h: str, j: str, mode: str) -> tuple[str, str] | None:
    ca = "CANNOT_ASSESS"
    if mode == "exclude":
        return None if ca in (h, j) else (h, j)
    if mode == "as_unmet":
        return ("UNMET" if h == ca else h), ("UNMET" if j == ca else j)
    return h, j


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mode", ["exclude", "as_category", "as_unmet"])
def test_binary_criterion_matches_sklearn(seed: int, mode: str) -> None:
    truth, final, _, _, (res, ds) = _run(seed)
    m = compute_metrics(res, ds, cannot_assess=mode)
    pairs = [p for p in (_ca(t[0], f[0], mode) for t, f in zip(truth, final)) if p]
    h, j = zip(*pairs)
    c = m.per_criterion[0]
    labels = ["UNMET", "MET"] + (["CANNOT_ASSESS"] if mode == "as_category" else [])
    assert c.labels == labels and c.support == len(h)
    assert c.accuracy == pytest.approx(accuracy_score(h, j))
    assert c.kappa == pytest.approx(cohen_kappa_score(h, j, labels=labels))
    assert c.confusion_matrix == confusion_matrix(h, j, labels=labels).tolist()
    p, r, f, _ = precision_recall_fscore_support(h, j, labels=["MET"], average=None)
    assert (c.precision, c.recall, c.f1) == pytest.approx((p[0], r[0], f[0]))
    assert m.criterion_precision == pytest.approx(p[0])  # only one binary criterion


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ordinal_criterion_matches_sklearn_and_scipy(seed: int) -> None:
    truth, final, _, _, (res, ds) = _run(seed)
    c = compute_metrics(res, ds).per_criterion[1]
    pairs = [(int(t[1][1]), int(f[1][1])) for t, f in zip(truth, final) if "NA" not in (t[1], f[1])]
    h, j = map(np.array, zip(*pairs))
    assert c.accuracy == pytest.approx(accuracy_score(h, j))
    assert c.kappa == pytest.approx(cohen_kappa_score(h, j, labels=[0, 1, 2, 3]))
    assert c.weighted_kappa == pytest.approx(
        cohen_kappa_score(h, j, labels=[0, 1, 2, 3], weights="quadratic"))
    assert c.adjacent_accuracy == pytest.approx(np.mean(np.abs(h - j) <= 1))
    assert c.spearman.coefficient == pytest.approx(stats.spearmanr(j / 3, h / 3)[0])
    assert c.kendall.coefficient == pytest.approx(stats.kendalltau(j / 3, h / 3)[0])
    assert c.kendall.p_value == pytest.approx(stats.kendalltau(j / 3, h / 3)[1])
    assert c.rmse == pytest.approx(np.sqrt(np.mean((j / 3 - h / 3) ** 2)))
    assert c.mae == pytest.approx(np.mean(np.abs(j / 3 - h / 3)))
    assert c.confusion_matrix == confusion_matrix(h, j, labels=[0, 1, 2, 3]).tolist()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nominal_criterion_matches_sklearn(seed: int) -> None:
    truth, final, _, _, (res, ds) = _run(seed)
    c = compute_metrics(res, ds).per_criterion[2]
    h = [t[2] for t in truth]
    j = [f[2] for f in final]
    assert c.kappa == pytest.approx(cohen_kappa_score(h, j, labels=NL))
    assert c.confusion_matrix == confusion_matrix(h, j, labels=NL).tolist()
    p, r, f, s = precision_recall_fscore_support(h, j, labels=NL, average=None, zero_division=0)
    for k, label in enumerate(NL):
        om = c.per_option[label]
        assert (om.precision or 0, om.recall or 0, om.f1 or 0) == pytest.approx((p[k], r[k], f[k]))
        assert om.support == s[k]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_score_level_matches_scipy(seed: int) -> None:
    *_, (res, ds) = _run(seed)
    m = compute_metrics(res, ds)
    data = align(res, ds)
    js, hs = np.array(data.judge_score), np.array(data.human_score)
    assert hs.tolist() == [ds.compute_weighted_score(ds[i].ground_truth) for i in range(N)]
    assert m.score_rmse == pytest.approx(np.sqrt(np.mean((js - hs) ** 2)))
    assert m.score_mae == pytest.approx(np.mean(np.abs(js - hs)))
    assert m.score_pearson.coefficient == pytest.approx(stats.pearsonr(js, hs)[0])
    assert m.score_spearman.coefficient == pytest.approx(stats.spearmanr(js, hs)[0])
    assert m.score_kendall.coefficient == pytest.approx(stats.kendalltau(js, hs)[0])
    assert m.score_emd.distance == pytest.approx(stats.wasserstein_distance(js, hs))
    assert m.score_ks.statistic == pytest.approx(stats.ks_2samp(js, hs).statistic)
    assert m.bias.p_value == pytest.approx(stats.ttest_rel(js, hs).pvalue)


@pytest.mark.parametrize("seed", range(5))
def test_distribution_functions_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.random(25), rng.random(31)
    assert wasserstein_distance(a, b) == pytest.approx(stats.wasserstein_distance(a, b))
    assert earth_movers_distance(a, b).distance == pytest.approx(stats.wasserstein_distance(a, b))
    ks = ks_test(a, b)
    ref = stats.ks_2samp(a, b)
    assert (ks.statistic, ks.p_value) == pytest.approx((ref.statistic, ref.pvalue))
    x, y = rng.random(20), rng.random(20)
    bias = systematic_bias(x, y, 0.9)
    ref_t = stats.ttest_rel(x, y)
    assert (bias.t_statistic, bias.p_value) == pytest.approx((ref_t.statistic, ref_t.pvalue))
    d = x - y
    lo, hi = stats.t.interval(0.9, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert (bias.ci.lower, bias.ci.upper) == pytest.approx((lo, hi))


@pytest.mark.parametrize("seed", range(5))
def test_calibration_matches_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 50)
    p = np.clip(y * 0.4 + rng.random(50) * 0.6, 0, 1)
    c = calibration(y, p)
    assert c.brier_score == pytest.approx(brier_score_loss(y, p))
    assert c.log_loss == pytest.approx(log_loss(y, p))
    assert c.auroc == pytest.approx(roc_auc_score(y, p))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_confusion_kappa_matches_sklearn(seed: int, weights: str | None) -> None:
    rng = np.random.default_rng(seed)
    h, j = rng.integers(0, 4, 60), rng.integers(0, 4, 60)
    cm = confusion_counts(h, j, 4)
    assert kappa_from_confusion(cm, weights) == pytest.approx(
        cohen_kappa_score(h, j, labels=range(4), weights=weights))
    w = rng.integers(0, 3, 60).astype(float)  # multiplicities = repeated samples
    cmw = confusion_counts(h, j, 4, w)
    rh, rj = np.repeat(h, w.astype(int)), np.repeat(j, w.astype(int))
    assert kappa_from_confusion(cmw, weights) == pytest.approx(
        cohen_kappa_score(rh, rj, labels=range(4), weights=weights))


@pytest.mark.parametrize("seed", [0, 1])
def test_interjudge_alpha_matches_krippendorff(seed: int) -> None:
    _, _, votes, _, (res, ds) = _run(seed)
    m = compute_metrics(res, ds)
    codes = {"UNMET": 0, "MET": 1}
    data = np.array([[codes.get(v[i][0], np.nan) for i in range(N)] for v in votes.values()])
    ij = m.inter_judge.per_criterion
    assert ij[0].alpha == pytest.approx(krippendorff.alpha(reliability_data=data,
                                                           level_of_measurement="nominal"))
    ordinal = np.array([[np.nan if v[i][1] == "NA" else int(v[i][1][1]) for i in range(N)]
                        for v in votes.values()])
    assert ij[1].alpha == pytest.approx(krippendorff.alpha(reliability_data=ordinal,
                                                           level_of_measurement="ordinal"))


@pytest.mark.parametrize("seed", [0, 1])
def test_bootstrap_point_figures_equal_the_metrics(seed: int) -> None:
    *_, (res, ds) = _run(seed)
    m = compute_metrics(res, ds)
    head, per = point_figures(align(res, ds), "exclude", "exclude")  # type: ignore[arg-type]
    for name in ("criterion_accuracy", "criterion_precision", "criterion_recall", "criterion_f1",
                 "mean_kappa", "score_rmse", "score_mae"):
        assert head[name] == pytest.approx(getattr(m, name))
    assert head["score_spearman"] == pytest.approx(m.score_spearman.coefficient)
    assert head["bias"] == pytest.approx(m.bias.mean_bias)
    for c in m.per_criterion:
        assert per[c.name]["accuracy"] == pytest.approx(c.accuracy)
        assert per[c.name]["kappa"] == pytest.approx(c.kappa)
    assert per["o"]["weighted_kappa"] == pytest.approx(m.per_criterion[1].weighted_kappa)
    assert per["o"]["adjacent_accuracy"] == pytest.approx(m.per_criterion[1].adjacent_accuracy)


def test_per_judge_matches_direct_computation() -> None:
    truth, _, votes, _, (res, ds) = _run(3)
    m = compute_metrics(res, ds, per_judge=True)
    for jid, v in votes.items():
        pairs = [p for p in (_ca(t[0], x[0], "exclude") for t, x in zip(truth, v)) if p]
        h, j = zip(*pairs)
        assert m.per_judge[jid].per_criterion[0].kappa == pytest.approx(
            cohen_kappa_score(h, j, labels=["UNMET", "MET"]))


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("mode", ["exclude", "as_unmet", "as_category"])
def test_micro_kappa_and_judge_confusion_against_sklearn(seed: int, mode: str) -> None:
    from autorubric_local.core.types import Criterion

    second = Criterion(name="b2", weight=1.0, requirement="another binary")
    rng = np.random.default_rng(seed)
    truth = [[str(rng.choice(BL, p=[.5, .4, .1])) for _ in range(2)] for _ in range(N)]
    final = [[str(rng.choice(BL, p=[.5, .4, .1])) for _ in range(2)] for _ in range(N)]
    votes = {"j0": final, "j1": [[str(rng.choice(BL)) for _ in range(2)] for _ in range(N)]}
    m = compute_metrics(*make_run([BIN, second], truth, final, votes), cannot_assess=mode, per_judge=True)
    pairs = [p for t, f in zip(truth, final, strict=True) for p in map(_ca, t, f, [mode] * 2) if p is not None]
    h, j = zip(*pairs, strict=True)
    assert m.micro_kappa == pytest.approx(cohen_kappa_score(h, j))  # pooled over both criteria
    for jid, jv in votes.items():
        flat_t = [v for row in truth for v in row]
        flat_j = [v for row in jv for v in row]
        expected = confusion_matrix(flat_t, flat_j, labels=BL).tolist()  # before the mode
        assert m.per_judge[jid].confusion_matrix.matrix == expected  # type: ignore[union-attr,index]
        assert m.per_judge[jid].n_pairs == sum(c.support for c in m.per_judge[jid].per_criterion)  # type: ignore[index]
