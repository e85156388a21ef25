"""The judge-free parts of AutoRubric's rubric-improvement loop (autorubric_local.meta.improvement,
issue 53): hand-built reports, datasets and results, hand-computed answers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from pydantic import ValidationError

import autorubric_local
from autorubric_local import (
    Criterion,
    CriterionReport,
    CriterionVerdict,
    DataItem,
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    EvaluationReport,
    InputError,
    Rubric,
    RubricDataset,
)
from autorubric_local.meta import (
    CriterionErrorReport,
    CriterionExemplar,
    HeldOutValidationResult,
    IssueDetail,
    build_revision_history,
    compute_expected_scores,
    diff_issues,
    extract_issues,
    format_agreement_for_prompt,
    format_ground_truth_for_prompt,
    format_held_out_for_prompt,
    format_issues_for_prompt,
    pareto_accept,
    validate_criteria_structure,
)
from autorubric_local.metrics import CannotAssessMode, ConfusionMatrix

MET, UNMET, CA = CriterionVerdict.MET, CriterionVerdict.UNMET, CriterionVerdict.CANNOT_ASSESS


def issue(name: str, weight: float = 1.0, feedback: str = "why") -> IssueDetail:
    return IssueDetail(criterion_name=name, requirement=f"req {name}", weight=weight, is_antipattern=weight < 0,
                       feedback=feedback)


def ensemble(*rows: tuple[Criterion, CriterionVerdict | None, str]) -> EnsembleEvaluationReport:
    return EnsembleEvaluationReport(score=0.5, report=[
        EnsembleCriterionReport(criterion=c, final_verdict=v, final_reason=r) for c, v, r in rows])


# ---- extract_issues / diff_issues -------------------------------------------------------------


def test_extract_issues_takes_unmet_positive_and_met_negative_criteria_in_rubric_order() -> None:
    report = ensemble(
        (Criterion(name="clear", weight=2.0, requirement="Is clear"), UNMET, "vague wording"),
        (Criterion(name="short", weight=1.0, requirement="Is short"), MET, "fine"),
        (Criterion(name="boiler", weight=-1.0, requirement="Has boilerplate"), MET, "generic"),
        (Criterion(name="dneg", weight=-1.0, requirement="Double negatives"), UNMET, "none"),
        (Criterion(weight=1.0, requirement="Unnamed one"), UNMET, ""),
        (Criterion(name="unsure", weight=1.0, requirement="Unsure"), CA, "cannot tell"),
    )
    issues = extract_issues(report)
    assert [(i.criterion_name, i.is_antipattern, i.weight, i.feedback) for i in issues] == [
        ("clear", False, 2.0, "vague wording"), ("boiler", True, -1.0, "generic"), ("criterion 5", False, 1.0, "")]
    assert issues[0].requirement == "Is clear"


def test_extract_issues_reads_a_single_judge_report_and_a_failed_one() -> None:
    single = EvaluationReport(score=0.0, report=[
        CriterionReport(name="clear", weight=1.0, requirement="Is clear", verdict="UNMET", reason="no")])
    assert [(i.criterion_name, i.feedback) for i in extract_issues(single)] == [("clear", "no")]
    assert extract_issues(EnsembleEvaluationReport(score=None, error="judge failed")) == []


def test_diff_issues_names_fixed_and_introduced_sorted() -> None:
    fixed, introduced = diff_issues([issue("b"), issue("a"), issue("c")], [issue("c"), issue("d"), issue("d")])
    assert (fixed, introduced) == (["a", "b"], ["d"])
    assert diff_issues([], []) == ([], [])


def test_issue_detail_refuses_a_sign_that_contradicts_the_weight() -> None:
    with pytest.raises(ValidationError, match="is_antipattern"):
        IssueDetail(criterion_name="x", requirement="r", weight=-1.0, is_antipattern=False, feedback="")
    with pytest.raises(ValidationError, match="zero-weight"):
        IssueDetail(criterion_name="x", requirement="r", weight=0.0, is_antipattern=False, feedback="")
    with pytest.raises(ValidationError):  # frozen
        issue("x").feedback = "y"  # type: ignore[misc]


# ---- compute_expected_scores -----------------------------------------------------------------


RUBRIC = Rubric([Criterion(name="a", weight=3.0, requirement="A"), Criterion(name="b", weight=1.0, requirement="B"),
                 Criterion(name="c", weight=-2.0, requirement="C")])


def test_expected_scores_are_the_ground_truths_normalised_scores() -> None:
    # positive weights sum to 4: [MET, UNMET, UNMET] -> 3/4; [MET, MET, MET] -> (3+1-2)/4;
    # [UNMET, MET, MET] -> (1-2)/4 clamped to 0; own rubric [MET, UNMET] of weights 1, 1 -> 1/2.
    own = Rubric([Criterion(name="x", weight=1.0, requirement="X"), Criterion(name="y", weight=1.0, requirement="Y")])
    data = RubricDataset(prompt="p", rubric=RUBRIC, items=[
        DataItem("s1", ground_truth=["MET", "UNMET", "UNMET"]), DataItem("s2", ground_truth=[MET, MET, MET]),
        DataItem("s3", ground_truth=["UNMET", "MET", "MET"]),
        DataItem("s4", ground_truth=["MET", "UNMET"], rubric=own)])
    assert compute_expected_scores(data) == pytest.approx([0.75, 0.5, 0.0, 0.5])


def test_expected_scores_name_the_item_without_ground_truth() -> None:
    data = RubricDataset(prompt="p", rubric=RUBRIC, name="val",
                         items=[DataItem("s1", ground_truth=["MET", "MET", "MET"]), DataItem("s2")])
    with pytest.raises(InputError, match=r"dataset 'val': item 1: field 'ground_truth'"):
        compute_expected_scores(data)


# ---- validate_criteria_structure / pareto_accept ---------------------------------------------


def test_structure_is_valid_when_count_and_names_are_kept() -> None:
    revised = Rubric([Criterion(name="a", weight=3.0, requirement="A, reworded"),
                      Criterion(weight=2.0, requirement="B, now unnamed"),
                      Criterion(name="c", weight=-2.0, requirement="C")])
    assert validate_criteria_structure(RUBRIC, revised) == (True, None)


def test_structure_errors_name_the_counts_or_the_criterion() -> None:
    fewer = Rubric(RUBRIC.rubric[:2])
    ok, reason = validate_criteria_structure(RUBRIC, fewer)
    assert not ok and reason is not None and "2 criteria where the rubric has 3" in reason
    renamed = Rubric([RUBRIC.rubric[0], Criterion(name="b2", weight=1.0, requirement="B"), RUBRIC.rubric[2]])
    ok, reason = validate_criteria_structure(RUBRIC, renamed)
    assert not ok and reason is not None and reason.startswith("criterion 2: name changed from 'b' to 'b2'")


def test_pareto_accept_rejects_a_fall_beyond_epsilon_only() -> None:
    # binary-exact values: 0.75 - 0.25 = 0.5 exactly
    assert pareto_accept(0.5, 0.75, True, 0, epsilon=0.25) == (True, None)
    accepted, reason = pareto_accept(0.4375, 0.75, True, 0, epsilon=0.25)
    assert not accepted and reason == "agreement fell from 75.0% to 43.8%, more than 25.0%"
    assert pareto_accept(0.80, 0.84, True, 1) == (False, "agreement fell from 84.0% to 80.0%, more than 3.0%")
    assert pareto_accept(0.82, 0.84, True, 0) == (True, None)
    assert pareto_accept(0.9, 0.84, True, 0) == (True, None)


def test_pareto_accept_relaxes_after_two_rejections_and_without_measurements() -> None:
    assert pareto_accept(0.1, 0.9, True, 2) == (True, None)
    assert pareto_accept(0.1, 0.9, False, 0) == (True, None)
    assert pareto_accept(None, 0.9, True, 0) == (True, None)
    assert pareto_accept(0.1, None, True, 0) == (True, None)


def test_pareto_accept_refuses_bad_arguments() -> None:
    with pytest.raises(InputError, match="'curr_agreement': NaN"):
        pareto_accept(float("nan"), 0.5, True, 0)
    with pytest.raises(InputError, match="'epsilon'"):
        pareto_accept(0.5, 0.5, True, 0, epsilon=-0.1)
    with pytest.raises(InputError, match="'consecutive_rejections'"):
        pareto_accept(0.5, 0.5, True, -1)


# ---- prompt sections -------------------------------------------------------------------------


def test_format_issues_lists_kind_weight_and_quoted_feedback() -> None:
    text = format_issues_for_prompt([issue("clear", 2.0, "vague"), issue("boiler", -1.0, 'says "ignore"\nall')])
    assert text.splitlines() == [
        '1. quality gap: "clear" (weight +2)',
        '   judge\'s feedback: "vague"',
        '2. anti-pattern present: "boiler" (weight -1)',
        '   judge\'s feedback: "says \\"ignore\\"\\nall"',
    ]
    assert format_issues_for_prompt([]) == "No issues were found."


def test_format_agreement_sorts_lowest_first_with_levels() -> None:
    text = format_agreement_for_prompt({"a": 0.9, "b": 0.5, "c": 0.6, "d": 0.8})
    assert text.splitlines()[1:5] == ['- "b": 50% (low)', '- "c": 60% (medium)', '- "d": 80% (high)',
                                      '- "a": 90% (high)']
    assert text.splitlines()[0].startswith("## Agreement between judges")
    assert format_agreement_for_prompt(None) == "" and format_agreement_for_prompt({}) == ""
    with pytest.raises(InputError, match="criterion 'a'"):
        format_agreement_for_prompt({"a": 1.5})


GT_RUBRIC = [Criterion(name="pos", weight=2.0, requirement="Pos"),
             Criterion(name="neg", weight=-1.0, requirement="Neg"),
             Criterion(name="other", weight=1.0, requirement="Other")]


def test_format_ground_truth_lists_each_item_and_its_gap() -> None:
    text = format_ground_truth_for_prompt(0.5, [(0.75, 0.5), (0.25, 0.25)])
    lines = text.splitlines()
    assert lines[0] == "## Rubric scores against ground-truth scores (correlation 0.50)"
    assert lines[1:3] == ["- item 1: rubric 0.75, expected 0.50, gap +0.25",
                          "- item 2: rubric 0.25, expected 0.25, gap +0.00"]
    assert len(lines) == 4  # no reports, no diagnostics
    assert "(correlation n/a (undefined))" in format_ground_truth_for_prompt(None, [(0.5, 0.5)])


def test_format_ground_truth_diagnostics_pick_the_largest_gaps_and_the_criteria_behind_them() -> None:
    per_item = [(0.9, 0.5), (0.2, 0.8), (0.6, 0.5), (0.5, 0.5)]  # gaps +0.4, -0.6, +0.1, 0
    inflating = ensemble((GT_RUBRIC[0], MET, "looks right"), (GT_RUBRIC[1], UNMET, "no error"),
                         (GT_RUBRIC[2], UNMET, "missing"))
    deflating = ensemble((GT_RUBRIC[0], UNMET, "too strict"), (GT_RUBRIC[1], MET, "flagged"),
                         (GT_RUBRIC[2], CA, "unsure"))
    neutral = ensemble((GT_RUBRIC[0], UNMET, ""), (GT_RUBRIC[1], MET, ""), (GT_RUBRIC[2], UNMET, ""))
    text = format_ground_truth_for_prompt(0.2, per_item, item_reports=[inflating, deflating, neutral, neutral],
                                          n_diagnostic=1)
    diag = text.split("## Why the largest gaps arose")[1].splitlines()
    over = diag.index("### Over-scored items (rubric above expected)")
    under = diag.index("### Under-scored items (rubric below expected)")
    # n_diagnostic=1: item 1 (+0.4) beats item 3 (+0.1); item 2 is the only under-scored one
    assert diag[over + 1:over + 4] == [
        "  item 1 (rubric 0.90, expected 0.50, gap +0.40):",
        '    - "pos" (criterion 1, weight +2): MET; judge\'s reason: "looks right"',
        '    - "neg" (criterion 2, weight -1): UNMET; judge\'s reason: "no error"',
    ]
    assert diag[under + 1:under + 4] == [
        "  item 2 (rubric 0.20, expected 0.80, gap -0.60):",
        '    - "pos" (criterion 1, weight +2): UNMET; judge\'s reason: "too strict"',
        '    - "neg" (criterion 2, weight -1): MET; judge\'s reason: "flagged"',
    ]
    assert "item 3 (" not in text.split("## Why")[1]
    # an over-scored item whose verdicts all lower the score says so
    only_neutral = format_ground_truth_for_prompt(0.0, [(0.6, 0.5)], item_reports=[neutral])
    assert "    (no criterion verdict moved the score this way)" in only_neutral.splitlines()


def test_format_ground_truth_refuses_reports_that_do_not_match_the_items() -> None:
    with pytest.raises(InputError, match="1 reports for 2 items"):
        format_ground_truth_for_prompt(0.5, [(0.5, 0.5), (0.4, 0.5)], item_reports=[ensemble()])
    with pytest.raises(InputError, match="'n_diagnostic'"):
        format_ground_truth_for_prompt(0.5, [], n_diagnostic=-1)


def exemplar(item: int, judge: CriterionVerdict, truth: CriterionVerdict, reason: str = "r") -> CriterionExemplar:
    return CriterionExemplar(item_index=item, submission_snippet=f"sub {item}", llm_verdict=judge,
                             ground_truth_verdict=truth, llm_reason=reason, is_disagreement=judge != truth)


def held_out() -> HeldOutValidationResult:
    good = CriterionErrorReport(criterion_index=0, criterion_name="good", n_samples=4, accuracy=1.0,
                                false_positive_rate=0.0, false_negative_rate=0.0, disagreement_exemplars=[],
                                agreement_exemplars=[exemplar(0, MET, MET, "ok")], kappa=1.0, coverage=1.0,
                                ca_rate=0.0)
    # 4 pairs: TP 1, FN 1, FP 1, TN 1 -> accuracy 0.5, FPR 1/2, FNR 1/2, kappa 0
    bad = CriterionErrorReport(criterion_index=1, criterion_name="bad", n_samples=4, accuracy=0.5,
                               false_positive_rate=0.5, false_negative_rate=0.5,
                               disagreement_exemplars=[exemplar(1, MET, UNMET, 'said "yes"'), exemplar(2, UNMET, MET)],
                               agreement_exemplars=[exemplar(0, MET, MET, "right")], kappa=0.0, coverage=0.8,
                               ca_rate=0.2,
                               confusion_matrix=ConfusionMatrix(matrix=[[1, 1], [1, 1]], labels=["MET", "UNMET"]))
    return HeldOutValidationResult(mean_accuracy=0.75, per_criterion=[good, bad], total_cost=None,
                                   item_reports=[], mean_coverage=0.9, mean_ca_rate=0.1)


def test_format_held_out_puts_the_worst_criterion_first_with_its_exemplars() -> None:
    lines = format_held_out_for_prompt(held_out(), max_exemplars_per_criterion=1).splitlines()
    assert lines[0] == "## Held-out grading against ground truth (mean accuracy 75%)"
    assert lines[1] == "Usable verdicts on 90% of the items, CANNOT_ASSESS on 10% (CANNOT_ASSESS handling: exclude)."
    summary = lines.index("### Criteria, worst first")
    assert lines[summary + 1:summary + 3] == [
        '- criterion 2 "bad": accuracy 50% (n=4), false positives 50%, false negatives 50%, kappa 0.00',
        '- criterion 1 "good": accuracy 100% (n=4), false positives 0%, false negatives 0%, kappa 1.00',
    ]
    detail = lines.index('### Criterion 2 "bad"')
    assert lines[detail + 1:detail + 5] == [
        "Judge disagreed with ground truth:",
        '- item 2: judge MET, ground truth UNMET; submission "sub 1"; judge\'s reason "said \\"yes\\""',
        "Judge agreed with ground truth:",
        '- item 1: judge MET; judge\'s reason "right"',
    ]
    assert "item 3" not in "\n".join(lines)  # capped at 1 exemplar
    assert lines.index('### Criterion 1 "good"') > detail
    with pytest.raises(InputError, match="max_exemplars_per_criterion"):
        format_held_out_for_prompt(held_out(), max_exemplars_per_criterion=-1)


def test_held_out_types_validate_their_figures() -> None:
    with pytest.raises(ValidationError, match="is_disagreement"):
        CriterionExemplar(item_index=0, submission_snippet="", llm_verdict=MET, ground_truth_verdict=MET,
                          llm_reason="", is_disagreement=True)
    with pytest.raises(ValidationError, match="accuracy"):
        CriterionErrorReport(criterion_index=0, criterion_name="x", n_samples=1, accuracy=1.5,
                             false_positive_rate=0.0, false_negative_rate=0.0, disagreement_exemplars=[],
                             agreement_exemplars=[])
    with pytest.raises(ValidationError, match="disagreement_exemplars"):
        CriterionErrorReport(criterion_index=0, criterion_name="x", n_samples=1, accuracy=1.0,
                             false_positive_rate=0.0, false_negative_rate=0.0,
                             disagreement_exemplars=[exemplar(0, MET, MET)], agreement_exemplars=[])
    result = HeldOutValidationResult(mean_accuracy=1.0, per_criterion=[], total_cost=0.0, item_reports=[],
                                     cannot_assess="AS_UNMET")
    assert result.cannot_assess is CannotAssessMode.AS_UNMET
    assert HeldOutValidationResult(mean_accuracy=1.0, per_criterion=[], total_cost=None,
                                   item_reports=[]).cannot_assess == "exclude"


@dataclass
class Iteration:
    iteration: int
    quality_score: float
    agreement: float | None
    issues: list[IssueDetail] = field(default_factory=list)
    issues_fixed: list[str] = field(default_factory=list)
    issues_introduced: list[str] = field(default_factory=list)
    accepted: bool = True
    rejection_reason: str | None = None


def test_revision_history_shows_the_last_window_iterations() -> None:
    iterations = [Iteration(0, 0.5, None, [issue("a"), issue("b")]),
                  Iteration(1, 0.625, 0.75, [issue("b")], issues_fixed=["a"]),
                  Iteration(2, 0.5, 0.5, [issue("b"), issue("c")], issues_introduced=["c"], accepted=False,
                            rejection_reason="agreement fell")]
    assert build_revision_history(iterations, 2) == (
        'Iteration 1: quality 62.5%, agreement 75%, 1 issue\n  fixed: "a"\n\n'
        'Iteration 2: quality 50.0%, agreement 50%, 2 issues\n  introduced: "c"\n  rejected: agreement fell')
    assert build_revision_history(iterations, 5).startswith("Iteration 0: quality 50.0%, agreement n/a, 2 issues")
    assert build_revision_history([], 3) == "No earlier iterations."
    with pytest.raises(InputError, match="'window'"):
        build_revision_history(iterations, 0)


def test_the_names_are_exported_where_autorubric_has_them() -> None:
    import autorubric_local.meta as meta

    assert autorubric_local.IssueDetail is IssueDetail
    for name in ("CriterionErrorReport", "CriterionExemplar", "HeldOutValidationResult", "pareto_accept",
                 "format_held_out_for_prompt", "validate_criteria_structure"):
        assert name in meta.__all__
    assert json.loads(issue("x").model_dump_json())["criterion_name"] == "x"
