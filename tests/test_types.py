"""Criterion/option/report types, token usage, length penalty and thinking/output parsing."""

from __future__ import annotations

import itertools
import warnings

import pytest
from pydantic import ValidationError

from autorubric_local.core.penalty import (
    LengthPenalty,
    ThinkingOutputDict,
    compute_length_penalty,
    normalize_to_grade_input,
    parse_thinking_output,
    word_count,
)
from autorubric_local.core.reports import (
    CriterionReport,
    EnsembleCriterionReport,
    EvaluationReport,
    JudgeVote,
    MultiChoiceJudgeVote,
    TokenUsage,
)
from autorubric_local.core.types import (
    CANONICAL_NA_OPTION,
    AggregatedMultiChoiceVerdict,
    CannotAssessConfig,
    CannotAssessStrategy,
    Criterion,
    CriterionJudgment,
    CriterionOption,
    CriterionVerdict,
    MultiChoiceJudgment,
    MultiChoiceVerdict,
)
from autorubric_local.core.usage import (
    aggregate_completion_cost,
    aggregate_evaluation_usage,
    aggregate_token_usage,
)


def opt(label: str, value: float = 0.0, na: bool = False) -> CriterionOption:
    return CriterionOption(label=label, value=value, na=na)


def mc(weight: float, *options: CriterionOption) -> Criterion:
    return Criterion(weight=weight, requirement="r", options=list(options))


# ---------------------------------------------------------------- CriterionOption


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_option_value_out_of_range_message(value: float) -> None:
    with pytest.raises(ValidationError, match=rf"Option value must be in \[0, 1\], got {value}"):
        CriterionOption(label="x", value=value)


def test_option_bounds_inclusive_and_na_unbounded() -> None:
    assert CriterionOption(label="a", value=0.0).value == 0.0
    assert CriterionOption(label="a", value=1.0).value == 1.0
    assert CriterionOption(label="a", value=5.0, na=True).value == 5.0


def test_na_option_value_defaults_to_zero_but_scored_option_requires_value() -> None:
    assert CriterionOption.model_validate({"label": "NA", "na": True}).value == 0.0
    with pytest.raises(ValidationError, match="value"):
        CriterionOption.model_validate({"label": "x"})


def test_option_is_frozen() -> None:
    option = opt("a", 0.5)
    with pytest.raises(ValidationError):
        option.value = 0.7  # type: ignore[misc]


# ---------------------------------------------------------------- Criterion


def test_criterion_defaults() -> None:
    c = Criterion(requirement="r")
    assert (c.weight, c.name, c.options, c.scale_type, c.aggregation) == (
        10.0,
        None,
        None,
        "ordinal",
        None,
    )
    assert c.is_binary and not c.is_multi_choice


def test_criterion_needs_two_options() -> None:
    message = "Multi-choice criterion must have at least 2 options"
    with pytest.raises(ValidationError, match=message):
        mc(1, opt("a"))


def test_criterion_needs_two_non_na_options() -> None:
    with pytest.raises(ValidationError, match="Must have at least 2 non-NA options"):
        mc(1, opt("a"), opt("n/a", na=True))


def test_criterion_rejects_duplicate_labels_after_normalisation() -> None:
    message = r"Duplicate option label ' GOOD ' at index 2"
    with pytest.raises(ValidationError, match=message) as info:
        mc(1, opt("good", 1.0), opt("bad", 0.0), opt(" GOOD ", 0.5))
    assert "'good' at index 0" in str(info.value)


def test_get_option_value() -> None:
    c = mc(1, opt("a", 0.2), opt("b", 0.9))
    assert c.get_option_value(1) == 0.9
    with pytest.raises(ValueError, match=r"Option index 2 out of range \[0, 2\)"):
        c.get_option_value(2)
    with pytest.raises(ValueError, match=r"Option index -1 out of range"):
        c.get_option_value(-1)
    with pytest.raises(ValueError, match="Binary criterion has no options"):
        Criterion(requirement="r").get_option_value(0)


def test_find_option_by_label_normalises() -> None:
    c = mc(1, opt("Too few", 0.0), opt("Just right", 1.0))
    assert c.find_option_by_label("  just RIGHT ") == 1
    assert c.find_option_by_label("too few") == 0
    with pytest.raises(
        ValueError, match=r"Label 'nope' not found. Available: \['Too few', 'Just right'\]"
    ):
        c.find_option_by_label("nope")
    with pytest.raises(ValueError, match="Binary criterion has no options"):
        Criterion(requirement="r").find_option_by_label("MET")


def test_na_option_index() -> None:
    assert Criterion(requirement="r").na_option_index is None
    assert mc(1, opt("a"), opt("b", 1)).na_option_index is None
    c = mc(1, opt("a"), opt("x", na=True), opt("b", 1), opt("y", na=True))
    assert c.na_option_index == 1


VALUES = [0.5, 0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("weight", "candidates", "expected"),
    [
        (10, [0, 1, 2, 3, 4], 1),  # lowest value 0.0 at indices 1 and 3 -> lowest index 1
        (10, [0, 2, 4], 0),  # lowest among 0.5, 1.0, 1.0
        (0, [2, 3], 3),  # zero weight behaves like positive: lowest value
        (-10, [0, 1, 2, 3, 4], 2),  # highest value 1.0 at indices 2 and 4 -> 2
        (-10, [0, 1, 3], 0),  # highest among 0.5, 0.0, 0.0
        (-10, [1, 3], 1),  # value tie -> lowest index
    ],
)
def test_worst_option_among_is_order_independent(
    weight: float, candidates: list[int], expected: int
) -> None:
    c = mc(weight, *(opt(f"o{i}", v) for i, v in enumerate(VALUES)))
    for perm in itertools.permutations(candidates):
        assert c.worst_option_among(perm) == expected
    assert c.worst_option_among(iter(candidates)) == expected


def test_worst_option_among_errors() -> None:
    with pytest.raises(ValueError, match="No candidate options to choose among"):
        mc(1, opt("a"), opt("b", 1)).worst_option_among([])
    with pytest.raises(ValueError, match="Binary criterion has no scored options"):
        Criterion(requirement="r").worst_option_among([0])


def test_worst_scored_option_skips_na_and_follows_weight_sign() -> None:
    options = (opt("n/a", 0.0, na=True), opt("low", 0.2), opt("high", 0.8), opt("low2", 0.2))
    assert mc(5, *options).worst_scored_option() == (1, options[1])
    assert mc(-5, *options).worst_scored_option() == (2, options[2])
    with pytest.raises(ValueError, match="Binary criterion has no scored options"):
        Criterion(requirement="r").worst_scored_option()


def test_with_guaranteed_na_option_appends_at_end() -> None:
    c = mc(3, opt("a", 0.0), opt("b", 1.0))
    extended = c.with_guaranteed_na_option()
    assert extended is not c
    assert extended.options == [opt("a", 0.0), opt("b", 1.0), CANONICAL_NA_OPTION]
    assert extended.na_option_index == 2
    assert c.options is not None and len(c.options) == 2  # original untouched
    assert extended.weight == 3 and extended.requirement == "r"
    assert CANONICAL_NA_OPTION.na and CANONICAL_NA_OPTION.value == 0.0


def test_with_guaranteed_na_option_keeps_existing_na() -> None:
    c = mc(1, opt("n/a", na=True), opt("a", 0.0), opt("b", 1.0))
    assert c.with_guaranteed_na_option() is c


def test_with_guaranteed_na_option_errors() -> None:
    with pytest.raises(ValueError, match="Binary criterion has no options"):
        Criterion(requirement="r").with_guaranteed_na_option()
    clash = mc(1, opt("a"), opt(" CANNOT ASSESS / not applicable ", 1.0))
    with pytest.raises(ValueError, match="Duplicate option label"):
        clash.with_guaranteed_na_option()


def test_criterion_is_frozen() -> None:
    with pytest.raises(ValidationError):
        Criterion(requirement="r").weight = 3.0  # type: ignore[misc]


# ---------------------------------------------------------------- enums and judgments


def test_verdict_and_strategy_values() -> None:
    assert [v.value for v in CriterionVerdict] == ["MET", "UNMET", "CANNOT_ASSESS"]
    assert CriterionVerdict("MET") is CriterionVerdict.MET
    assert [s.value for s in CannotAssessStrategy] == ["skip", "zero", "partial", "fail"]
    assert CannotAssessStrategy("FAIL") is CannotAssessStrategy.FAIL
    assert CannotAssessStrategy(" Partial ") is CannotAssessStrategy.PARTIAL
    with pytest.raises(ValueError):
        CannotAssessStrategy("drop")


def test_cannot_assess_config() -> None:
    config = CannotAssessConfig()
    assert (config.strategy, config.partial_credit) == (CannotAssessStrategy.SKIP, 0.5)
    assert CannotAssessConfig(strategy="fail").strategy is CannotAssessStrategy.FAIL
    assert CannotAssessConfig(partial_credit=0.0).partial_credit == 0.0
    assert CannotAssessConfig(partial_credit=1.0).partial_credit == 1.0
    for bad in (-0.01, 1.01, float("nan")):
        with pytest.raises(ValidationError, match=r"partial_credit must be in \[0, 1\], got"):
            CannotAssessConfig(partial_credit=bad)
    with pytest.raises(ValidationError):
        CannotAssessConfig(strategy="sometimes")


def test_judgments() -> None:
    j = CriterionJudgment.model_validate_json(
        '{"criterion_status": "CANNOT_ASSESS", "explanation": "no data"}'
    )
    assert j.criterion_status is CriterionVerdict.CANNOT_ASSESS and j.reasoning is None
    with pytest.raises(ValidationError):
        CriterionJudgment.model_validate_json('{"criterion_status": "MAYBE", "explanation": ""}')
    m = MultiChoiceJudgment(selected_option=2, explanation="e", reasoning="t")
    assert (m.selected_option, m.reasoning) == (2, "t")
    schema = MultiChoiceJudgment.model_json_schema()
    assert set(schema["required"]) == {"selected_option", "explanation"}


def test_multi_choice_verdict_defaults() -> None:
    v = MultiChoiceVerdict(value=0.0, na=True)
    assert (v.selected_index, v.selected_label) == (None, None)
    a = AggregatedMultiChoiceVerdict(selected_index=1, selected_label="b", value=0.33,
                                     aggregated_value=0.3)
    assert a.aggregated_value == 0.3 and isinstance(a, MultiChoiceVerdict)


# ---------------------------------------------------------------- reports

OPTIONS = [opt("low", 0.25), opt("high", 0.75), opt("n/a", na=True)]


def mc_report(index: int | None, **extra: object) -> CriterionReport:
    criterion = mc(4, *OPTIONS)
    if index is None:
        verdict = MultiChoiceVerdict(value=0.0, na=True)
    else:
        o = OPTIONS[index]
        verdict = MultiChoiceVerdict(selected_index=index, selected_label=o.label, value=o.value,
                                     na=o.na)
    return CriterionReport.from_criterion(criterion, multi_choice_verdict=verdict, reason="",
                                          **extra)


@pytest.mark.parametrize(
    ("verdict", "score_value", "is_na"),
    [
        (CriterionVerdict.MET, 1.0, False),
        (CriterionVerdict.UNMET, 0.0, False),
        (CriterionVerdict.CANNOT_ASSESS, 0.0, True),
        (None, 0.0, False),
    ],
)
def test_binary_report_properties(
    verdict: CriterionVerdict | None, score_value: float, is_na: bool
) -> None:
    r = CriterionReport(weight=-3, requirement="r", verdict=verdict, reason="why")
    assert (r.score_value, r.is_na, r.is_error) == (score_value, is_na, False)
    assert r.model_copy(update={"error": "parse: bad json"}).is_error


def test_multi_choice_report_properties() -> None:
    assert (mc_report(1).score_value, mc_report(1).is_na) == (0.75, False)
    assert (mc_report(2).score_value, mc_report(2).is_na) == (0.0, True)
    assert mc_report(None).is_na
    assert mc_report(0, error="unknown: boom").is_error


def test_from_criterion_copies_every_criterion_field() -> None:
    c = Criterion(name="n", weight=-2, requirement="q", options=OPTIONS, scale_type="nominal",
                  aggregation="mode")
    r = CriterionReport.from_criterion(c, verdict=None, reason="x", shuffle_order=[2, 0, 1])
    assert Criterion(**{k: getattr(r, k) for k in Criterion.model_fields}) == c
    assert r.shuffle_order == [2, 0, 1] and r.reasoning is None and r.error is None


def test_report_requires_reason() -> None:
    with pytest.raises(ValidationError, match="reason"):
        CriterionReport(requirement="r", verdict=CriterionVerdict.MET)  # type: ignore[call-arg]


def test_label_probabilities_binary() -> None:
    probs = {"MET": 0.7, "UNMET": 0.2, "CANNOT_ASSESS": 0.1}
    r = CriterionReport(requirement="r", verdict="MET", reason="", label_probabilities=probs)
    assert r.label_probabilities == probs
    with pytest.raises(ValidationError, match=r"unknown keys \['YES'\]"):
        CriterionReport(requirement="r", reason="", label_probabilities={"YES": 1.0})
    with pytest.raises(ValidationError, match="must sum to 1"):
        CriterionReport(requirement="r", reason="", label_probabilities={"MET": 0.5, "UNMET": 0.4})
    message = r"label_probabilities\['MET'\] must be a probability in \[0, 1\], got 1.5"
    with pytest.raises(ValidationError, match=message):
        CriterionReport(requirement="r", reason="",
                        label_probabilities={"MET": 1.5, "UNMET": -0.5})
    with pytest.raises(ValidationError, match="must not be empty"):
        CriterionReport(requirement="r", reason="", label_probabilities={})


def test_label_probabilities_multi_choice_keys_and_order() -> None:
    ok = mc_report(1, label_probabilities={"low": 0.2, "high": 0.7, "n/a": 0.1})
    assert ok.label_probabilities == {"low": 0.2, "high": 0.7, "n/a": 0.1}
    # the canonical NA label is accepted when the grader offered it
    c = mc(1, opt("a", 0.0), opt("b", 1.0))
    CriterionReport.from_criterion(
        c, reason="", label_probabilities={"a": 0.5, "b": 0.25, CANONICAL_NA_OPTION.label: 0.25}
    )
    with pytest.raises(ValidationError, match="must follow the original option order"):
        mc_report(1, label_probabilities={"high": 0.7, "low": 0.3})
    with pytest.raises(ValidationError, match=r"unknown keys \['MET'\]"):
        mc_report(1, label_probabilities={"MET": 1.0})


def test_vote_label_probabilities() -> None:
    JudgeVote(judge_id="j", verdict="MET", reason="", label_probabilities={"MET": 1.0})
    with pytest.raises(ValidationError, match="JudgeVote.label_probabilities has unknown keys"):
        JudgeVote(judge_id="j", verdict="MET", reason="", label_probabilities={"x": 1.0})
    vote = MultiChoiceJudgeVote(judge_id="j", selected_index=0, selected_label="low", value=0.25,
                                reason="", label_probabilities={"low": 0.9, "high": 0.1})
    assert vote.weight == 1.0 and not vote.na and not vote.is_error
    with pytest.raises(ValidationError, match="must sum to 1"):
        MultiChoiceJudgeVote(judge_id="j", selected_index=0, selected_label="low", value=0.25,
                             reason="", label_probabilities={"low": 0.9})


def test_ensemble_agreement_is_computed_unless_given() -> None:
    c = Criterion(requirement="r")
    votes = [
        JudgeVote(judge_id="a", verdict="MET", reason=""),
        JudgeVote(judge_id="b", verdict="MET", reason=""),
        JudgeVote(judge_id="c", verdict="UNMET", reason="", error="infrastructure: timeout"),
    ]
    report = EnsembleCriterionReport(criterion=c, final_verdict="MET", final_reason="", votes=votes)
    assert report.agreement == pytest.approx(2 / 3)
    assert (report.score_value, report.is_na, report.is_error) == (1.0, False, False)
    assert votes[2].is_error
    given = EnsembleCriterionReport(criterion=c, final_verdict="MET", final_reason="",
                                    votes=votes, agreement=0.0)
    assert given.agreement == 0.0
    empty = EnsembleCriterionReport(criterion=c, final_verdict=None, final_reason="No votes")
    assert empty.agreement == 0.0 and empty.score_value == 0.0


def test_ensemble_multi_choice_agreement_and_properties() -> None:
    c = mc(2, *OPTIONS)

    def vote(i: int) -> MultiChoiceJudgeVote:
        o = OPTIONS[i]
        return MultiChoiceJudgeVote(judge_id=str(i), selected_index=i, selected_label=o.label,
                                    value=o.value, reason="", na=o.na)

    final = AggregatedMultiChoiceVerdict(selected_index=1, selected_label="high", value=0.75,
                                         aggregated_value=0.6)
    report = EnsembleCriterionReport(criterion=c, final_verdict=None, final_reason="",
                                     final_multi_choice_verdict=final,
                                     multi_choice_votes=[vote(1), vote(0), vote(1), vote(1)])
    assert report.agreement == 0.75
    assert (report.score_value, report.is_na) == (0.75, False)
    na_final = final.model_copy(update={"selected_index": 2, "value": 0.0, "na": True})
    assert report.model_copy(update={"final_multi_choice_verdict": na_final}).is_na


def test_reports_are_frozen() -> None:
    report = EvaluationReport(score=0.5)
    with pytest.raises(ValidationError):
        report.score = 1.0  # type: ignore[misc]
    assert report.model_copy(update={"score": 1.0}).score == 1.0


# ---------------------------------------------------------------- token usage


def test_token_usage_addition_and_sum() -> None:
    a = TokenUsage(prompt_tokens=100, completion_tokens=50, total_tokens=150,
                   cache_creation_input_tokens=3, cache_read_input_tokens=4)
    b = TokenUsage(prompt_tokens=1, completion_tokens=2, total_tokens=3,
                   cache_creation_input_tokens=5, cache_read_input_tokens=6)
    expected = TokenUsage(101, 52, 153, 8, 10)
    assert a + b == expected
    assert sum([a, b]) == expected  # builtin sum starts from 0
    assert TokenUsage.combine([a, None, b]) == expected
    assert TokenUsage.combine([]) == TokenUsage()
    with pytest.raises(TypeError):
        a + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        2 + a  # type: ignore[operator]
    with pytest.raises(AttributeError):
        a.prompt_tokens = 0  # type: ignore[misc]


def test_aggregate_helpers() -> None:
    u = TokenUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    assert aggregate_token_usage([None, None]) is None
    assert aggregate_token_usage([]) is None
    assert aggregate_token_usage([u, None, u]) == TokenUsage(20, 10, 30)
    assert aggregate_completion_cost([None]) is None
    assert aggregate_completion_cost([0.001, None, 0.002, 0.003]) == pytest.approx(0.006)
    reports = [
        EvaluationReport(score=1.0, token_usage=u, completion_cost=None),
        EvaluationReport(score=None, error="x"),
        EvaluationReport(score=0.0, token_usage=u, completion_cost=0.5),
    ]
    assert aggregate_evaluation_usage(reports) == (TokenUsage(20, 10, 30), 0.5)
    assert aggregate_evaluation_usage([EvaluationReport(score=1.0)]) == (None, None)


def test_report_with_token_usage_round_trips_json() -> None:
    report = EvaluationReport(score=0.5, raw_score=5.0, llm_raw_score=5.0,
                              token_usage=TokenUsage(1, 2, 3), completion_cost=None,
                              report=[mc_report(0)])
    again = EvaluationReport.model_validate_json(report.model_dump_json())
    assert again == report and again.token_usage == TokenUsage(1, 2, 3)


# ---------------------------------------------------------------- length penalty


def test_length_penalty_defaults() -> None:
    p = LengthPenalty()
    assert (p.free_budget, p.max_cap, p.penalty_at_cap, p.exponent, p.count_fn,
            p.penalty_type) == (6000, 8000, 0.5, 1.6, None, "ALL")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"free_budget": -1}, r"free_budget must be >= 0, got -1"),
        ({"max_cap": 6000}, r"max_cap must be > free_budget \(6000\), got 6000"),
        ({"free_budget": 100, "max_cap": 50}, r"max_cap must be > free_budget \(100\), got 50"),
        ({"penalty_at_cap": -0.1}, r"penalty_at_cap must be a finite number >= 0, got -0.1"),
        ({"exponent": 0}, r"exponent must be a finite number > 0, got 0"),
        ({"penalty_type": "SOME"}, r"penalty_type"),
    ],
)
def test_length_penalty_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        LengthPenalty(**kwargs)  # type: ignore[arg-type]


def words(n: int) -> str:
    return " ".join(["w"] * n)


@pytest.mark.parametrize(
    ("n_words", "expected"),
    [
        (0, 0.0),
        (5999, 0.0),
        (6000, 0.0),  # at the budget: still free
        (7000, 0.5 * 0.5**1.6),  # frac = 1000/2000 = 0.5 -> 0.5 * 0.5**1.6 = 0.164938...
        (7500, 0.5 * 0.75**1.6),  # frac = 0.75 -> 0.5 * 0.6314... = 0.3157...
        (8000, 0.5),  # at the cap
        (9000, 0.5),  # beyond the cap
    ],
)
def test_length_penalty_formula_default_config(n_words: int, expected: float) -> None:
    assert compute_length_penalty(words(n_words), LengthPenalty()) == pytest.approx(expected)


def test_length_penalty_value_spot_check() -> None:
    # free 10, cap 20, p=2, e=2; 15 units -> 2 * (5/10)**2 = 0.5
    config = LengthPenalty(free_budget=10, max_cap=20, penalty_at_cap=2.0, exponent=2.0,
                           count_fn=len)
    assert compute_length_penalty("x" * 15, config) == pytest.approx(0.5)
    assert compute_length_penalty("x" * 10, config) == 0.0
    assert compute_length_penalty("x" * 11, config) == pytest.approx(2 * 0.1**2)


@pytest.mark.parametrize(
    ("penalty_type", "expected"),
    [
        ("ALL", 5 / 8),  # 4 thinking + 3 output = 7 words: (7 - 2) / (10 - 2) = 0.625
        ("OUTPUT_ONLY", 1 / 8),  # 3 words: (3 - 2) / 8 = 0.125
        ("THINKING_ONLY", 2 / 8),  # 4 words: (4 - 2) / 8 = 0.25
    ],
)
def test_length_penalty_types(penalty_type: str, expected: float) -> None:
    # exponent 1 and penalty_at_cap 1 make the penalty equal to the fraction
    config = LengthPenalty(free_budget=2, max_cap=10, penalty_at_cap=1.0, exponent=1.0,
                           penalty_type=penalty_type)  # type: ignore[arg-type]
    sections: ThinkingOutputDict = {"thinking": "a b c d", "output": "x y z"}
    assert compute_length_penalty(sections, config) == pytest.approx(expected)


def test_length_penalty_string_is_all_output_and_dict_keys_optional() -> None:
    config = LengthPenalty(free_budget=1, max_cap=3, penalty_at_cap=1.0, exponent=1.0)
    thinking_only = config.model_copy(update={"penalty_type": "THINKING_ONLY"})
    assert compute_length_penalty("a b c", config) == 1.0
    assert compute_length_penalty("a b c", thinking_only) == 0.0
    # markers in a plain string are not parsed by compute_length_penalty
    assert compute_length_penalty("<thinking>a b</thinking>", thinking_only) == 0.0
    assert compute_length_penalty({"output": "a b"}, config) == pytest.approx(0.5)
    assert compute_length_penalty({}, config) == 0.0


def test_all_counts_section_boundary_as_separator() -> None:
    seen: list[str] = []

    def count(text: str) -> int:
        seen.append(text)
        return word_count(text)

    config = LengthPenalty(free_budget=1, max_cap=3, penalty_at_cap=1.0, count_fn=count)
    assert compute_length_penalty({"thinking": "end", "output": "start"}, config) > 0
    assert word_count(seen[-1]) == 2  # "end" and "start" are not merged into one word
    compute_length_penalty("only output", config)
    assert seen[-1] == "only output"  # no stray separator when thinking is empty


def test_word_count() -> None:
    assert word_count("  a  b\nc\t d ") == 4
    assert word_count("") == 0


# ---------------------------------------------------------------- thinking/output


@pytest.mark.parametrize(
    ("text", "thinking", "output"),
    [
        ("<thinking>ABC</thinking><output>DEF</output>", "ABC", "DEF"),
        ("<THINKING> t \n</Thinking>\n<Output>\n o </OUTPUT>", "t", "o"),
        ("<thinking>Think</thinking>Rest", "Think", "Rest"),
        ("pre <thinking>T</thinking> post", "T", "pre  post"),
        ("<output>only</output>", "", "only"),
        ("ignored <output> O </output> ignored", "", "O"),
        ("Just output text", "", "Just output text"),
        ("  spaced  ", "", "  spaced  "),  # plain text is returned unchanged
        ("<thinking>unclosed reasoning", "", "<thinking>unclosed reasoning"),
        ("<thinking>T</thinking><output>unclosed", "T", "<output>unclosed"),
        ("<thinking>a</thinking>x<thinking>b</thinking>y", "a\n\nb", "xy"),
        ("", "", ""),
    ],
)
def test_parse_thinking_output(text: str, thinking: str, output: str) -> None:
    assert parse_thinking_output(text) == {"thinking": thinking, "output": output}


def test_normalize_to_grade_input_forms() -> None:
    assert normalize_to_grade_input("plain") == {"thinking": "", "output": "plain"}
    assert normalize_to_grade_input("<thinking>t</thinking><output>o</output>") == {
        "thinking": "t",
        "output": "o",
    }
    assert normalize_to_grade_input({"thinking": "t", "output": "o"}) == {"thinking": "t",
                                                                         "output": "o"}
    assert normalize_to_grade_input({"output": "o"}) == {"thinking": "", "output": "o"}
    assert normalize_to_grade_input({}) == {"thinking": "", "output": ""}


def test_normalize_to_grade_input_errors_and_warning() -> None:
    with pytest.warns(UserWarning, match=r"Unexpected keys in to_grade dict: \['extra'\]"):
        assert normalize_to_grade_input({"output": "o", "extra": 1}) == {"thinking": "",
                                                                        "output": "o"}
    with pytest.raises(ValueError, match="'thinking' must be a string, got int"):
        normalize_to_grade_input({"thinking": 3})  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="'output' must be a string, got NoneType"):
        normalize_to_grade_input({"output": None})  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="to_grade must be a string or dict, got list"):
        normalize_to_grade_input(["x"])  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        normalize_to_grade_input({"thinking": "", "output": ""})  # no warning


def test_verdicts_and_strategies_print_as_their_values() -> None:
    # AutoRubric prints verdicts as MET, not CriterionVerdict.MET (str, f-string and %).
    assert str(CriterionVerdict.MET) == "MET" and f"{CriterionVerdict.UNMET}" == "UNMET"
    assert "%s" % CriterionVerdict.CANNOT_ASSESS == "CANNOT_ASSESS"
    assert str(CannotAssessStrategy.SKIP) == "skip" and CannotAssessStrategy(" Skip ") is CannotAssessStrategy.SKIP
    assert CriterionVerdict.MET == "MET" and CriterionVerdict("MET") is CriterionVerdict.MET
