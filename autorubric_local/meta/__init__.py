"""AutoRubric's ``autorubric.meta``: rubric evaluation with meta-rubrics, on local judges.

Rubric evaluation (:mod:`.evaluate`) is here, and the judge-free parts of rubric improvement
(:mod:`.improvement`: its result types, issue extraction, expected scores, the acceptance checks
and the revision-prompt sections). The improvement loop (``improve_rubric``,
``ImprovementRunner``, ``revise_rubric``) and the validation steps that grade are not built
yet: ``tests/data/autorubric_api_gaps.txt`` lists those names as missing.
"""

from autorubric_local.meta.evaluate import (
    DisplayMode,
    evaluate_rubric_in_context,
    evaluate_rubric_standalone,
    get_in_context_meta_rubric,
    get_standalone_meta_rubric,
)
from autorubric_local.meta.improvement import (
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

__all__ = ["CriterionErrorReport", "CriterionExemplar", "DisplayMode", "HeldOutValidationResult", "IssueDetail",
           "build_revision_history", "compute_expected_scores", "diff_issues", "evaluate_rubric_in_context",
           "evaluate_rubric_standalone", "extract_issues", "format_agreement_for_prompt",
           "format_ground_truth_for_prompt", "format_held_out_for_prompt", "format_issues_for_prompt",
           "get_in_context_meta_rubric", "get_standalone_meta_rubric", "pareto_accept",
           "validate_criteria_structure"]
