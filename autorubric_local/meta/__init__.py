"""AutoRubric's ``autorubric.meta``: rubric evaluation with meta-rubrics, on local judges.

Rubric evaluation (:mod:`.evaluate`) and rubric improvement: its judge-free parts
(:mod:`.improvement`: result types, issue extraction, expected scores, the acceptance checks and
the revision-prompt sections), the validation steps that grade (:mod:`.validation`), the LLM
revision (:mod:`.revision`), the loop (:mod:`.loop`: ``improve_rubric``, ``ImprovementRunner``)
and its progress display (:mod:`.progress`).
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
from autorubric_local.meta.loop import (
    ConvergenceFn,
    ImprovementConfig,
    ImprovementResult,
    ImprovementRunner,
    IterationResult,
    improve_rubric,
)
from autorubric_local.meta.progress import ImprovementProgressDisplay
from autorubric_local.meta.revision import revise_rubric, revise_rubric_held_out
from autorubric_local.meta.validation import validate_agreement, validate_ground_truth, validate_held_out

__all__ = ["ConvergenceFn", "CriterionErrorReport", "CriterionExemplar", "DisplayMode", "HeldOutValidationResult",
           "ImprovementConfig", "ImprovementProgressDisplay", "ImprovementResult", "ImprovementRunner",
           "IssueDetail", "IterationResult", "build_revision_history", "compute_expected_scores", "diff_issues",
           "evaluate_rubric_in_context", "evaluate_rubric_standalone", "extract_issues",
           "format_agreement_for_prompt", "format_ground_truth_for_prompt", "format_held_out_for_prompt",
           "format_issues_for_prompt", "get_in_context_meta_rubric", "get_standalone_meta_rubric",
           "improve_rubric", "pareto_accept", "revise_rubric", "revise_rubric_held_out", "validate_agreement",
           "validate_criteria_structure", "validate_ground_truth", "validate_held_out"]
