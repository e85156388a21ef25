"""Hand-computed scores for every CANNOT_ASSESS strategy, criterion kind and weight sign.

Conventions in the comments: ``raw`` is the weighted sum, ``P`` the sum of positive
weights of the scored criteria, ``N`` the sum of |negative weights|; normalised score is
``raw / P`` (P > 0), ``1 + raw / N`` (P == 0 < N) or 0, clamped to [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from autorubric_local.core.reports import (
    CriterionReport,
    EnsembleCriterionReport,
    JudgeVote,
)
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.scoring import (
    criterion_contribution,
    raw_and_normalized,
    score_reports,
    worst_case_contribution,
)
from autorubric_local.core.types import (
    AggregatedMultiChoiceVerdict,
    CannotAssessConfig,
    CannotAssessStrategy,
    Criterion,
    CriterionOption,
    CriterionVerdict,
    MultiChoiceVerdict,
)

SKIP, ZERO, PARTIAL, FAIL = (
    CannotAssessStrategy.SKIP,
    CannotAssessStrategy.ZERO,
    CannotAssessStrategy.PARTIAL,
    CannotAssessStrategy.FAIL,
)

# Multi-choice options: scored values 0.25 / 0.5 / 0.75, plus an NA option.
# Worst scored option: "low" (0.25) for positive weight, "high" (0.75) for negative weight.
OPTIONS = [
    CriterionOption(label="low", value=0.25),
    CriterionOption(label="mid", value=0.5),
    CriterionOption(label="high", value=0.75),
    CriterionOption(label="n/a", value=0.0, na=True),
]


def binary(weight: float, verdict: str | None, error: str | None = None) -> CriterionReport:
    return CriterionReport(
        weight=weight,
        requirement=f"binary {weight}",
        verdict=CriterionVerdict(verdict) if verdict is not None else None,
        reason="",
        error=error,
    )


def mc_criterion(weight: float) -> Criterion:
    return Criterion(weight=weight, requirement=f"mc {weight}", options=OPTIONS)


def mc(weight: float, label: str | None, error: str | None = None) -> CriterionReport:
    criterion = mc_criterion(weight)
    if label is None:  # abstain with no option selected
        verdict = MultiChoiceVerdict(value=0.0, na=True)
    else:
        i = criterion.find_option_by_label(label)
        o = OPTIONS[i]
        verdict = MultiChoiceVerdict(selected_index=i, selected_label=o.label, value=o.value,
                                     na=o.na)
    return CriterionReport.from_criterion(
        criterion, multi_choice_verdict=verdict, reason="", error=error
    )


ANCHOR = binary(10, "MET")  # contributes 10, P += 10


@dataclass(frozen=True)
class Case:
    id: str
    reports: list[CriterionReport]
    strategy: CannotAssessStrategy
    raw: float
    normalized: float
    partial_credit: float = 0.5


CASES = [
    # ---- binary, positive weight, CANNOT_ASSESS (w = 5) next to the anchor
    Case("bin+ SKIP", [ANCHOR, binary(5, "CANNOT_ASSESS")], SKIP, 10, 1.0),  # 10/10
    Case("bin+ ZERO", [ANCHOR, binary(5, "CANNOT_ASSESS")], ZERO, 10, 10 / 15),  # 10/15
    Case("bin+ PARTIAL .5", [ANCHOR, binary(5, "CANNOT_ASSESS")], PARTIAL, 12.5,
         12.5 / 15),  # 10 + 0.5*5 = 12.5; /15 = 0.8333
    Case("bin+ PARTIAL .3", [ANCHOR, binary(5, "CANNOT_ASSESS")], PARTIAL, 11.5,
         11.5 / 15, 0.3),  # 10 + 0.3*5 = 11.5; /15 = 0.7667
    Case("bin+ PARTIAL 0", [ANCHOR, binary(5, "CANNOT_ASSESS")], PARTIAL, 10, 10 / 15, 0.0),
    Case("bin+ PARTIAL 1", [ANCHOR, binary(5, "CANNOT_ASSESS")], PARTIAL, 15, 1.0, 1.0),
    Case("bin+ FAIL", [ANCHOR, binary(5, "CANNOT_ASSESS")], FAIL, 10, 10 / 15),  # UNMET: 0
    # ---- binary, negative weight, CANNOT_ASSESS (w = -4): never in the denominator
    Case("bin- SKIP", [ANCHOR, binary(-4, "CANNOT_ASSESS")], SKIP, 10, 1.0),
    Case("bin- ZERO", [ANCHOR, binary(-4, "CANNOT_ASSESS")], ZERO, 10, 1.0),  # 0; 10/10
    Case("bin- PARTIAL", [ANCHOR, binary(-4, "CANNOT_ASSESS")], PARTIAL, 10, 1.0),  # no partial
    Case("bin- FAIL", [ANCHOR, binary(-4, "CANNOT_ASSESS")], FAIL, 6, 0.6),  # MET: 10-4=6; /10
    # ---- binary, genuine verdicts
    Case("bin+ UNMET", [ANCHOR, binary(5, "UNMET")], FAIL, 10, 10 / 15),
    Case("bin- MET", [ANCHOR, binary(-4, "MET")], SKIP, 6, 0.6),  # 10-4 = 6; /10
    Case("bin- UNMET", [ANCHOR, binary(-4, "UNMET")], SKIP, 10, 1.0),
    # ---- multi-choice, positive weight, NA option (w = 8)
    Case("mc+ SKIP", [ANCHOR, mc(8, "n/a")], SKIP, 10, 1.0),
    Case("mc+ ZERO", [ANCHOR, mc(8, "n/a")], ZERO, 10, 10 / 18),  # 10/18 = 0.5556
    Case("mc+ PARTIAL .5", [ANCHOR, mc(8, "n/a")], PARTIAL, 14, 14 / 18),  # 10 + 4 = 14
    Case("mc+ PARTIAL .25", [ANCHOR, mc(8, "n/a")], PARTIAL, 12, 12 / 18, 0.25),  # 10 + 2
    Case("mc+ FAIL", [ANCHOR, mc(8, "n/a")], FAIL, 12, 12 / 18),  # worst "low": 0.25*8 = 2
    Case("mc+ abstain no option FAIL", [ANCHOR, mc(8, None)], FAIL, 12, 12 / 18),
    Case("mc+ abstain no option SKIP", [ANCHOR, mc(8, None)], SKIP, 10, 1.0),
    # ---- multi-choice, negative weight, NA option (w = -8)
    Case("mc- SKIP", [ANCHOR, mc(-8, "n/a")], SKIP, 10, 1.0),
    Case("mc- ZERO", [ANCHOR, mc(-8, "n/a")], ZERO, 10, 1.0),
    Case("mc- PARTIAL", [ANCHOR, mc(-8, "n/a")], PARTIAL, 10, 1.0),
    Case("mc- FAIL", [ANCHOR, mc(-8, "n/a")], FAIL, 4, 0.4),  # worst "high": 10 - 0.75*8 = 4
    # ---- multi-choice, genuine selections
    Case("mc+ mid", [ANCHOR, mc(8, "mid")], SKIP, 14, 14 / 18),  # 10 + 0.5*8 = 14
    Case("mc+ high", [ANCHOR, mc(8, "high")], SKIP, 16, 16 / 18),  # 10 + 6 = 16
    Case("mc- low", [ANCHOR, mc(-8, "low")], SKIP, 8, 0.8),  # 10 - 2 = 8; /10
    # ---- clamping: raw below zero
    Case("clamp low", [binary(10, "UNMET"), binary(-4, "MET")], SKIP, -4, 0.0),  # -4/10 -> 0
    Case("clamp low mc", [binary(2, "MET"), mc(-8, "high")], SKIP, -4, 0.0),  # 2 - 6 = -4; /2
    # ---- zero denominator and penalty-only rubrics
    Case("empty", [], SKIP, 0, 0.0),
    Case("all skipped", [binary(5, "CANNOT_ASSESS"), mc(8, "n/a")], SKIP, 0, 0.0),
    Case("zero weight only", [binary(0, "MET"), binary(0, "UNMET")], FAIL, 0, 0.0),
    Case("zero weight ignored", [ANCHOR, binary(0, "MET")], SKIP, 10, 1.0),
    Case("negative only none apply", [binary(-4, "UNMET"), binary(-6, "UNMET")], SKIP, 0,
         1.0),  # 1 + 0/10
    Case("negative only some apply", [binary(-4, "MET"), binary(-6, "UNMET")], SKIP, -4,
         0.6),  # 1 + (-4)/10
    Case("negative only all apply", [binary(-4, "MET"), binary(-6, "MET")], SKIP, -10, 0.0),
    Case("negative only mc", [mc(-8, "mid"), binary(-2, "UNMET")], SKIP, -4,
         0.6),  # 1 + (-0.5*8)/10
    Case("positive skipped, negative applies",
         [binary(5, "CANNOT_ASSESS"), binary(-4, "MET")], SKIP, -4, 0.0),  # P=0: 1 + -4/4
    Case("positive skipped, negative clear",
         [binary(5, "CANNOT_ASSESS"), binary(-4, "UNMET")], SKIP, 0, 1.0),  # 1 + 0/4
    Case("negative CA under FAIL, negative only", [binary(-4, "CANNOT_ASSESS")], FAIL, -4,
         0.0),  # 1 + -4/4
    Case("negative CA under ZERO, negative only", [binary(-4, "CANNOT_ASSESS")], ZERO, 0,
         1.0),  # 1 + 0/4
    # ---- failed judge calls: worst case whatever the verdict and the strategy
    Case("err bin+ claims MET", [ANCHOR, binary(5, "MET", error="parse: x")], SKIP, 10,
         10 / 15),  # 0 for the errored criterion, still in P
    Case("err bin+ CA under SKIP", [ANCHOR, binary(5, "CANNOT_ASSESS", error="infrastructure: t")],
         SKIP, 10, 10 / 15),  # not skipped: an error is not an abstention
    Case("err bin+ CA under PARTIAL",
         [ANCHOR, binary(5, "CANNOT_ASSESS", error="infrastructure: t")], PARTIAL, 10, 10 / 15),
    Case("err bin+ no verdict", [ANCHOR, binary(5, None, error="unknown: x")], SKIP, 10, 10 / 15),
    Case("err bin- claims UNMET", [ANCHOR, binary(-4, "UNMET", error="parse: x")], SKIP, 6,
         0.6),  # MET: 10 - 4
    Case("err bin- no verdict", [ANCHOR, binary(-4, None, error="parse: x")], ZERO, 6, 0.6),
    Case("err mc+ claims high", [ANCHOR, mc(8, "high", error="parse: x")], SKIP, 12,
         12 / 18),  # worst "low": 0.25*8 = 2
    Case("err mc- NA under SKIP", [ANCHOR, mc(-8, "n/a", error="parse: x")], SKIP, 4,
         0.4),  # worst "high": 10 - 6
    Case("err only", [binary(5, "MET", error="parse: x")], SKIP, 0, 0.0),  # 0/5
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_score_table(case: Case) -> None:
    config = CannotAssessConfig(strategy=case.strategy, partial_credit=case.partial_credit)
    assert score_reports(case.reports, config) == pytest.approx(case.normalized)
    assert score_reports(case.reports, config, normalize=False) == pytest.approx(case.raw)
    assert raw_and_normalized(case.reports, config) == (
        pytest.approx(case.raw),
        pytest.approx(case.normalized),
    )


def test_score_table_covers_every_strategy_kind_and_sign() -> None:
    # an abstention case is named "<kind> <STRATEGY> ..." and runs under that strategy
    covered = {
        (c.id.split()[0], c.strategy) for c in CASES if c.id.split()[1:2] == [c.strategy.name]
    }
    for kind in ("bin+", "bin-", "mc+", "mc-"):
        for strategy in CannotAssessStrategy:
            assert (kind, strategy) in covered


def test_criterion_contribution_and_worst_case() -> None:
    skip = CannotAssessConfig()
    assert criterion_contribution(binary(5, "CANNOT_ASSESS"), skip) is None
    assert criterion_contribution(binary(5, "MET"), skip) == 5
    assert criterion_contribution(mc(8, "mid"), skip) == 4
    assert worst_case_contribution(Criterion(weight=7, requirement="r")) == 0.0
    assert worst_case_contribution(Criterion(weight=-7, requirement="r")) == -7
    assert worst_case_contribution(mc_criterion(8)) == 2.0  # 0.25 * 8
    assert worst_case_contribution(mc_criterion(-8)) == -6.0  # 0.75 * -8


# ---------------------------------------------------------------- ensemble reports


def ensemble(report: CriterionReport, error: str | None = None) -> EnsembleCriterionReport:
    """An ensemble report with the same criterion and final verdict as ``report``."""
    criterion = Criterion(**{k: getattr(report, k) for k in Criterion.model_fields})
    mc_final = None
    if report.multi_choice_verdict is not None:
        v = report.multi_choice_verdict
        mc_final = AggregatedMultiChoiceVerdict(
            selected_index=v.selected_index, selected_label=v.selected_label, value=v.value,
            na=v.na, aggregated_value=v.value,
        )
    votes = []
    if report.verdict is not None:
        votes = [JudgeVote(judge_id="j", verdict=report.verdict, reason="", error=error)]
    return EnsembleCriterionReport(criterion=criterion, final_verdict=report.verdict,
                                   final_reason="", final_multi_choice_verdict=mc_final,
                                   votes=votes, error=error)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_ensemble_reports_score_like_single_reports(case: Case) -> None:
    config = CannotAssessConfig(strategy=case.strategy, partial_credit=case.partial_credit)
    converted = [ensemble(r, r.error) for r in case.reports]
    assert raw_and_normalized(converted, config) == (
        pytest.approx(case.raw),
        pytest.approx(case.normalized),
    )
    mixed = [c if i % 2 else r for i, (r, c) in enumerate(zip(case.reports, converted))]
    assert score_reports(mixed, config) == pytest.approx(case.normalized)


# ---------------------------------------------------------------- Rubric.compute_score

RUBRIC = Rubric(
    [
        Criterion(weight=10, requirement="anchor"),
        Criterion(weight=5, requirement="pos"),
        Criterion(weight=-4, requirement="neg"),
        mc_criterion(8),
        mc_criterion(-8),
    ]
)


@pytest.mark.parametrize(
    ("verdicts", "strategy", "partial", "raw", "normalized"),
    [
        # 10 + 5 + 0 + 0.5*8 - 0.25*8 = 17; P = 10 + 5 + 8 = 23
        (["MET", "MET", "UNMET", "mid", "low"], SKIP, 0.5, 17, 17 / 23),
        # 10 + [CA skipped] - 4 + [NA skipped] + 0 ... last "n/a" negative skipped
        (["MET", "CANNOT_ASSESS", "MET", "n/a", "n/a"], SKIP, 0.5, 6, 0.6),  # P = 10
        # ZERO: 10 + 0 - 4 + 0 + 0 = 6; P = 10 + 5 + 8 = 23
        (["MET", "CANNOT_ASSESS", "MET", "n/a", "n/a"], ZERO, 0.5, 6, 6 / 23),
        # PARTIAL .2: 10 + 1 - 4 + 1.6 + 0 = 8.6; P = 23
        (["MET", "CANNOT_ASSESS", "MET", "n/a", "n/a"], PARTIAL, 0.2, 8.6, 8.6 / 23),
        # FAIL: 10 + 0 - 4 + 2 - 6 = 2; P = 23
        (["MET", "CANNOT_ASSESS", "MET", "n/a", "n/a"], FAIL, 0.5, 2, 2 / 23),
        # everything bad: 0 + 0 - 4 + 0.25*8 - 0.75*8 = -8 -> clamp 0
        (["UNMET", "UNMET", "MET", "LOW", " High "], SKIP, 0.5, -8, 0.0),
    ],
)
def test_compute_score(
    verdicts: list[str], strategy: CannotAssessStrategy, partial: float, raw: float,
    normalized: float,
) -> None:
    assert RUBRIC.compute_score(verdicts, cannot_assess_strategy=strategy,
                                partial_credit=partial) == pytest.approx(normalized)
    assert RUBRIC.compute_score(verdicts, normalize=False, cannot_assess_strategy=strategy,
                                partial_credit=partial) == pytest.approx(raw)


def test_compute_score_accepts_enum_verdicts() -> None:
    verdicts = [CriterionVerdict.MET, CriterionVerdict.UNMET, CriterionVerdict.UNMET, "high",
                "low"]
    # 10 + 0 + 0 + 6 - 2 = 14; /23
    assert RUBRIC.compute_score(verdicts) == pytest.approx(14 / 23)


def test_compute_score_errors() -> None:
    with pytest.raises(ValueError, match="Expected 5 verdicts, got 2"):
        RUBRIC.compute_score(["MET", "MET"])
    with pytest.raises(
        ValueError,
        match=r"Invalid binary verdict 'met'. Must be 'MET', 'UNMET', or 'CANNOT_ASSESS'.",
    ):
        RUBRIC.compute_score(["met", "MET", "MET", "low", "low"])
    with pytest.raises(ValueError, match="Multi-choice criterion 'None' requires a label string, "
                                         "got CriterionVerdict"):
        RUBRIC.compute_score(["MET", "MET", "MET", CriterionVerdict.MET, "low"])
    with pytest.raises(ValueError, match="Label 'zzz' not found"):
        RUBRIC.compute_score(["MET", "MET", "MET", "zzz", "low"])
    with pytest.raises(ValueError, match="partial_credit"):
        RUBRIC.compute_score(["MET"] * 3 + ["low"] * 2, partial_credit=2.0)


# ---------------------------------------------------------------- properties

weights = st.one_of(st.just(0.0), st.floats(-20, 20, allow_nan=False).map(lambda w: round(w, 2)))


@st.composite
def report_lists(draw: st.DrawFn) -> list[CriterionReport]:
    n = draw(st.integers(0, 7))
    reports = []
    for _ in range(n):
        w = draw(weights)
        error = draw(st.sampled_from([None, None, None, "parse: x"]))
        if draw(st.booleans()):
            verdict = draw(st.sampled_from([None, "MET", "UNMET", "CANNOT_ASSESS"]))
            if verdict is None and error is None:
                verdict = "UNMET"
            reports.append(binary(w, verdict, error))
        else:
            reports.append(mc(w, draw(st.sampled_from(["low", "mid", "high", "n/a"])), error))
    return reports


configs = st.builds(
    CannotAssessConfig,
    strategy=st.sampled_from(list(CannotAssessStrategy)),
    partial_credit=st.floats(0, 1),
)


@settings(max_examples=examples(300), deadline=None)
@given(reports=report_lists(), config=configs, data=st.data())
def test_score_properties(reports: list[CriterionReport], config: CannotAssessConfig,
                          data: st.DataObject) -> None:
    raw, normalized = raw_and_normalized(reports, config)
    assert 0.0 <= normalized <= 1.0
    assert score_reports(reports, config, normalize=False) == raw
    contributions = [criterion_contribution(r, config) for r in reports]
    assert raw == pytest.approx(sum(c for c in contributions if c is not None))
    shuffled = data.draw(st.permutations(reports))
    raw2, normalized2 = raw_and_normalized(shuffled, config)
    assert raw2 == pytest.approx(raw, abs=1e-9)
    assert normalized2 == pytest.approx(normalized, abs=1e-9)


@settings(max_examples=examples(200), deadline=None)
@given(reports=report_lists(), config=configs)
def test_compute_score_agrees_with_score_reports(
    reports: list[CriterionReport], config: CannotAssessConfig
) -> None:
    genuine = [r for r in reports if r.error is None and (r.verdict or r.multi_choice_verdict)]
    genuine = [r for r in genuine if r.multi_choice_verdict is None
               or r.multi_choice_verdict.selected_label is not None]
    rubric = Rubric([Criterion(**{k: getattr(r, k) for k in Criterion.model_fields})
                     for r in genuine])
    verdicts = [r.verdict if r.verdict is not None else r.multi_choice_verdict.selected_label
                for r in genuine]  # type: ignore[union-attr]
    for normalize in (True, False):
        expected = score_reports(genuine, config, normalize)
        got = rubric.compute_score(verdicts, normalize, config.strategy, config.partial_credit)
        assert got == pytest.approx(expected)


@settings(max_examples=examples(200), deadline=None)
@given(reports=report_lists(), config=configs)
def test_fail_and_errors_take_the_worst_real_outcome(
    reports: list[CriterionReport], config: CannotAssessConfig
) -> None:
    # FAIL (for an abstention) and any failed call (under every strategy) contribute the
    # minimum over the outcomes a real judgment could have had: MET/UNMET for binary, the
    # non-NA options for multi-choice. (For multi-choice this can exceed ZERO's 0.)
    for report in reports:
        if report.is_binary:
            outcomes = [0.0, report.weight]
        else:
            outcomes = [o.value * report.weight for o in report.options or [] if not o.na]
        worst = min(outcomes)
        if report.is_error:
            assert criterion_contribution(report, config) == pytest.approx(worst)
        elif report.is_na:
            fail = CannotAssessConfig(strategy=FAIL)
            assert criterion_contribution(report, fail) == pytest.approx(worst)
