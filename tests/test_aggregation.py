"""Ensemble aggregation (``autorubric_local.graders.aggregation``), tested against the spec.

Sources of every expected value below (hand-computed, not produced by the implementation):

- API reference ``000_03c12497c760819a.txt``: ``OrdinalAggregation`` (mean / median /
  weighted_mean snapped to the nearest option, mode, min, max; the {0.67, 0.67, 1.0} example),
  ``NominalAggregation`` (mode, weighted_mode, unanimous -> NA option on disagreement, else
  mode + warning), ``AggregatedMultiChoiceVerdict`` (the "Mean of [0.0, 0.33, 0.67] = 0.33,
  snapped to option 1" example; ``aggregated_value`` is the continuous value) and the
  tie-breaking paragraphs ("score-minimizing tied option by weight sign ... lowest index on a
  value tie ... deterministic, independent of judge order").
- README ``001_732b54dc4a0c7747.txt``, "Aggregation strategies" table (majority / weighted /
  unanimous / any) and the judge weights 1.0 / 1.2 / 1.0 of its ensemble example.
- ``003_a216d4fbcf834065.txt``: ``Criterion.worst_option_among`` (lowest value for weight >= 0,
  highest for weight < 0, lowest index on a value tie).
- Binary ties go to the score-minimising verdict (UNMET for weight >= 0, MET for weight < 0);
  abstentions (CANNOT_ASSESS, NA options) and failed calls (``error`` set) do not vote; every
  call failed -> the conservative default (binary UNMET / MET by weight sign, multi-choice the
  NA option or no option).

Vote notation in the tables:
  binary:        "M" MET, "U" UNMET, "C" CANNOT_ASSESS, "xM"/"xU" a failed call whose
                 synthesised verdict is MET/UNMET (it must not count either way).
  multi-choice:  an int is the selected original option index; "x" is a failed call shaped as
                 the grader builds it (the NA option if there is one, else no option, na=True);
                 "x<k>" is a failed call that (synthetically) still carries option k.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import JudgeVote, MultiChoiceJudgeVote
from autorubric_local.core.types import (
    AggregatedMultiChoiceVerdict,
    Criterion,
    CriterionOption,
    CriterionVerdict,
)
from autorubric_local.graders.aggregation import (
    BINARY_STRATEGIES,
    NOMINAL_STRATEGIES,
    ORDINAL_STRATEGIES,
    Strategies,
    aggregate_binary,
    aggregate_multi_choice,
    allowed_strategies,
    check_criterion_override,
)

MET = CriterionVerdict.MET
UNMET = CriterionVerdict.UNMET
CA = CriterionVerdict.CANNOT_ASSESS

_VERDICT_CODES = {"M": MET, "U": UNMET, "C": CA}


# ----------------------------------------------------------------------------- fixtures
def _criterion(
    options: Sequence[tuple[str, float | None]] | None,
    weight: float = 10.0,
    scale: str = "ordinal",
) -> Criterion:
    """A criterion; ``None`` as an option value marks an NA option."""
    if options is None:
        return Criterion(requirement="States the capital of France.", weight=weight)
    built = [
        CriterionOption(label=label, value=0.0, na=True)
        if value is None
        else CriterionOption(label=label, value=value)
        for label, value in options
    ]
    return Criterion(
        requirement="Rate it.", weight=weight, options=built, scale_type=scale
    )  # type: ignore[arg-type]


_SAT_OPTIONS = [
    ("Very dissatisfied", 0.0),
    ("Dissatisfied", 0.33),
    ("Satisfied", 0.67),
    ("Very satisfied", 1.0),
]
_NA = ("NA - not applicable", None)
_EFF_OPTIONS = [("Too few", 0.0), ("Too many", 0.0), ("Just right", 1.0)]

BIN = _criterion(None, 10.0)
BIN_NEG = _criterion(None, -5.0)
BIN_ZERO = _criterion(None, 0.0)

# Ordinal: the spec's satisfaction scale (indices 0..3), optionally with an NA option (index 4).
SAT = _criterion(_SAT_OPTIONS, 10.0)
SAT_NEG = _criterion(_SAT_OPTIONS, -5.0)
SAT_NA = _criterion([*_SAT_OPTIONS, _NA], 10.0)
SAT_NA_NEG = _criterion([*_SAT_OPTIONS, _NA], -5.0)
# Ordinal with exactly representable values, for exact equidistant snaps.
HALF = _criterion([("Low", 0.0), ("Mid", 0.5), ("High", 1.0)], 10.0)
HALF_NEG = _criterion([("Low", 0.0), ("Mid", 0.5), ("High", 1.0)], -5.0)
# Ordinal whose first two options share a value (value ties -> lowest index).
DUP = _criterion([("Bad A", 0.0), ("Bad B", 0.0), ("Good", 1.0)], 10.0)
DUP_NEG = _criterion([("Bad A", 0.0), ("Bad B", 0.0), ("Good", 1.0)], -5.0)

# Nominal: the spec's efficiency example; two options share the value 0.0.
EFF = _criterion(_EFF_OPTIONS, 10.0, "nominal")
EFF_NEG = _criterion(_EFF_OPTIONS, -5.0, "nominal")
EFF_NA = _criterion([*_EFF_OPTIONS, _NA], 10.0, "nominal")
EFF_NA_NEG = _criterion([*_EFF_OPTIONS, _NA], -5.0, "nominal")
# Nominal with its NA option first (the NA option is found by flag, not by position).
NA_FIRST = _criterion([("N/A", None), ("Yes", 1.0), ("No", 0.0)], 10.0, "nominal")

SPEC_WEIGHTS = [
    1.0,
    1.2,
    1.0,
]  # gemini, claude, gpt-4.1 in README 001's ensemble example


def _bvotes(
    codes: Sequence[str], weights: Sequence[float] | None = None
) -> list[JudgeVote]:
    weights = list(weights) if weights is not None else [1.0] * len(codes)
    assert len(weights) == len(codes)
    votes = []
    for i, (code, weight) in enumerate(zip(codes, weights)):
        error = "infrastructure: judge call failed" if code.startswith("x") else None
        verdict = _VERDICT_CODES[code.removeprefix("x")]
        votes.append(
            JudgeVote(
                judge_id=f"j{i}",
                verdict=verdict,
                reason=f"r{i}",
                weight=weight,
                error=error,
            )
        )
    return votes


def _mvote(
    criterion: Criterion, i: int, code: int | str, weight: float
) -> MultiChoiceJudgeVote:
    options = criterion.options or []
    if isinstance(code, int):
        option = options[code]
        return MultiChoiceJudgeVote(
            judge_id=f"j{i}",
            selected_index=code,
            selected_label=option.label,
            value=option.value,
            reason=f"r{i}",
            weight=weight,
            na=option.na,
        )
    assert code.startswith("x")
    if code == "x":  # as the grader synthesises a failed call
        na = criterion.na_option_index
        return MultiChoiceJudgeVote(
            judge_id=f"j{i}",
            selected_index=na,
            selected_label=options[na].label if na is not None else None,
            value=0.0,
            reason="",
            weight=weight,
            na=True,
            error="infrastructure: judge call failed",
        )
    k = int(code[1:])
    option = options[k]
    return MultiChoiceJudgeVote(
        judge_id=f"j{i}",
        selected_index=k,
        selected_label=option.label,
        value=option.value,
        reason="",
        weight=weight,
        na=option.na,
        error="parse: unreadable answer",
    )


def _mvotes(
    criterion: Criterion,
    codes: Sequence[int | str],
    weights: Sequence[float] | None = None,
) -> list[MultiChoiceJudgeVote]:
    weights = list(weights) if weights is not None else [1.0] * len(codes)
    assert len(weights) == len(codes)
    return [
        _mvote(criterion, i, code, w) for i, (code, w) in enumerate(zip(codes, weights))
    ]


def _check_multi(
    criterion: Criterion,
    result: AggregatedMultiChoiceVerdict,
    index: int | None,
    aggregated: float | None = None,
) -> None:
    """``result`` selects option ``index`` (consistent label/value/na) with ``aggregated_value``
    equal to ``aggregated`` (default: the option's own value)."""
    assert isinstance(result, AggregatedMultiChoiceVerdict)
    assert result.selected_index == index
    if index is None:
        assert result.selected_label is None
        assert result.na is True
        return
    option = (criterion.options or [])[index]
    assert result.selected_label == option.label
    assert result.value == option.value
    assert result.na is option.na
    expected = option.value if aggregated is None else aggregated
    assert result.aggregated_value == pytest.approx(expected, abs=1e-9)


# ============================================================================== binary
BINARY_CASES = [
    # strategy, criterion, votes, judge weights, expected
    # --- majority: plain
    pytest.param("majority", BIN, ["M", "M", "M"], None, MET, id="majority-3:0"),
    pytest.param("majority", BIN, ["M", "U", "M"], None, MET, id="majority-2:1"),
    pytest.param("majority", BIN, ["U", "M", "U"], None, UNMET, id="majority-1:2"),
    pytest.param("majority", BIN, ["U", "U", "U"], None, UNMET, id="majority-0:3"),
    pytest.param("majority", BIN, ["M"], None, MET, id="majority-single-met"),
    pytest.param("majority", BIN, ["U"], None, UNMET, id="majority-single-unmet"),
    pytest.param(
        "majority", BIN_NEG, ["M", "M", "U"], None, MET, id="majority-2:1-negweight"
    ),
    pytest.param(
        "majority", BIN_NEG, ["U", "M", "U"], None, UNMET, id="majority-1:2-negweight"
    ),
    # --- majority: head-count ties -> score-minimising verdict
    pytest.param(
        "majority", BIN, ["M", "U"], None, UNMET, id="majority-tie-1:1-pos->UNMET"
    ),
    pytest.param(
        "majority", BIN_NEG, ["M", "U"], None, MET, id="majority-tie-1:1-neg->MET"
    ),
    pytest.param(
        "majority",
        BIN_ZERO,
        ["U", "M"],
        None,
        UNMET,
        id="majority-tie-1:1-zeroweight->UNMET",
    ),
    pytest.param(
        "majority",
        BIN,
        ["M", "U", "U", "M"],
        None,
        UNMET,
        id="majority-tie-2:2-pos->UNMET",
    ),
    pytest.param(
        "majority",
        BIN_NEG,
        ["M", "U", "U", "M"],
        None,
        MET,
        id="majority-tie-2:2-neg->MET",
    ),
    pytest.param(
        "majority",
        BIN,
        ["M", "U", "M"],
        [1.0, 5.0, 1.0],
        MET,
        id="majority-ignores-judge-weights",
    ),
    # --- majority: abstentions
    pytest.param(
        "majority",
        BIN,
        ["M", "C", "C"],
        None,
        MET,
        id="majority-abstentions-excluded-1:0",
    ),
    pytest.param(
        "majority",
        BIN,
        ["U", "C", "C"],
        None,
        UNMET,
        id="majority-abstentions-excluded-0:1",
    ),
    pytest.param(
        "majority", BIN, ["M", "M", "U", "C"], None, MET, id="majority-abstention-2:1"
    ),
    pytest.param(
        "majority",
        BIN,
        ["M", "C", "U"],
        None,
        UNMET,
        id="majority-abstention-leaves-tie-pos",
    ),
    pytest.param(
        "majority",
        BIN_NEG,
        ["M", "C", "U"],
        None,
        MET,
        id="majority-abstention-leaves-tie-neg",
    ),
    pytest.param("majority", BIN, ["C", "C", "C"], None, CA, id="majority-all-abstain"),
    pytest.param(
        "majority", BIN_NEG, ["C", "C"], None, CA, id="majority-all-abstain-neg"
    ),
    pytest.param("majority", BIN, ["C"], None, CA, id="majority-single-abstain"),
    # --- majority: failed calls
    pytest.param(
        "majority", BIN, ["M", "xU", "xU"], None, MET, id="majority-errors-excluded-pos"
    ),
    pytest.param(
        "majority",
        BIN_NEG,
        ["U", "xM", "xM"],
        None,
        UNMET,
        id="majority-errors-excluded-neg",
    ),
    pytest.param(
        "majority",
        BIN,
        ["M", "U", "xU"],
        None,
        UNMET,
        id="majority-error-does-not-break-tie-pos",
    ),
    pytest.param(
        "majority",
        BIN_NEG,
        ["M", "U", "xU"],
        None,
        MET,
        id="majority-error-does-not-break-tie-neg",
    ),
    pytest.param(
        "majority",
        BIN,
        ["C", "xU", "xU"],
        None,
        CA,
        id="majority-errors-plus-abstain->CA",
    ),
    pytest.param(
        "majority",
        BIN,
        ["xU", "xU", "xU"],
        None,
        UNMET,
        id="majority-all-errors-pos->UNMET",
    ),
    pytest.param(
        "majority", BIN_NEG, ["xM", "xM"], None, MET, id="majority-all-errors-neg->MET"
    ),
    pytest.param(
        "majority",
        BIN_ZERO,
        ["xU"],
        None,
        UNMET,
        id="majority-all-errors-zeroweight->UNMET",
    ),
    pytest.param(
        "majority",
        BIN,
        ["xM", "xM"],
        None,
        UNMET,
        id="majority-all-errors-ignore-their-verdicts",
    ),
    # --- weighted: the spec's judge weights 1.0 / 1.2 / 1.0
    pytest.param(
        "weighted",
        BIN,
        ["U", "M", "U"],
        SPEC_WEIGHTS,
        UNMET,
        id="weighted-spec-1.2-vs-2.0",
    ),
    pytest.param(
        "weighted",
        BIN,
        ["M", "U", "M"],
        SPEC_WEIGHTS,
        MET,
        id="weighted-spec-2.0-vs-1.2",
    ),
    pytest.param(
        "weighted",
        BIN,
        ["M", "M", "U"],
        SPEC_WEIGHTS,
        MET,
        id="weighted-spec-2.2-vs-1.0",
    ),
    pytest.param(
        "weighted",
        BIN,
        ["C", "M", "U"],
        SPEC_WEIGHTS,
        MET,
        id="weighted-spec-1.2-vs-1.0-with-abstention",
    ),
    pytest.param(
        "majority",
        BIN,
        ["C", "M", "U"],
        SPEC_WEIGHTS,
        UNMET,
        id="majority-same-votes-is-a-tie",
    ),
    pytest.param(
        "weighted",
        BIN,
        ["M", "C", "U"],
        SPEC_WEIGHTS,
        UNMET,
        id="weighted-spec-equal-weight-tie-pos",
    ),
    pytest.param(
        "weighted",
        BIN_NEG,
        ["M", "C", "U"],
        SPEC_WEIGHTS,
        MET,
        id="weighted-spec-equal-weight-tie-neg",
    ),
    pytest.param(
        "weighted",
        BIN_NEG,
        ["U", "M", "U"],
        SPEC_WEIGHTS,
        UNMET,
        id="weighted-spec-1.2-vs-2.0-neg",
    ),
    # --- weighted: other weights
    pytest.param(
        "weighted",
        BIN,
        ["M", "U", "U"],
        [3.0, 1.0, 1.0],
        MET,
        id="weighted-heavy-judge-outvotes",
    ),
    pytest.param(
        "majority",
        BIN,
        ["M", "U", "U"],
        [3.0, 1.0, 1.0],
        UNMET,
        id="majority-heavy-judge-outvoted",
    ),
    pytest.param(
        "weighted",
        BIN,
        ["M", "U", "U"],
        [2.0, 1.0, 1.0],
        UNMET,
        id="weighted-tie-2-vs-1+1-pos",
    ),
    pytest.param(
        "weighted",
        BIN_NEG,
        ["M", "U", "U"],
        [2.0, 1.0, 1.0],
        MET,
        id="weighted-tie-2-vs-1+1-neg",
    ),
    pytest.param(
        "weighted",
        BIN_ZERO,
        ["U", "M"],
        [0.5, 0.5],
        UNMET,
        id="weighted-tie-zeroweight",
    ),
    pytest.param(
        "weighted",
        BIN,
        ["M", "M", "U"],
        [1.0, 1.0, 1.0],
        MET,
        id="weighted-equal-weights-2:1",
    ),
    pytest.param(
        "weighted", BIN, ["C", "C"], [1.0, 1.2], CA, id="weighted-all-abstain"
    ),
    pytest.param(
        "weighted",
        BIN,
        ["M", "xU", "xU"],
        [0.5, 3.0, 3.0],
        MET,
        id="weighted-heavy-errors-excluded",
    ),
    pytest.param(
        "weighted", BIN, ["xM", "xM"], [1.0, 1.2], UNMET, id="weighted-all-errors-pos"
    ),
    pytest.param(
        "weighted", BIN_NEG, ["xU", "xU"], [1.0, 1.2], MET, id="weighted-all-errors-neg"
    ),
    # --- unanimous
    pytest.param("unanimous", BIN, ["M", "M", "M"], None, MET, id="unanimous-all-met"),
    pytest.param(
        "unanimous", BIN, ["M", "M", "U"], None, UNMET, id="unanimous-one-dissent"
    ),
    pytest.param("unanimous", BIN, ["M"], None, MET, id="unanimous-single-met"),
    pytest.param("unanimous", BIN, ["U", "U"], None, UNMET, id="unanimous-all-unmet"),
    pytest.param(
        "unanimous",
        BIN_NEG,
        ["M", "M", "U"],
        None,
        UNMET,
        id="unanimous-one-dissent-neg",
    ),
    pytest.param(
        "unanimous", BIN_NEG, ["M", "M"], None, MET, id="unanimous-all-met-neg"
    ),
    pytest.param(
        "unanimous",
        BIN,
        ["M", "U", "M"],
        [5.0, 0.1, 5.0],
        UNMET,
        id="unanimous-ignores-judge-weights",
    ),
    pytest.param(
        "unanimous", BIN, ["M", "M", "C"], None, MET, id="unanimous-abstention-excluded"
    ),
    pytest.param(
        "unanimous",
        BIN,
        ["M", "U", "C"],
        None,
        UNMET,
        id="unanimous-abstention-dissent",
    ),
    pytest.param("unanimous", BIN, ["C", "C"], None, CA, id="unanimous-all-abstain"),
    pytest.param(
        "unanimous", BIN, ["M", "M", "xU"], None, MET, id="unanimous-error-excluded"
    ),
    pytest.param(
        "unanimous", BIN, ["xU", "xU"], None, UNMET, id="unanimous-all-errors-pos"
    ),
    pytest.param(
        "unanimous", BIN_NEG, ["xM", "xM"], None, MET, id="unanimous-all-errors-neg"
    ),
    # --- any
    pytest.param("any", BIN, ["U", "U", "M"], None, MET, id="any-one-met"),
    pytest.param("any", BIN, ["U", "U", "U"], None, UNMET, id="any-none-met"),
    pytest.param("any", BIN_NEG, ["U", "M"], None, MET, id="any-one-met-neg"),
    pytest.param("any", BIN_NEG, ["U", "U"], None, UNMET, id="any-none-met-neg"),
    pytest.param(
        "any", BIN, ["C", "C", "M"], None, MET, id="any-met-among-abstentions"
    ),
    pytest.param(
        "any", BIN, ["U", "C", "C"], None, UNMET, id="any-unmet-among-abstentions"
    ),
    pytest.param("any", BIN, ["C"], None, CA, id="any-all-abstain"),
    pytest.param(
        "any",
        BIN_NEG,
        ["U", "xM", "xM"],
        None,
        UNMET,
        id="any-error-met-does-not-count",
    ),
    pytest.param("any", BIN, ["xU", "xU"], None, UNMET, id="any-all-errors-pos"),
    pytest.param("any", BIN_NEG, ["xM"], None, MET, id="any-all-errors-neg"),
]


@pytest.mark.parametrize(
    ("strategy", "criterion", "codes", "weights", "expected"), BINARY_CASES
)
def test_binary_aggregation(strategy, criterion, codes, weights, expected):
    votes = _bvotes(codes, weights)
    assert aggregate_binary(criterion, votes, strategy) is expected
    # The spec's tie rule makes the result independent of judge order.
    assert aggregate_binary(criterion, list(reversed(votes)), strategy) is expected


FLOAT_TIE_CASES = [
    # MET mass 0.1 + 0.2 and UNMET mass 0.3 (or the reverse) are an equal-weight tie in the
    # spec's terms; the result must be the score-minimising verdict in every judge order.
    pytest.param(["M", "M", "U"], BIN, UNMET, id="met-0.1+0.2-vs-unmet-0.3-pos"),
    pytest.param(["M", "M", "U"], BIN_NEG, MET, id="met-0.1+0.2-vs-unmet-0.3-neg"),
    pytest.param(["U", "U", "M"], BIN, UNMET, id="unmet-0.1+0.2-vs-met-0.3-pos"),
    pytest.param(["U", "U", "M"], BIN_NEG, MET, id="unmet-0.1+0.2-vs-met-0.3-neg"),
]


@pytest.mark.parametrize(("codes", "criterion", "expected"), FLOAT_TIE_CASES)
def test_binary_weighted_decimal_weight_tie_in_every_judge_order(
    codes, criterion, expected
):
    votes = _bvotes(codes, [0.1, 0.2, 0.3])
    results = {
        tuple(v.judge_id for v in order): aggregate_binary(
            criterion, list(order), "weighted"
        ).value
        for order in itertools.permutations(votes)
    }
    assert set(results.values()) == {expected.value}, results


# ======================================================================== multi-choice
ORDINAL_CASES = [
    # strategy, criterion, votes, judge weights, expected index, expected aggregated_value
    # (None: the selected option's value)
    # --- mean
    pytest.param(
        "mean",
        SAT,
        [0, 1, 2],
        None,
        1,
        1.0 / 3.0,
        id="mean-spec-example-0/0.33/0.67->option1",
    ),
    pytest.param("mean", SAT, [3, 3, 2], None, 3, 2.67 / 3.0, id="mean-0.89->1.0"),
    pytest.param("mean", SAT, [2, 2, 3], None, 2, 2.34 / 3.0, id="mean-0.78->0.67"),
    pytest.param("mean", SAT, [3], None, 3, 1.0, id="mean-single-vote"),
    pytest.param(
        "mean", SAT, [0, 3], None, 1, 0.5, id="mean-snap-tie-0.33|0.67-pos->lower"
    ),
    pytest.param(
        "mean", SAT_NEG, [0, 3], None, 2, 0.5, id="mean-snap-tie-0.33|0.67-neg->higher"
    ),
    pytest.param("mean", SAT, [2, 1], None, 1, 0.5, id="mean-snap-tie-from-1,2-pos"),
    pytest.param(
        "mean", SAT_NEG, [2, 1], None, 2, 0.5, id="mean-snap-tie-from-1,2-neg"
    ),
    pytest.param("mean", SAT, [0, 1], None, 0, 0.165, id="mean-snap-tie-0|0.33-pos"),
    pytest.param(
        "mean", SAT_NEG, [0, 1], None, 1, 0.165, id="mean-snap-tie-0|0.33-neg"
    ),
    pytest.param(
        "mean", HALF, [0, 1], None, 0, 0.25, id="mean-exact-snap-tie-0|0.5-pos"
    ),
    pytest.param(
        "mean", HALF_NEG, [0, 1], None, 1, 0.25, id="mean-exact-snap-tie-0|0.5-neg"
    ),
    pytest.param(
        "mean", HALF, [2, 1], None, 1, 0.75, id="mean-exact-snap-tie-0.5|1-pos"
    ),
    pytest.param(
        "mean", HALF_NEG, [2, 1], None, 2, 0.75, id="mean-exact-snap-tie-0.5|1-neg"
    ),
    pytest.param("mean", HALF, [0, 2, 2], None, 1, 2.0 / 3.0, id="mean-0.667->0.5"),
    pytest.param(
        "mean", SAT, [0, 3], [3.0, 1.0], 1, 0.5, id="mean-ignores-judge-weights"
    ),
    pytest.param("mean", SAT_NA, [4, 4, 2], None, 2, 0.67, id="mean-na-votes-abstain"),
    pytest.param(
        "mean", SAT_NA, [4, 0, 3], None, 1, 0.5, id="mean-na-vote-excluded-tie"
    ),
    pytest.param("mean", SAT_NA, [4, 4, 4], None, 4, None, id="mean-all-na->na-option"),
    pytest.param(
        "mean", SAT_NA, ["x", 4], None, 4, None, id="mean-error-plus-na->na-option"
    ),
    pytest.param(
        "mean", SAT_NA, ["x", "x", 0], None, 0, 0.0, id="mean-errors-excluded"
    ),
    pytest.param(
        "mean", SAT, ["x0", 3], None, 3, 1.0, id="mean-error-carrying-option-excluded"
    ),
    pytest.param(
        "mean", SAT_NA, ["x", "x", "x"], None, 4, None, id="mean-all-errors->na-option"
    ),
    pytest.param(
        "mean", SAT, ["x", "x"], None, None, None, id="mean-all-errors-no-na->none"
    ),
    # --- median
    pytest.param("median", SAT, [0, 0, 3], None, 0, 0.0, id="median-0,0,1->0"),
    pytest.param("median", SAT, [3, 0, 1], None, 1, 0.33, id="median-odd-count"),
    pytest.param("median", SAT, [0, 3], None, 1, 0.5, id="median-even-snap-tie-pos"),
    pytest.param(
        "median", SAT_NEG, [0, 3], None, 2, 0.5, id="median-even-snap-tie-neg"
    ),
    pytest.param(
        "median", SAT, [3, 2, 1, 0], None, 1, 0.5, id="median-4-votes-tie-pos"
    ),
    pytest.param(
        "median", SAT_NEG, [3, 2, 1, 0], None, 2, 0.5, id="median-4-votes-tie-neg"
    ),
    pytest.param(
        "median", SAT, [0, 2, 3, 3], None, 2, 0.835, id="median-0.835-tie-0.67|1.0-pos"
    ),
    pytest.param(
        "median",
        SAT_NEG,
        [0, 2, 3, 3],
        None,
        3,
        0.835,
        id="median-0.835-tie-0.67|1.0-neg",
    ),
    pytest.param(
        "median", SAT_NA, [4, 0, 3, 3], None, 3, 1.0, id="median-na-vote-excluded"
    ),
    pytest.param("median", SAT_NA, [4, 4], None, 4, None, id="median-all-na"),
    pytest.param(
        "median",
        SAT_NA_NEG,
        ["x", "x"],
        None,
        4,
        None,
        id="median-all-errors-neg->na-option",
    ),
    # --- weighted_mean
    pytest.param(
        "weighted_mean", SAT, [0, 3], [1.0, 1.2], 2, 1.2 / 2.2, id="wmean-0.545->0.67"
    ),
    pytest.param(
        "weighted_mean", SAT, [0, 3], [3.0, 1.0], 1, 0.25, id="wmean-0.25->0.33"
    ),
    pytest.param(
        "weighted_mean",
        SAT,
        [0, 3, 3],
        SPEC_WEIGHTS,
        2,
        2.2 / 3.2,
        id="wmean-spec-weights-0.6875",
    ),
    pytest.param(
        "weighted_mean",
        SAT,
        [0, 3],
        [1.0, 1.0],
        1,
        0.5,
        id="wmean-equal-weights-tie-pos",
    ),
    pytest.param(
        "weighted_mean",
        SAT_NEG,
        [0, 3],
        [1.0, 1.0],
        2,
        0.5,
        id="wmean-equal-weights-tie-neg",
    ),
    pytest.param(
        "weighted_mean", HALF, [0, 1], [2.0, 2.0], 0, 0.25, id="wmean-exact-tie-pos"
    ),
    pytest.param(
        "weighted_mean",
        HALF,
        [0, 2],
        [1.0, 3.0],
        1,
        0.75,
        id="wmean-0.75-tie-0.5|1-pos",
    ),
    pytest.param(
        "weighted_mean",
        HALF_NEG,
        [0, 2],
        [1.0, 3.0],
        2,
        0.75,
        id="wmean-0.75-tie-0.5|1-neg",
    ),
    pytest.param(
        "weighted_mean",
        SAT_NA,
        [4, 0, 3],
        [5.0, 1.0, 1.0],
        1,
        0.5,
        id="wmean-heavy-na-vote-excluded",
    ),
    pytest.param(
        "weighted_mean",
        SAT_NA,
        ["x", 3],
        [9.0, 1.0],
        3,
        1.0,
        id="wmean-heavy-error-excluded",
    ),
    pytest.param(
        "weighted_mean", SAT_NA, [4, 4], [1.0, 1.2], 4, None, id="wmean-all-na"
    ),
    pytest.param(
        "weighted_mean",
        SAT,
        ["x", "x"],
        [1.0, 1.2],
        None,
        None,
        id="wmean-all-errors-no-na",
    ),
    # --- mode
    pytest.param("mode", SAT, [1, 1, 3], None, 1, None, id="mode-majority"),
    pytest.param("mode", SAT, [3, 1], None, 1, None, id="mode-tie-pos->lower"),
    pytest.param("mode", SAT_NEG, [3, 1], None, 3, None, id="mode-tie-neg->higher"),
    pytest.param("mode", SAT, [2, 0, 3], None, 0, None, id="mode-3way-tie-pos"),
    pytest.param("mode", SAT_NEG, [2, 0, 3], None, 3, None, id="mode-3way-tie-neg"),
    pytest.param("mode", SAT, [3, 3, 1, 1, 2], None, 1, None, id="mode-2:2:1-tie-pos"),
    pytest.param(
        "mode", SAT_NEG, [3, 3, 1, 1, 2], None, 3, None, id="mode-2:2:1-tie-neg"
    ),
    pytest.param(
        "mode",
        SAT,
        [1, 3, 3],
        [5.0, 1.0, 1.0],
        3,
        None,
        id="mode-ignores-judge-weights",
    ),
    pytest.param("mode", SAT_NA, [4, 4, 2], None, 2, None, id="mode-na-votes-abstain"),
    pytest.param("mode", SAT_NA, [4, 4], None, 4, None, id="mode-all-na"),
    pytest.param(
        "mode", SAT_NA, ["x1", "x1", 2], None, 2, None, id="mode-errors-excluded"
    ),
    pytest.param(
        "mode", DUP, [1, 0], None, 0, None, id="mode-tie-equal-values-pos->lowest-index"
    ),
    pytest.param(
        "mode",
        DUP_NEG,
        [1, 0],
        None,
        0,
        None,
        id="mode-tie-equal-values-neg->lowest-index",
    ),
    pytest.param(
        "mode", DUP_NEG, [1, 0, 2], None, 2, None, id="mode-3way-tie-neg->highest-value"
    ),
    # --- min / max (spec example: selections {0.67, 0.67, 1.0})
    pytest.param("min", SAT, [2, 2, 3], None, 2, 0.67, id="min-spec-example->0.67"),
    pytest.param("max", SAT, [2, 2, 3], None, 3, 1.0, id="max-spec-example->1.0"),
    pytest.param("min", SAT, [3, 0, 2], None, 0, None, id="min-spread"),
    pytest.param("max", SAT, [1, 0, 2], None, 2, None, id="max-spread"),
    pytest.param(
        "min", SAT_NEG, [0, 3], None, 0, None, id="min-negweight-still-lowest-value"
    ),
    pytest.param(
        "max", SAT_NEG, [0, 3], None, 3, None, id="max-negweight-still-highest-value"
    ),
    pytest.param("min", SAT_NA, [4, 3, 2], None, 2, None, id="min-na-vote-excluded"),
    pytest.param("max", SAT_NA, [4, 1, 0], None, 1, None, id="max-na-vote-excluded"),
    pytest.param("min", SAT_NA, [4, 4], None, 4, None, id="min-all-na"),
    pytest.param(
        "max", SAT_NA, ["x", "x"], None, 4, None, id="max-all-errors->na-option"
    ),
    pytest.param(
        "min", SAT, ["x", "x", "x"], None, None, None, id="min-all-errors-no-na->none"
    ),
    pytest.param(
        "min", SAT, ["x0", 2, 3], None, 2, None, id="min-error-carrying-option-excluded"
    ),
    pytest.param(
        "max", SAT, ["x3", 2, 1], None, 2, None, id="max-error-carrying-option-excluded"
    ),
    pytest.param(
        "min", DUP, [1, 2, 0], None, 0, None, id="min-value-tie->lowest-index"
    ),
    pytest.param("min", DUP, [1, 2], None, 1, None, id="min-only-selected-options"),
    pytest.param("max", DUP, [1, 0], None, 0, None, id="max-value-tie->lowest-index"),
    pytest.param(
        "max", DUP_NEG, [1, 0], None, 0, None, id="max-value-tie-neg->lowest-index"
    ),
]


@pytest.mark.parametrize(
    ("strategy", "criterion", "codes", "weights", "index", "aggregated"), ORDINAL_CASES
)
def test_ordinal_aggregation(strategy, criterion, codes, weights, index, aggregated):
    assert criterion.scale_type == "ordinal"
    votes = _mvotes(criterion, codes, weights)
    _check_multi(
        criterion, aggregate_multi_choice(criterion, votes, strategy), index, aggregated
    )
    _check_multi(
        criterion,
        aggregate_multi_choice(criterion, list(reversed(votes)), strategy),
        index,
        aggregated,
    )


def test_spec_snap_example_fields():
    """000, AggregatedMultiChoiceVerdict: "Mean of [0.0, 0.33, 0.67] = 0.33, snapped to option 1"
    -> selected_index=1, selected_label="Dissatisfied", value=0.33, na=False, aggregated_value the
    actual mean (0.333..., printed as 0.33 in the spec)."""
    result = aggregate_multi_choice(SAT, _mvotes(SAT, [0, 1, 2]), "mean")
    assert result.selected_index == 1
    assert result.selected_label == "Dissatisfied"
    assert result.value == 0.33
    assert result.na is False
    assert result.aggregated_value == pytest.approx(0.33, abs=0.005)
    assert result.aggregated_value == pytest.approx((0.0 + 0.33 + 0.67) / 3)
    assert (
        result.aggregated_value != result.value
    )  # continuous value is kept, not the snap


DECIMAL_WEIGHT_TIE_CASES = [
    # strategy, criterion, votes, judge weights 0.1 / 0.2 / 0.3, expected index. Mass 0.1 + 0.2
    # against 0.3 is an equal-weight tie (000, NominalAggregation: "a weighted_mode equal-weight
    # tie resolves to the score-minimizing tied option ... independent of judge order").
    pytest.param(
        "weighted_mode",
        EFF,
        [2, 2, 0],
        0,
        id="wmode-just-right-0.1+0.2-vs-too-few-0.3-pos",
    ),
    pytest.param(
        "weighted_mode",
        EFF_NEG,
        [0, 0, 2],
        2,
        id="wmode-too-few-0.1+0.2-vs-just-right-0.3-neg",
    ),
    pytest.param(
        "weighted_mode",
        EFF,
        [0, 0, 2],
        0,
        id="wmode-too-few-0.1+0.2-vs-just-right-0.3-pos",
    ),
    # weighted mean 0.15 / 0.6 = 0.25: equidistant from Low (0.0) and Mid (0.5)
    pytest.param("weighted_mean", HALF, [0, 0, 1], 0, id="wmean-0.25-snap-tie-pos"),
    pytest.param("weighted_mean", HALF_NEG, [0, 0, 1], 1, id="wmean-0.25-snap-tie-neg"),
]


@pytest.mark.parametrize(
    ("strategy", "criterion", "codes", "index"), DECIMAL_WEIGHT_TIE_CASES
)
def test_multi_choice_decimal_weight_tie_in_every_judge_order(
    strategy, criterion, codes, index
):
    votes = _mvotes(criterion, codes, [0.1, 0.2, 0.3])
    results = {
        tuple(v.judge_id for v in order): aggregate_multi_choice(
            criterion, list(order), strategy
        ).selected_index
        for order in itertools.permutations(votes)
    }
    assert set(results.values()) == {index}, results


NOMINAL_CASES = [
    # strategy, criterion, votes, judge weights, expected index
    # --- mode
    pytest.param("mode", EFF, [2, 2, 0], None, 2, id="mode-majority"),
    pytest.param("mode", EFF, [1, 1, 0, 2], None, 1, id="mode-plurality"),
    pytest.param("mode", EFF, [0, 1], None, 0, id="mode-tie-same-value->lowest-index"),
    pytest.param(
        "mode", EFF, [1, 0], None, 0, id="mode-tie-same-value-reversed->lowest-index"
    ),
    pytest.param(
        "mode", EFF_NEG, [1, 0], None, 0, id="mode-tie-same-value-neg->lowest-index"
    ),
    pytest.param("mode", EFF, [2, 0], None, 0, id="mode-tie-pos->lowest-value"),
    pytest.param("mode", EFF_NEG, [2, 0], None, 2, id="mode-tie-neg->highest-value"),
    pytest.param("mode", EFF, [2, 1], None, 1, id="mode-tie-pos-too-many"),
    pytest.param("mode", EFF, [2, 1, 0], None, 0, id="mode-3way-tie-pos"),
    pytest.param("mode", EFF_NEG, [2, 1, 0], None, 2, id="mode-3way-tie-neg"),
    pytest.param(
        "mode", EFF, [2, 0, 0], [5.0, 1.0, 1.0], 0, id="mode-ignores-judge-weights"
    ),
    pytest.param("mode", EFF_NA, [3, 3, 2], None, 2, id="mode-na-votes-abstain"),
    pytest.param("mode", EFF_NA, [3, 3], None, 3, id="mode-all-na"),
    pytest.param("mode", EFF_NA, ["x", "x"], None, 3, id="mode-all-errors->na-option"),
    pytest.param("mode", EFF, ["x"], None, None, id="mode-all-errors-no-na->none"),
    pytest.param("mode", EFF, ["x2", "x2", 0], None, 0, id="mode-errors-excluded"),
    # --- weighted_mode
    pytest.param(
        "weighted_mode", EFF, [2, 0, 0], [5.0, 1.0, 1.0], 2, id="wmode-heavy-judge-wins"
    ),
    pytest.param(
        "weighted_mode",
        EFF,
        [0, 2, 1],
        SPEC_WEIGHTS,
        2,
        id="wmode-spec-weights-1.2-wins",
    ),
    pytest.param(
        "mode", EFF, [0, 2, 1], SPEC_WEIGHTS, 0, id="mode-same-votes-3way-tie"
    ),
    pytest.param(
        "weighted_mode", EFF, [2, 0, 0], [2.0, 1.0, 1.0], 0, id="wmode-weight-tie-pos"
    ),
    pytest.param(
        "weighted_mode",
        EFF_NEG,
        [2, 0, 0],
        [2.0, 1.0, 1.0],
        2,
        id="wmode-weight-tie-neg",
    ),
    pytest.param(
        "weighted_mode",
        EFF,
        [1, 0],
        [1.5, 1.5],
        0,
        id="wmode-tie-same-value->lowest-index",
    ),
    pytest.param(
        "weighted_mode",
        EFF_NA_NEG,
        [3, 1, 2],
        [9.0, 1.0, 1.0],
        2,
        id="wmode-heavy-na-excluded-tie-neg",
    ),
    pytest.param(
        "weighted_mode", EFF, ["x0", 2], [9.0, 1.0], 2, id="wmode-heavy-error-excluded"
    ),
    pytest.param("weighted_mode", EFF_NA, [3, 3], [1.0, 1.2], 3, id="wmode-all-na"),
    # --- unanimous (criteria with an NA option, or agreement: no warning)
    pytest.param("unanimous", EFF_NA, [2, 2, 2], None, 2, id="unanimous-agreement"),
    pytest.param(
        "unanimous", EFF_NA, [2, 2, 0], None, 3, id="unanimous-disagreement->na"
    ),
    pytest.param(
        "unanimous",
        EFF_NA,
        [0, 1],
        None,
        3,
        id="unanimous-same-value-different-option->na",
    ),
    pytest.param(
        "unanimous", EFF_NA_NEG, [2, 0], None, 3, id="unanimous-disagreement-neg->na"
    ),
    pytest.param(
        "unanimous",
        EFF_NA,
        [2, 0, 0],
        [9.0, 1.0, 1.0],
        3,
        id="unanimous-ignores-weights",
    ),
    pytest.param(
        "unanimous", EFF_NA, [2, 2, 3], None, 2, id="unanimous-na-vote-abstains"
    ),
    pytest.param("unanimous", EFF_NA, [3, 3], None, 3, id="unanimous-all-na"),
    pytest.param("unanimous", EFF_NA, ["x", 2], None, 2, id="unanimous-error-excluded"),
    pytest.param(
        "unanimous",
        EFF_NA,
        ["x0", 2],
        None,
        2,
        id="unanimous-error-carrying-option-excluded",
    ),
    pytest.param(
        "unanimous", EFF_NA, ["x", "x"], None, 3, id="unanimous-all-errors->na"
    ),
    pytest.param(
        "unanimous", EFF, ["x", "x"], None, None, id="unanimous-all-errors-no-na->none"
    ),
    pytest.param(
        "unanimous", EFF, [1, 1], None, 1, id="unanimous-agreement-no-na-option"
    ),
    pytest.param(
        "unanimous",
        NA_FIRST,
        [1, 2],
        None,
        0,
        id="unanimous-disagreement->na-option-at-index-0",
    ),
    pytest.param(
        "unanimous", NA_FIRST, [2, 2], None, 2, id="unanimous-agreement-na-first"
    ),
]


@pytest.mark.parametrize(
    ("strategy", "criterion", "codes", "weights", "index"), NOMINAL_CASES
)
def test_nominal_aggregation(strategy, criterion, codes, weights, index):
    assert criterion.scale_type == "nominal"
    votes = _mvotes(criterion, codes, weights)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none of these cases may warn
        result = aggregate_multi_choice(criterion, votes, strategy)
        reversed_result = aggregate_multi_choice(
            criterion, list(reversed(votes)), strategy
        )
    _check_multi(criterion, result, index)  # nominal: aggregated_value == value
    _check_multi(criterion, reversed_result, index)
    if index is not None and (criterion.options or [])[index].na:
        assert result.na is True


UNANIMOUS_FALLBACK_CASES = [
    # criterion without NA option, votes, judge weights, expected index of the ``mode`` fallback
    pytest.param(EFF, [2, 2, 0], None, 2, id="fallback-mode-majority"),
    pytest.param(EFF, [2, 0], None, 0, id="fallback-mode-tie-pos"),
    pytest.param(EFF_NEG, [2, 0], None, 2, id="fallback-mode-tie-neg"),
    pytest.param(EFF, [1, 0], None, 0, id="fallback-mode-tie-same-value"),
    pytest.param(
        EFF, [2, 0, 0], [9.0, 1.0, 1.0], 0, id="fallback-is-mode-not-weighted-mode"
    ),
]


@pytest.mark.parametrize(
    ("criterion", "codes", "weights", "index"), UNANIMOUS_FALLBACK_CASES
)
def test_nominal_unanimous_without_na_option_falls_back_to_mode_and_warns(
    criterion, codes, weights, index
):
    assert criterion.na_option_index is None
    votes = _mvotes(criterion, codes, weights)
    with pytest.warns(UserWarning):
        result = aggregate_multi_choice(criterion, votes, "unanimous")
    _check_multi(criterion, result, index)
    assert result.na is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # plain mode never warns
        assert aggregate_multi_choice(criterion, votes, "mode") == result


def test_nominal_mode_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = aggregate_multi_choice(EFF, _mvotes(EFF, [2, 0]), "mode")
    _check_multi(EFF, result, 0)


# =========================================================================== strategies
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        pytest.param({"binary": "mean"}, "aggregation", id="binary-gets-ordinal-name"),
        pytest.param(
            {"binary": "weighted_mode"}, "aggregation", id="binary-gets-nominal-name"
        ),
        pytest.param({"binary": ""}, "aggregation", id="binary-empty"),
        pytest.param(
            {"binary": "majority "}, "aggregation", id="binary-trailing-space"
        ),
        pytest.param(
            {"ordinal": "majority"},
            "ordinal_aggregation",
            id="ordinal-gets-binary-name",
        ),
        pytest.param(
            {"ordinal": "weighted_mode"},
            "ordinal_aggregation",
            id="ordinal-gets-nominal-name",
        ),
        pytest.param(
            {"ordinal": "average"}, "ordinal_aggregation", id="ordinal-unknown"
        ),
        pytest.param(
            {"nominal": "mean"}, "nominal_aggregation", id="nominal-gets-ordinal-name"
        ),
        pytest.param(
            {"nominal": "any"}, "nominal_aggregation", id="nominal-gets-binary-name"
        ),
        pytest.param(
            {"nominal": "plurality"}, "nominal_aggregation", id="nominal-unknown"
        ),
    ],
)
def test_strategies_rejects_invalid_names(kwargs, field):
    with pytest.raises(InputError) as info:
        Strategies(**kwargs)
    assert field in str(info.value)
    assert isinstance(
        info.value, ValueError
    )  # InputError is a ValueError, like AutoRubric's


def test_strategies_defaults_and_strategy_sets():
    strategies = Strategies()
    assert (strategies.binary, strategies.ordinal, strategies.nominal) == (
        "majority",
        "mean",
        "mode",
    )
    assert set(BINARY_STRATEGIES) == {"majority", "weighted", "unanimous", "any"}
    assert set(ORDINAL_STRATEGIES) == {
        "mean",
        "median",
        "weighted_mean",
        "mode",
        "min",
        "max",
    }
    assert set(NOMINAL_STRATEGIES) == {"mode", "weighted_mode", "unanimous"}
    assert set(allowed_strategies(BIN)) == set(BINARY_STRATEGIES)
    assert set(allowed_strategies(SAT)) == set(ORDINAL_STRATEGIES)
    assert set(allowed_strategies(EFF)) == set(NOMINAL_STRATEGIES)


@pytest.mark.parametrize(
    ("criterion", "expected"),
    [
        pytest.param(BIN, "weighted", id="binary-default"),
        pytest.param(SAT, "median", id="ordinal-default"),
        pytest.param(EFF, "weighted_mode", id="nominal-default"),
        pytest.param(
            BIN.model_copy(update={"aggregation": "any"}), "any", id="binary-override"
        ),
        pytest.param(
            SAT.model_copy(update={"aggregation": "max"}), "max", id="ordinal-override"
        ),
        pytest.param(
            EFF.model_copy(update={"aggregation": "unanimous"}),
            "unanimous",
            id="nominal-override",
        ),
    ],
)
def test_strategies_for_criterion(criterion, expected):
    strategies = Strategies(
        binary="weighted", ordinal="median", nominal="weighted_mode"
    )
    assert strategies.for_criterion(criterion) == expected


@pytest.mark.parametrize(
    ("options", "scale", "aggregation"),
    [
        pytest.param(
            _SAT_OPTIONS, "ordinal", "majority", id="ordinal-with-binary-majority"
        ),
        pytest.param(_SAT_OPTIONS, "ordinal", "unanimous", id="ordinal-with-unanimous"),
        pytest.param(
            _SAT_OPTIONS,
            "ordinal",
            "weighted_mode",
            id="ordinal-with-nominal-weighted_mode",
        ),
        pytest.param(_EFF_OPTIONS, "nominal", "mean", id="nominal-with-ordinal-mean"),
        pytest.param(_EFF_OPTIONS, "nominal", "any", id="nominal-with-binary-any"),
        pytest.param(None, "ordinal", "mean", id="binary-with-ordinal-mean"),
        pytest.param(
            None, "ordinal", "weighted_mode", id="binary-with-nominal-weighted_mode"
        ),
        pytest.param(None, "ordinal", "bogus", id="binary-with-unknown"),
    ],
)
def test_check_criterion_override_rejects_wrong_family(options, scale, aggregation):
    base = _criterion(options, 10.0, scale)
    criterion = base.model_copy(update={"aggregation": aggregation})
    with pytest.raises(InputError) as info:
        check_criterion_override(criterion, "rubric.yaml criterion 2")
    assert "rubric.yaml criterion 2" in str(info.value)
    assert repr(aggregation) in str(info.value) or aggregation in str(info.value)


@pytest.mark.parametrize(
    ("criterion", "aggregation"),
    [
        pytest.param(BIN, None, id="binary-no-override"),
        pytest.param(BIN, "unanimous", id="binary-unanimous"),
        pytest.param(SAT, "min", id="ordinal-min"),
        pytest.param(SAT, "mode", id="ordinal-mode"),
        pytest.param(EFF, "unanimous", id="nominal-unanimous"),
        pytest.param(EFF, "mode", id="nominal-mode"),
    ],
)
def test_check_criterion_override_accepts_right_family(criterion, aggregation):
    check_criterion_override(
        criterion.model_copy(update={"aggregation": aggregation}), "here"
    )


@pytest.mark.parametrize(
    ("criterion", "strategy"),
    [
        pytest.param(BIN, "mean", id="binary-mean"),
        pytest.param(BIN, "mode", id="binary-mode"),
        pytest.param(BIN, "bogus", id="binary-bogus"),
        pytest.param(SAT, "majority", id="ordinal-majority"),
        pytest.param(SAT, "weighted_mode", id="ordinal-weighted_mode"),
        pytest.param(SAT, "unanimous", id="ordinal-unanimous"),
        pytest.param(EFF, "mean", id="nominal-mean"),
        pytest.param(EFF, "min", id="nominal-min"),
        pytest.param(EFF, "weighted", id="nominal-weighted"),
    ],
)
def test_aggregate_rejects_strategy_of_wrong_family(criterion, strategy):
    with pytest.raises(InputError):
        if criterion.is_binary:
            aggregate_binary(criterion, _bvotes(["M", "U"]), strategy)
        else:
            aggregate_multi_choice(criterion, _mvotes(criterion, [0, 1]), strategy)


# ============================================================================ properties
_VALUES = [0.0, 0.25, 0.33, 0.5, 0.67, 0.75, 1.0]
# Exactly representable judge weights, so that weight sums do not depend on summation order
# (order dependence through float rounding is covered by the decimal-weight table above).
_JUDGE_WEIGHTS = [0.25, 0.5, 1.0, 1.5, 2.0, 3.0]
_CRITERION_WEIGHTS = [10.0, 1.0, 0.5, 0.0, -0.5, -1.0, -5.0]


@st.composite
def multi_choice_criteria(draw, scale: str | None = None) -> Criterion:
    values = draw(st.lists(st.sampled_from(_VALUES), min_size=2, max_size=5))
    options = [CriterionOption(label=f"opt{i}", value=v) for i, v in enumerate(values)]
    if draw(st.booleans()):
        position = draw(st.integers(0, len(options)))
        options.insert(position, CriterionOption(label="N/A", value=0.0, na=True))
    return Criterion(
        requirement="r",
        weight=draw(st.sampled_from(_CRITERION_WEIGHTS)),
        options=options,
        scale_type=scale or draw(st.sampled_from(["ordinal", "nominal"])),
    )


@st.composite
def multi_choice_cases(draw, scale: str | None = None, equal_weights: bool = False):
    criterion = draw(multi_choice_criteria(scale))
    n_options = len(criterion.options or [])
    shared = draw(st.sampled_from(_JUDGE_WEIGHTS))
    codes = draw(
        st.lists(
            st.one_of(
                st.integers(0, n_options - 1),
                st.just("x"),
                st.integers(0, n_options - 1).map(lambda k: f"x{k}"),
            ),
            min_size=1,
            max_size=6,
        )
    )
    weights = [
        shared if equal_weights else draw(st.sampled_from(_JUDGE_WEIGHTS))
        for _ in codes
    ]
    return criterion, _mvotes(criterion, codes, weights)


@st.composite
def binary_cases(draw):
    criterion = _criterion(None, draw(st.sampled_from(_CRITERION_WEIGHTS)))
    codes = draw(
        st.lists(st.sampled_from(["M", "U", "C", "xM", "xU"]), min_size=1, max_size=7)
    )
    weights = [draw(st.sampled_from(_JUDGE_WEIGHTS)) for _ in codes]
    return criterion, _bvotes(codes, weights)


def _quiet(criterion, votes, strategy):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the nominal 'unanimous' fallback warning
        return aggregate_multi_choice(criterion, votes, strategy)


def _strategies_for(criterion: Criterion) -> tuple[str, ...]:
    return (
        ORDINAL_STRATEGIES if criterion.scale_type == "ordinal" else NOMINAL_STRATEGIES
    )


PROPERTY_SETTINGS = settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(case=binary_cases(), data=st.data())
def test_property_binary_independent_of_judge_order(case, data):
    criterion, votes = case
    permuted = data.draw(st.permutations(votes))
    for strategy in BINARY_STRATEGIES:
        assert aggregate_binary(criterion, permuted, strategy) is aggregate_binary(
            criterion, votes, strategy
        ), strategy


@PROPERTY_SETTINGS
@given(case=binary_cases())
def test_property_binary_structure(case):
    criterion, votes = case
    answered = [v for v in votes if not v.is_error]
    deciding = [v for v in answered if v.verdict is not CA]
    results = {s: aggregate_binary(criterion, votes, s) for s in BINARY_STRATEGIES}
    if not answered:
        default = MET if criterion.weight < 0 else UNMET
        assert set(results.values()) == {default}
        return
    if not deciding:
        assert set(results.values()) == {CA}
        return
    assert CA not in results.values()
    met = sum(v.verdict is MET for v in deciding)
    assert (results["any"] is MET) == (met > 0)
    assert (results["unanimous"] is MET) == (met == len(deciding))
    # unanimous MET => majority/weighted MET => any MET
    for strategy in ("majority", "weighted"):
        if results["unanimous"] is MET:
            assert results[strategy] is MET
        if results[strategy] is MET:
            assert results["any"] is MET
    if 2 * met != len(deciding):
        assert (results["majority"] is MET) == (2 * met > len(deciding))
    else:
        assert results["majority"] is (MET if criterion.weight < 0 else UNMET)


@PROPERTY_SETTINGS
@given(case=binary_cases())
def test_property_binary_weighted_with_equal_weights_is_majority(case):
    criterion, votes = case
    equal = [v.model_copy(update={"weight": 1.5}) for v in votes]
    assert aggregate_binary(criterion, equal, "weighted") is aggregate_binary(
        criterion, equal, "majority"
    )


@PROPERTY_SETTINGS
@given(case=multi_choice_cases(), data=st.data())
def test_property_multi_choice_independent_of_judge_order(case, data):
    criterion, votes = case
    permuted = data.draw(st.permutations(votes))
    for strategy in _strategies_for(criterion):
        a, b = _quiet(criterion, votes, strategy), _quiet(criterion, permuted, strategy)
        assert (a.selected_index, a.selected_label, a.value, a.na) == (
            b.selected_index,
            b.selected_label,
            b.value,
            b.na,
        ), strategy
        assert a.aggregated_value == pytest.approx(b.aggregated_value, abs=1e-12), (
            strategy
        )


@PROPERTY_SETTINGS
@given(case=multi_choice_cases())
def test_property_multi_choice_result_is_a_valid_option(case):
    criterion, votes = case
    options = criterion.options or []
    answered = [v for v in votes if not v.is_error]
    scored = [
        v
        for v in answered
        if v.selected_index is not None and not options[v.selected_index].na
    ]
    for strategy in _strategies_for(criterion):
        result = _quiet(criterion, votes, strategy)
        if result.selected_index is None:
            # only when every call failed and there is no NA option to fall back on
            assert not answered and criterion.na_option_index is None, strategy
            assert result.na is True
            continue
        assert 0 <= result.selected_index < len(options), strategy
        option = options[result.selected_index]
        assert (result.selected_label, result.value, result.na) == (
            option.label,
            option.value,
            option.na,
        ), strategy
        if scored:
            disagreement = len({v.selected_index for v in scored}) > 1
            if (
                strategy == "unanimous"
                and disagreement
                and criterion.na_option_index is not None
            ):
                assert (
                    result.selected_index == criterion.na_option_index and result.na
                ), strategy
                continue
            assert not result.na, strategy
            if strategy not in ("mean", "median", "weighted_mean"):
                # mode / weighted_mode / min / max / unanimous pick an option some judge chose
                assert result.selected_index in {v.selected_index for v in scored}, (
                    strategy
                )
                assert result.aggregated_value == result.value, strategy
        elif answered:
            assert result.na is True, strategy  # every answering judge abstained
        else:
            assert (
                result.selected_index == criterion.na_option_index and result.na is True
            ), strategy


@PROPERTY_SETTINGS
@given(case=multi_choice_cases(scale="nominal"))
def test_property_nominal_unanimous(case):
    criterion, votes = case
    options = criterion.options or []
    scored = {
        v.selected_index
        for v in votes
        if not v.is_error
        and v.selected_index is not None
        and not options[v.selected_index].na
    }
    result = _quiet(criterion, votes, "unanimous")
    if len(scored) == 1:
        assert result.selected_index == next(iter(scored))
    elif len(scored) > 1:
        if criterion.na_option_index is not None:
            assert (
                result.selected_index == criterion.na_option_index and result.na is True
            )
        else:
            assert result == _quiet(criterion, votes, "mode")


@PROPERTY_SETTINGS
@given(case=multi_choice_cases(scale="ordinal"))
def test_property_ordinal_ranges(case):
    criterion, votes = case
    options = criterion.options or []
    scored = [
        v
        for v in votes
        if not v.is_error
        and v.selected_index is not None
        and not options[v.selected_index].na
    ]
    results = {
        s: aggregate_multi_choice(criterion, votes, s) for s in ORDINAL_STRATEGIES
    }
    if not scored:
        return
    lo, hi = results["min"], results["max"]
    assert lo.value <= hi.value
    assert lo.value == min(v.value for v in scored)
    assert hi.value == max(v.value for v in scored)
    for strategy, result in results.items():
        # every central / modal choice lies between the extremes that judges selected
        assert lo.value - 1e-9 <= result.value <= hi.value + 1e-9, strategy
        assert lo.value - 1e-9 <= result.aggregated_value <= hi.value + 1e-9, strategy
    for strategy in ("mean", "median", "weighted_mean"):
        result = results[strategy]
        # snapped to a nearest non-NA option
        distance = abs(result.value - result.aggregated_value)
        nearest = min(
            abs(o.value - result.aggregated_value) for o in options if not o.na
        )
        assert distance <= nearest + 1e-9, strategy
    assert results["mean"].aggregated_value == pytest.approx(
        math.fsum(v.value for v in scored) / len(scored)
    )


@PROPERTY_SETTINGS
@given(case=multi_choice_cases(scale="ordinal", equal_weights=True))
def test_property_weighted_mean_with_equal_weights_is_mean(case):
    criterion, votes = case
    mean = aggregate_multi_choice(criterion, votes, "mean")
    weighted = aggregate_multi_choice(criterion, votes, "weighted_mean")
    assert weighted.selected_index == mean.selected_index
    assert weighted.aggregated_value == pytest.approx(mean.aggregated_value, abs=1e-12)


@PROPERTY_SETTINGS
@given(case=multi_choice_cases(scale="nominal", equal_weights=True))
def test_property_weighted_mode_with_equal_weights_is_mode(case):
    criterion, votes = case
    assert aggregate_multi_choice(
        criterion, votes, "weighted_mode"
    ) == aggregate_multi_choice(criterion, votes, "mode")


@PROPERTY_SETTINGS
@given(criterion=multi_choice_criteria(), data=st.data())
def test_property_ties_resolve_to_worst_option(criterion, data):
    """Every non-NA option chosen exactly once: a full mode tie, resolved like worst_option_among."""
    options = criterion.options or []
    scored = [i for i, o in enumerate(options) if not o.na]
    chosen = data.draw(st.lists(st.sampled_from(scored), min_size=1, unique=True))
    votes = _mvotes(criterion, data.draw(st.permutations(chosen)))
    values = [options[i].value for i in chosen]
    worst_value = max(values) if criterion.weight < 0 else min(values)
    expected = min(i for i in chosen if options[i].value == worst_value)
    strategy = "mode"
    assert aggregate_multi_choice(criterion, votes, strategy).selected_index == expected
    if criterion.scale_type == "nominal":
        assert (
            aggregate_multi_choice(criterion, votes, "weighted_mode").selected_index
            == expected
        )
