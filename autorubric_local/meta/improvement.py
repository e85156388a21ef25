"""The judge-free parts of AutoRubric's rubric-improvement loop (issue 53).

AutoRubric 1.6.1's ``autorubric.meta`` improves a rubric in a loop: a meta-rubric evaluation
finds issues, a validation step measures the rubric (against ground truth, or agreement
between judges, or per-criterion errors on held-out items), an LLM revises the rubric, and a
Pareto check accepts or rejects the revision (AutoRubric 1.6.1: ``autorubric/meta/_improve.py``,
docs/api/meta.md). This module holds the steps of that loop that call no model:

- the result types :class:`IssueDetail`, :class:`CriterionExemplar`,
  :class:`CriterionErrorReport` and :class:`HeldOutValidationResult` (immutable, validated),
  and the loop's settings and results :class:`ImprovementConfig`, :class:`IterationResult`,
  :class:`ImprovementResult` and :data:`ConvergenceFn` (the loop's rules: :mod:`.loop`);
- :func:`extract_issues` and :func:`diff_issues` (issues of a meta-rubric report, and what a
  revision fixed or introduced), :func:`compute_expected_scores` (ground-truth scores),
  :func:`validate_criteria_structure` and :func:`pareto_accept` (the acceptance checks);
- the prompt sections :func:`format_issues_for_prompt`, :func:`format_agreement_for_prompt`,
  :func:`format_ground_truth_for_prompt`, :func:`format_held_out_for_prompt` and
  :func:`build_revision_history`, in our own wording (AutoRubric's content, not its text).

The steps that call judges are elsewhere: the validation steps that grade in
:mod:`.validation`, the LLM revision in :mod:`.revision`, and the loop (``improve_rubric``,
``ImprovementRunner``) in :mod:`.loop`.

Text from data (judge feedback and reasons, submission snippets, criterion names) goes into the
prompt sections quoted as JSON strings, so it stays on one line and cannot pass for the
section's own structure or instructions.

Differences from AutoRubric 1.6.1: bad arguments (a negative window or epsilon, a NaN
agreement, item reports that do not match the items) raise :class:`InputError` where AutoRubric
goes on (``iterations[-0:]`` is every iteration; a length mismatch silently drops the
diagnostics); an item with its own rubric is scored with it by :func:`compute_expected_scores`;
an unnamed criterion is called ``criterion <n>`` (1-based) rather than ``unnamed``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import (
    CriterionReport,
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    EvaluationReport,
    TokenUsage,
)
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.graders.judge_spec import JudgeSpec
from autorubric_local.judges.config import LLMConfig
from autorubric_local.metrics.typed import ConfusionMatrix
from autorubric_local.metrics.types import CannotAssessMode

__all__ = [
    "ConvergenceFn",
    "CriterionErrorReport",
    "CriterionExemplar",
    "HeldOutValidationResult",
    "ImprovementConfig",
    "ImprovementResult",
    "IssueDetail",
    "IterationResult",
    "IterationSummary",
    "build_revision_history",
    "compute_expected_scores",
    "diff_issues",
    "extract_issues",
    "format_agreement_for_prompt",
    "format_ground_truth_for_prompt",
    "format_held_out_for_prompt",
    "format_issues_for_prompt",
    "pareto_accept",
    "validate_criteria_structure",
]

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
"""A float in [0, 1]."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


def _quote(text: str) -> str:
    """Data text as a one-line JSON string (quotes, newlines and control characters escaped)."""
    return json.dumps(text, ensure_ascii=False)


def _criterion_label(criterion: Criterion, index: int) -> str:
    return criterion.name or f"criterion {index + 1}"


# ---- types -----------------------------------------------------------------------------------


class IssueDetail(_Frozen):
    """One issue a meta-rubric evaluation found in a rubric.

    AutoRubric 1.6.1: ``autorubric.meta.IssueDetail`` (``_improve.py``).

    Attributes
    ----------
    criterion_name : str
        The meta-rubric criterion that flagged the issue.
    requirement : str
        That criterion's requirement text.
    weight : float
        That criterion's weight (non-zero).
    is_antipattern : bool
        True for a negative criterion that was MET (an anti-pattern present), False for a
        positive one that was UNMET (a quality gap); must equal ``weight < 0``.
    feedback : str
        The meta-judge's reason for the verdict ("" when it gave none).

    Raises
    ------
    pydantic.ValidationError
        ``weight`` is 0, or ``is_antipattern`` contradicts the sign of ``weight``.
    """

    criterion_name: str
    requirement: str
    weight: float
    is_antipattern: bool
    feedback: str

    @model_validator(mode="after")
    def _check_sign(self) -> IssueDetail:
        if self.weight == 0:
            raise ValueError(f"issue {self.criterion_name!r}: field 'weight': a zero-weight criterion flags nothing")
        if self.is_antipattern != (self.weight < 0):
            raise ValueError(f"issue {self.criterion_name!r}: field 'is_antipattern' is {self.is_antipattern} "
                             f"but weight is {self.weight} (anti-patterns are the negative criteria)")
        return self


class CriterionExemplar(_Frozen):
    """One held-out item's verdict on one criterion, beside its ground truth.

    AutoRubric 1.6.1: ``autorubric.meta.CriterionExemplar`` (``_improve.py``).

    Attributes
    ----------
    item_index : int, >= 0
        The item's 0-based index in the validation dataset.
    submission_snippet : str
        The start of the item's submission (AutoRubric keeps its first 200 characters).
    llm_verdict, ground_truth_verdict : CriterionVerdict
        The judge's verdict and the ground truth, after the CANNOT_ASSESS handling.
    llm_reason : str
        The judge's reason ("" when none).
    is_disagreement : bool
        Must equal ``llm_verdict != ground_truth_verdict``.

    Raises
    ------
    pydantic.ValidationError
        A negative ``item_index``, or ``is_disagreement`` contradicting the two verdicts.
    """

    item_index: int = Field(ge=0)
    submission_snippet: str
    llm_verdict: CriterionVerdict
    ground_truth_verdict: CriterionVerdict
    llm_reason: str
    is_disagreement: bool

    @model_validator(mode="after")
    def _check_disagreement(self) -> CriterionExemplar:
        if self.is_disagreement != (self.llm_verdict != self.ground_truth_verdict):
            raise ValueError(f"item {self.item_index}: field 'is_disagreement' is {self.is_disagreement} but the "
                             f"verdicts are {self.llm_verdict.value} (judge) and "
                             f"{self.ground_truth_verdict.value} (ground truth)")
        return self


class CriterionErrorReport(_Frozen):
    """Held-out grading errors of one criterion: the judge's verdicts against ground truth.

    AutoRubric 1.6.1: ``autorubric.meta.CriterionErrorReport`` (``_improve.py``).

    Attributes
    ----------
    criterion_index : int, >= 0
        0-based position of the criterion in the rubric.
    criterion_name : str
    n_samples : int, >= 0
        Usable (judge, ground truth) pairs, after the CANNOT_ASSESS handling.
    accuracy : float in [0, 1]
        Fraction of usable pairs that agree (AutoRubric: 1.0 when there are none).
    false_positive_rate, false_negative_rate : float in [0, 1]
        FP / (FP + TN) and FN / (FN + TP), MET the positive class (0.0 when the denominator
        is 0, as AutoRubric).
    disagreement_exemplars, agreement_exemplars : list of CriterionExemplar
        Items the judge got wrong / right on this criterion.
    kappa : float in [-1, 1] or None, default None
        Cohen's kappa of the usable pairs; None when undefined (never a made-up 0.0).
    coverage, ca_rate : float in [0, 1] or None, default None
        Fractions of the ground-truth-paired items (before exclusion) with a usable verdict
        / with a CANNOT_ASSESS on either side; None when no item was paired.
    confusion_matrix : ConfusionMatrix or None, default None
        The 2x2 MET/UNMET matrix of the usable pairs (rows truth, columns judge); None
        when there are none.

    Raises
    ------
    pydantic.ValidationError
        A figure outside its range, or an exemplar whose ``is_disagreement`` puts it in the
        wrong list.
    """

    criterion_index: int = Field(ge=0)
    criterion_name: str
    n_samples: int = Field(ge=0)
    accuracy: Fraction
    false_positive_rate: Fraction
    false_negative_rate: Fraction
    disagreement_exemplars: list[CriterionExemplar]
    agreement_exemplars: list[CriterionExemplar]
    kappa: float | None = Field(default=None, ge=-1.0, le=1.0)
    coverage: float | None = Field(default=None, ge=0.0, le=1.0)
    ca_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    confusion_matrix: ConfusionMatrix | None = None

    @model_validator(mode="after")
    def _check_exemplars(self) -> CriterionErrorReport:
        for field, wanted in (("disagreement_exemplars", True), ("agreement_exemplars", False)):
            for k, exemplar in enumerate(getattr(self, field)):
                if exemplar.is_disagreement != wanted:
                    raise ValueError(f"criterion {self.criterion_name!r}: field '{field}'[{k}]: "
                                     f"is_disagreement is {exemplar.is_disagreement}")
        return self


class HeldOutValidationResult(_Frozen):
    """Held-out validation of a rubric: per-criterion errors of the judge against ground truth.

    AutoRubric 1.6.1: ``autorubric.meta.HeldOutValidationResult`` (``_improve.py``).

    Attributes
    ----------
    mean_accuracy : float in [0, 1]
        Mean ``accuracy`` of the criteria with ``n_samples > 0`` (1.0 when none, as AutoRubric).
    per_criterion : list of CriterionErrorReport, in rubric order
    total_cost : float >= 0 or None
        USD of the grading calls; None when nothing was priced (local judges).
    item_reports : list of EnsembleEvaluationReport, one per held-out item
    cannot_assess : CannotAssessMode, default "exclude"
        How CANNOT_ASSESS was paired against ground truth.
    mean_coverage, mean_ca_rate : float in [0, 1] or None, default None
        Means of the criteria's ``coverage`` / ``ca_rate``, Nones skipped; None when all are.
    """

    mean_accuracy: Fraction
    per_criterion: list[CriterionErrorReport]
    total_cost: float | None = Field(ge=0.0)
    item_reports: list[EnsembleEvaluationReport]
    cannot_assess: CannotAssessMode = CannotAssessMode.EXCLUDE
    mean_coverage: float | None = Field(default=None, ge=0.0, le=1.0)
    mean_ca_rate: float | None = Field(default=None, ge=0.0, le=1.0)


class IterationSummary(Protocol):
    """What :func:`build_revision_history` reads of an iteration
    (:class:`~autorubric_local.meta.loop.IterationResult` has these fields)."""

    @property
    def iteration(self) -> int: ...
    @property
    def quality_score(self) -> float: ...
    @property
    def agreement(self) -> float | None: ...
    @property
    def issues(self) -> Sequence[IssueDetail]: ...
    @property
    def issues_fixed(self) -> Sequence[str]: ...
    @property
    def issues_introduced(self) -> Sequence[str]: ...
    @property
    def accepted(self) -> bool: ...
    @property
    def rejection_reason(self) -> str | None: ...


# ---- the loop's settings and results ------------------------------------------------------


ConvergenceFn = Callable[["IterationResult", list["IterationResult"]], str | None]
"""``fn(current, all_so_far) -> reason or None``: called after each iteration (``all_so_far``
ends with ``current``); a string stops the loop with that ``convergence_reason``. Given in
:class:`ImprovementConfig`, it replaces the built-in stopping rules."""

Mode = Literal["standalone", "in_context"]
Strategy = Literal["meta_rubric", "held_out"]


def _check_fraction(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
        raise InputError(f"ImprovementConfig: field '{name}': must be in [0, 1], got {value!r}")


def _check_at_least(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"ImprovementConfig: field '{name}': must be an integer >= {low}, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class ImprovementConfig:
    """Settings of a rubric-improvement run (AutoRubric 1.6.1: ``autorubric.meta.ImprovementConfig``).

    Attributes
    ----------
    eval_llm : LLMConfig or list of JudgeSpec
        The judge of the meta-rubric evaluation and of validation; a list is an ensemble
        (required, >= 2 judges, for agreement validation; the meta-rubric evaluation uses
        its first judge).
    revision_llm : LLMConfig
        The model that rewrites the rubric (any local or hosted model).
    mode : {"in_context", "standalone"}, default "in_context"
        Meta-rubric evaluation with the task prompt (required then) or of the rubric alone.
    strategy : {"meta_rubric", "held_out"}, default "meta_rubric"
    validation_data : RubricDataset, optional
        Items graded each iteration: all with ground truth (correlation; required for
        ``"held_out"``), or all without (judge agreement).
    max_iterations : int >= 1, default 10
        Rubrics measured at most (the original included).
    min_quality_score : float in [0, 1], default 0.95
    min_agreement : float in [-1, 1], default 0.85
        Stop thresholds of quality and of agreement (or correlation).
    score_plateau_threshold : float >= 0, default 0.02
    plateau_patience : int >= 1, default 2
        A score change below the threshold this many iterations in a row stops the loop.
    max_exemplars_per_criterion : int >= 0, default 3
        Held-out exemplars per criterion in the revision prompt.
    held_out_min_accuracy : float in [0, 1], default 0.9
        Stop threshold of held-out mean accuracy.
    cannot_assess : {"exclude", "as_unmet", "as_category"}, default "exclude"
        Held-out pairing of CANNOT_ASSESS.
    history_window : int >= 1, default 3
        Iterations shown to the reviser.
    reject_agreement_regression : bool, default True
        Reject a revision whose agreement falls more than 0.03 (:func:`pareto_accept`).
    save_artifacts : bool, default True
        Write rubrics, iterations and ``summary.json`` to ``artifacts_dir``.
    artifacts_dir : path, optional
        Default ``experiments/rubric_improvement_<UTC timestamp>``.
    display : {"stdout", "html"} or None, default None
        "stdout" also prints the meta-rubric verdicts and the progress lines to standard
        output; the meta-rubric reports are written as HTML pages to ``artifacts_dir``
        whenever artifacts are saved.
    show_progress : bool, default True
        A ``rich`` progress display on standard error (:class:`ImprovementProgressDisplay`).
    max_total_cost : float >= 0, optional
        Stop once the run cost this many USD (local judges cost 0).
    convergence_fn : ConvergenceFn, optional
        Replaces the built-in stopping rules.
    revision_system_prompt, revision_user_prompt_template : str, optional
        Replace the reviser's prompts (placeholders: :mod:`autorubric_local.meta.revision`).

    Raises
    ------
    InputError
        A field outside its range or of the wrong type; the message names the field.
    """

    eval_llm: LLMConfig | list[JudgeSpec]
    revision_llm: LLMConfig
    mode: Mode = "in_context"
    strategy: Strategy = "meta_rubric"
    validation_data: RubricDataset | None = None
    max_iterations: int = 10
    min_quality_score: float = 0.95
    min_agreement: float = 0.85
    score_plateau_threshold: float = 0.02
    plateau_patience: int = 2
    max_exemplars_per_criterion: int = 3
    held_out_min_accuracy: float = 0.90
    cannot_assess: CannotAssessMode = "exclude"  # type: ignore[assignment]
    history_window: int = 3
    reject_agreement_regression: bool = True
    save_artifacts: bool = True
    artifacts_dir: Path | str | None = None
    display: Literal["stdout", "html", None] = None
    show_progress: bool = True
    max_total_cost: float | None = None
    convergence_fn: ConvergenceFn | None = None
    revision_system_prompt: str | None = None
    revision_user_prompt_template: str | None = None

    def __post_init__(self) -> None:
        judges = self.eval_llm if isinstance(self.eval_llm, list) else None
        if judges is not None:
            if not judges or not all(isinstance(j, JudgeSpec) for j in judges):
                raise InputError("ImprovementConfig: field 'eval_llm': a list must hold >= 1 JudgeSpec")
        elif not isinstance(self.eval_llm, LLMConfig):
            raise InputError(f"ImprovementConfig: field 'eval_llm': expected an LLMConfig or a list of JudgeSpec, "
                             f"got {type(self.eval_llm).__name__}")
        if not isinstance(self.revision_llm, LLMConfig):
            raise InputError(f"ImprovementConfig: field 'revision_llm': expected an LLMConfig, got "
                             f"{type(self.revision_llm).__name__}")
        for name, allowed in (("mode", ("standalone", "in_context")), ("strategy", ("meta_rubric", "held_out")),
                              ("display", ("stdout", "html", None))):
            if getattr(self, name) not in allowed:
                raise InputError(f"ImprovementConfig: field '{name}': expected one of {list(allowed)}, "
                                 f"got {getattr(self, name)!r}")
        if self.validation_data is not None and not isinstance(self.validation_data, RubricDataset):
            raise InputError(f"ImprovementConfig: field 'validation_data': expected a RubricDataset, got "
                             f"{type(self.validation_data).__name__}")
        _check_at_least("max_iterations", self.max_iterations, 1)
        _check_at_least("plateau_patience", self.plateau_patience, 1)
        _check_at_least("history_window", self.history_window, 1)
        _check_at_least("max_exemplars_per_criterion", self.max_exemplars_per_criterion, 0)
        _check_fraction("min_quality_score", self.min_quality_score)
        _check_fraction("held_out_min_accuracy", self.held_out_min_accuracy)
        if not (isinstance(self.min_agreement, int | float) and -1.0 <= self.min_agreement <= 1.0):
            raise InputError(f"ImprovementConfig: field 'min_agreement': must be in [-1, 1], got "
                             f"{self.min_agreement!r}")
        if not (isinstance(self.score_plateau_threshold, int | float) and self.score_plateau_threshold >= 0):
            raise InputError(f"ImprovementConfig: field 'score_plateau_threshold': must be >= 0, got "
                             f"{self.score_plateau_threshold!r}")
        if self.max_total_cost is not None and not (isinstance(self.max_total_cost, int | float)
                                                    and self.max_total_cost >= 0):
            raise InputError(f"ImprovementConfig: field 'max_total_cost': must be >= 0 or None, got "
                             f"{self.max_total_cost!r}")
        if self.convergence_fn is not None and not callable(self.convergence_fn):
            raise InputError("ImprovementConfig: field 'convergence_fn': must be callable")
        try:
            object.__setattr__(self, "cannot_assess", CannotAssessMode(self.cannot_assess))
        except ValueError:
            raise InputError(f"ImprovementConfig: field 'cannot_assess': expected one of "
                             f"{[m.value for m in CannotAssessMode]}, got {self.cannot_assess!r}") from None

    @property
    def meta_judge(self) -> LLMConfig:
        """The judge of the meta-rubric evaluation: ``eval_llm``, or its first judge."""
        return self.eval_llm[0].llm_config if isinstance(self.eval_llm, list) else self.eval_llm


@dataclass(frozen=True, kw_only=True)
class IterationResult:
    """One iteration: the rubric measured and what was found (AutoRubric 1.6.1:
    ``autorubric.meta.IterationResult``).

    Attributes
    ----------
    iteration : int
        0-based; iteration 0 measures the original rubric.
    rubric : Rubric
    quality_score : float in [0, 1]
        Meta-rubric score (held out: mean per-criterion accuracy).
    agreement : float or None
        Correlation with ground-truth scores or judge agreement; None when not measured.
    per_criterion_agreement : dict of str to float, or None
        Agreement validation only.
    issues : list of IssueDetail
    issues_fixed, issues_introduced : list of str
        Meta-criteria flagged in the previous iteration and not now, and the reverse.
    accepted : bool
        False when :func:`pareto_accept` rejected this rubric.
    rejection_reason : str or None
    quality_report : EnsembleEvaluationReport or None
        The meta-rubric report (None held out).
    token_usage : TokenUsage or None
        Of the meta-rubric evaluation.
    completion_cost : float or None
        USD of the iteration's evaluation and validation; None when 0 or unpriced.
    held_out_diagnostics : HeldOutValidationResult or None, default None
    revision_error : str or None, default None (extension)
        Why the revision that followed this iteration failed (its answer was not a rubric, or
        the revision model failed); the loop stopped there.
    """

    iteration: int
    rubric: Rubric
    quality_score: float
    agreement: float | None
    per_criterion_agreement: dict[str, float] | None
    issues: list[IssueDetail]
    issues_fixed: list[str]
    issues_introduced: list[str]
    accepted: bool
    rejection_reason: str | None
    quality_report: EnsembleEvaluationReport | None
    token_usage: TokenUsage | None
    completion_cost: float | None
    held_out_diagnostics: HeldOutValidationResult | None = None
    revision_error: str | None = None


@dataclass(frozen=True, kw_only=True)
class ImprovementResult:
    """What an improvement run returns (AutoRubric 1.6.1: ``autorubric.meta.ImprovementResult``).

    Attributes
    ----------
    original_rubric : Rubric
    final_rubric : Rubric
        The best rubric (as AutoRubric).
    iterations : list of IterationResult
        Every iteration, rejected ones included, in order.
    best_rubric : Rubric
    best_iteration : int
        The iteration whose rubric is ``best_rubric``.
    convergence_reason : str
        Why the loop stopped (the module docstring lists them).
    total_completion_cost : float or None
        USD of the run; None when 0 or unpriced.
    """

    original_rubric: Rubric
    final_rubric: Rubric
    iterations: list[IterationResult]
    best_rubric: Rubric
    best_iteration: int
    convergence_reason: str
    total_completion_cost: float | None


# ---- issues ----------------------------------------------------------------------------------


def _verdict_rows(
    report: EnsembleEvaluationReport | EvaluationReport,
) -> list[tuple[Criterion, CriterionVerdict | None, str | None]]:
    """(criterion, binary verdict or None, reason) per criterion of an ensemble or
    single-judge report, in rubric order; [] when the report has no criterion rows."""
    rows: list[tuple[Criterion, CriterionVerdict | None, str | None]] = []
    for row in report.report or []:
        if isinstance(row, EnsembleCriterionReport):
            rows.append((row.criterion, row.final_verdict, row.final_reason))
        elif isinstance(row, CriterionReport):
            rows.append((row, row.verdict, row.reason))
        else:
            raise InputError(f"report row {len(rows)}: expected a criterion report, got {type(row).__name__}")
    return rows


def extract_issues(report: EnsembleEvaluationReport | EvaluationReport) -> list[IssueDetail]:
    """The issues of a meta-rubric evaluation: its failed criteria, in rubric order.

    A positive-weight criterion judged UNMET is a quality gap; a negative-weight one judged
    MET is an anti-pattern. CANNOT_ASSESS, multi-choice and zero-weight criteria are never
    issues. AutoRubric 1.6.1: ``autorubric.meta.extract_issues`` (``_improve.py``).

    Parameters
    ----------
    report : EnsembleEvaluationReport or EvaluationReport
        What :func:`~autorubric_local.meta.evaluate_rubric_standalone` or
        :func:`~autorubric_local.meta.evaluate_rubric_in_context` returned (or a
        single-judge report). A report without criterion rows (a failed grade) has no issues.

    Returns
    -------
    list of IssueDetail
        ``criterion_name`` is the criterion's name, or ``criterion <n>`` (1-based) when it
        has none; ``feedback`` the judges' reason ("" when none).
    """
    issues: list[IssueDetail] = []
    for index, (criterion, verdict, reason) in enumerate(_verdict_rows(report)):
        gap = criterion.weight > 0 and verdict == CriterionVerdict.UNMET
        antipattern = criterion.weight < 0 and verdict == CriterionVerdict.MET
        if gap or antipattern:
            issues.append(IssueDetail(criterion_name=_criterion_label(criterion, index),
                                      requirement=criterion.requirement, weight=criterion.weight,
                                      is_antipattern=antipattern, feedback=reason or ""))
    return issues


def diff_issues(prev_issues: Sequence[IssueDetail], curr_issues: Sequence[IssueDetail]) -> tuple[list[str], list[str]]:
    """What a revision changed in the issues, by meta-criterion name.

    AutoRubric 1.6.1: ``autorubric.meta.diff_issues`` (``_improve.py``).

    Returns
    -------
    (fixed, introduced) : tuple of two lists of str, each sorted, without repeats
        Names flagged before and not now, and names flagged now and not before.
    """
    before = {issue.criterion_name for issue in prev_issues}
    now = {issue.criterion_name for issue in curr_issues}
    return sorted(before - now), sorted(now - before)


# ---- scores and acceptance -------------------------------------------------------------------


def compute_expected_scores(validation_data: RubricDataset) -> list[float]:
    """The score each item's ground truth earns: the target of ground-truth validation.

    Each item's ground-truth verdicts are scored with its rubric (its own, else the dataset's)
    by :meth:`Rubric.compute_score` with its defaults (normalised to [0, 1], CANNOT_ASSESS
    skipped), exactly as a judge's verdicts would be. AutoRubric 1.6.1:
    ``autorubric.meta.compute_expected_scores`` (``_improve.py``; it always uses the
    dataset's rubric).

    Parameters
    ----------
    validation_data : RubricDataset
        Every item needs ``ground_truth``.

    Returns
    -------
    list of float, length len(validation_data)
        In item order.

    Raises
    ------
    InputError
        An item has no ground truth, or no rubric (neither its own nor the dataset's); the
        message names the dataset and the item's 0-based index.
    """
    where = f"dataset {validation_data.name!r}: " if validation_data.name else ""
    scores: list[float] = []
    for index, item in enumerate(validation_data.items):
        if item.ground_truth is None:
            raise InputError(f"{where}item {index}: field 'ground_truth': missing; every validation item "
                             "needs ground truth to have an expected score")
        try:
            rubric = validation_data.get_item_rubric(index)
        except InputError as exc:
            raise InputError(f"{where}{exc}") from None
        scores.append(rubric.compute_score(item.ground_truth))
    return scores


def validate_criteria_structure(original: Rubric, revised: Rubric) -> tuple[bool, str | None]:
    """Whether a revision kept the rubric's criteria: as many, in the same order.

    Held-out revision may reword criteria but not add, drop or reorder them (ground truth is
    positional). A criterion's name may not change when both versions name it. AutoRubric
    1.6.1: ``autorubric.meta.validate_criteria_structure`` (``_improve.py``).

    Returns
    -------
    (valid, reason) : tuple of bool and (str or None)
        ``(True, None)``, or ``(False, reason)`` with the reason naming the counts or the
        criterion (1-based) and both names.
    """
    before, after = len(original.rubric), len(revised.rubric)
    if before != after:
        return False, f"the revision has {after} criteria where the rubric has {before}; criteria may be reworded, " \
                      "not added or removed"
    for index, (old, new) in enumerate(zip(original.rubric, revised.rubric, strict=True)):
        if old.name and new.name and old.name != new.name:
            return False, f"criterion {index + 1}: name changed from {old.name!r} to {new.name!r}; criteria keep " \
                          "their names and order"
    return True, None


def _check_not_nan(value: float | None, field: str) -> None:
    if value is not None and math.isnan(value):
        raise InputError(f"field '{field}': NaN; pass None for an agreement that was not measured")


def pareto_accept(
    curr_agreement: float | None,
    prev_agreement: float | None,
    reject_regression: bool,
    consecutive_rejections: int,
    epsilon: float = 0.03,
) -> tuple[bool, str | None]:
    """Whether a revision is accepted: validation reliability may not fall by more than
    ``epsilon``.

    Rejected only when ``reject_regression`` is on, both agreements are measured, fewer than
    2 revisions in a row were rejected (after 2 the constraint is relaxed so the loop cannot
    stall), and ``curr_agreement < prev_agreement - epsilon``. AutoRubric 1.6.1:
    ``autorubric.meta.pareto_accept`` (``_improve.py``).

    Parameters
    ----------
    curr_agreement, prev_agreement : float or None
        Agreement or correlation of the revised and the previous rubric (higher is better);
        None when not measured (never rejects).
    reject_regression : bool
        False accepts every revision.
    consecutive_rejections : int, >= 0
        Revisions rejected in a row just before this one.
    epsilon : float, >= 0, default 0.03
        Tolerated fall, in the agreement's units.

    Returns
    -------
    (accepted, reason) : tuple of bool and (str or None)
        The reason of a rejection names both agreements; None when accepted.

    Raises
    ------
    InputError
        A NaN agreement, a negative or NaN ``epsilon``, or a negative ``consecutive_rejections``.
    """
    _check_not_nan(curr_agreement, "curr_agreement")
    _check_not_nan(prev_agreement, "prev_agreement")
    if not epsilon >= 0:
        raise InputError(f"field 'epsilon': must be >= 0, got {epsilon}")
    if consecutive_rejections < 0:
        raise InputError(f"field 'consecutive_rejections': must be >= 0, got {consecutive_rejections}")
    if not reject_regression or curr_agreement is None or prev_agreement is None or consecutive_rejections >= 2:
        return True, None
    if curr_agreement < prev_agreement - epsilon:
        return False, f"agreement fell from {prev_agreement:.1%} to {curr_agreement:.1%}, more than {epsilon:.1%}"
    return True, None


# ---- prompt sections -------------------------------------------------------------------------


def format_issues_for_prompt(issues: Sequence[IssueDetail]) -> str:
    """The issues as a numbered list for the revision prompt.

    One entry an issue, in the given order: its kind (quality gap or anti-pattern), the
    meta-criterion, its weight, and the judge's feedback as a JSON string. "No issues were
    found." when there are none. AutoRubric 1.6.1: ``autorubric.meta.format_issues_for_prompt``
    (``_improve.py``).
    """
    if not issues:
        return "No issues were found."
    lines: list[str] = []
    for number, issue in enumerate(issues, 1):
        kind = "anti-pattern present" if issue.is_antipattern else "quality gap"
        lines.append(f"{number}. {kind}: {_quote(issue.criterion_name)} (weight {issue.weight:+g})")
        lines.append(f"   judge's feedback: {_quote(issue.feedback)}")
    return "\n".join(lines)


def _agreement_level(agreement: float) -> str:
    return "high" if agreement >= 0.8 else "medium" if agreement >= 0.6 else "low"


def format_agreement_for_prompt(per_criterion_agreement: dict[str, float] | None) -> str:
    """Agreement between judges per criterion, lowest first, as a prompt section.

    Each criterion's agreement (fraction in [0, 1]) as a percentage and a level: high
    (>= 0.8), medium (>= 0.6) or low, then an instruction to make low-agreement criteria more
    specific. "" when there is nothing (None or empty). AutoRubric 1.6.1:
    ``autorubric.meta.format_agreement_for_prompt`` (``_improve.py``).

    Raises
    ------
    InputError
        An agreement outside [0, 1] (or NaN); the message names the criterion.
    """
    if not per_criterion_agreement:
        return ""
    for name, agreement in per_criterion_agreement.items():
        if not 0.0 <= agreement <= 1.0:
            raise InputError(f"criterion {name!r}: agreement must be in [0, 1], got {agreement}")
    lines = ["## Agreement between judges, per criterion (lowest first)"]
    for name, agreement in sorted(per_criterion_agreement.items(), key=lambda kv: kv[1]):
        lines.append(f"- {_quote(name)}: {agreement:.0%} ({_agreement_level(agreement)})")
    lines.append("Judges read the low-agreement criteria differently: make their wording more specific "
                 "and observable.")
    return "\n".join(lines)


def _gap_lines(report: EnsembleEvaluationReport | EvaluationReport, over_scored: bool) -> list[str]:
    """The criteria that pushed an item's score the wrong way: up (MET positive, UNMET
    negative) for an over-scored item, down for an under-scored one. CANNOT_ASSESS and
    multi-choice criteria are left out."""
    lines: list[str] = []
    for index, (criterion, verdict, reason) in enumerate(_verdict_rows(report)):
        if verdict not in (CriterionVerdict.MET, CriterionVerdict.UNMET) or criterion.weight == 0:
            continue
        raises_score = (verdict == CriterionVerdict.MET) == (criterion.weight > 0)
        if raises_score == over_scored:
            name = criterion.name or criterion.requirement[:40]
            line = f"    - {_quote(name)} (criterion {index + 1}, weight {criterion.weight:+g}): {verdict.value}"
            lines.append(line + (f"; judge's reason: {_quote(reason)}" if reason else ""))
    return lines


def format_ground_truth_for_prompt(
    correlation: float | None,
    per_item: Sequence[tuple[float, float]],
    *,
    item_reports: Sequence[EnsembleEvaluationReport | EvaluationReport] | None = None,
    n_diagnostic: int = 3,
) -> str:
    """Rubric scores against ground-truth scores, as a prompt section.

    A header with the correlation, one line per item (1-based) with its rubric score, expected
    score and gap (rubric - expected), and an instruction to close the gaps. With
    ``item_reports``, a diagnostics part follows: the ``n_diagnostic`` most over-scored items
    (gap > 0) and the ``n_diagnostic`` most under-scored (gap < 0), largest ``|gap|`` first
    (ties in item order), each with the criteria whose verdicts pushed its score the wrong way
    and the judges' reasons. AutoRubric 1.6.1: ``autorubric.meta.format_ground_truth_for_prompt``
    (``_improve.py``).

    Parameters
    ----------
    correlation : float or None
        Spearman's rho of rubric and expected scores (AutoRubric's ``validate_ground_truth``
        gives 1 - mean absolute error below 3 items); None when undefined, shown as "n/a".
    per_item : sequence of (rubric_score, expected_score), length n_items
    item_reports : sequence of reports, length n_items, or None, keyword-only
        The grading reports of the items, in the same order.
    n_diagnostic : int, >= 0, default 3, keyword-only
        Items shown per direction.

    Raises
    ------
    InputError
        ``item_reports`` of another length than ``per_item``, or a negative ``n_diagnostic``.
    """
    if n_diagnostic < 0:
        raise InputError(f"field 'n_diagnostic': must be >= 0, got {n_diagnostic}")
    if item_reports is not None and len(item_reports) != len(per_item):
        raise InputError(f"field 'item_reports': {len(item_reports)} reports for {len(per_item)} items")
    shown = "n/a (undefined)" if correlation is None else f"{correlation:.2f}"
    lines = [f"## Rubric scores against ground-truth scores (correlation {shown})"]
    for number, (score, expected) in enumerate(per_item, 1):
        lines.append(f"- item {number}: rubric {score:.2f}, expected {expected:.2f}, gap {score - expected:+.2f}")
    lines.append("Revise the criteria so that over-scored items (positive gap) score lower and under-scored "
                 "items (negative gap) score higher.")
    if item_reports is None:
        return "\n".join(lines)
    gaps = [(number, score, expected, score - expected)
            for number, (score, expected) in enumerate(per_item, 1)]
    over = sorted((g for g in gaps if g[3] > 0), key=lambda g: -abs(g[3]))[:n_diagnostic]
    under = sorted((g for g in gaps if g[3] < 0), key=lambda g: -abs(g[3]))[:n_diagnostic]
    if not over and not under:
        return "\n".join(lines)
    lines += ["", "## Why the largest gaps arose",
              "For each item, the criteria whose verdicts moved its score away from the expected one: MET "
              "positive or UNMET negative criteria raise a score, UNMET positive or MET negative ones lower it."]
    for title, chosen, is_over in (("### Over-scored items (rubric above expected)", over, True),
                                   ("### Under-scored items (rubric below expected)", under, False)):
        if not chosen:
            continue
        lines += ["", title]
        for number, score, expected, gap in chosen:
            lines.append(f"  item {number} (rubric {score:.2f}, expected {expected:.2f}, gap {gap:+.2f}):")
            found = _gap_lines(item_reports[number - 1], over_scored=is_over)
            lines += found or ["    (no criterion verdict moved the score this way)"]
    lines += ["", "Criteria listed for over-scored items are likely too lenient; those listed for under-scored "
                  "items too strict."]
    return "\n".join(lines)


def format_held_out_for_prompt(result: HeldOutValidationResult, *, max_exemplars_per_criterion: int = 3) -> str:
    """Held-out grading errors per criterion, worst first, as a prompt section.

    A header with the mean accuracy (and coverage and abstention rate when measured), one
    summary line per criterion in ascending accuracy (ties in rubric order) with its
    accuracy, false-positive and false-negative rates, n and kappa, then for each criterion
    with exemplars the items the judge got wrong (verdicts, submission snippet, reason) and
    those it got right (verdict, reason), at most ``max_exemplars_per_criterion`` of each.
    AutoRubric 1.6.1: ``autorubric.meta.format_held_out_for_prompt`` (``_improve.py``).

    Raises
    ------
    InputError
        A negative ``max_exemplars_per_criterion``.
    """
    if max_exemplars_per_criterion < 0:
        raise InputError(f"field 'max_exemplars_per_criterion': must be >= 0, got {max_exemplars_per_criterion}")
    lines = [f"## Held-out grading against ground truth (mean accuracy {result.mean_accuracy:.0%})"]
    if result.mean_coverage is not None:
        abstained = "" if result.mean_ca_rate is None else f", CANNOT_ASSESS on {result.mean_ca_rate:.0%}"
        lines.append(f"Usable verdicts on {result.mean_coverage:.0%} of the items{abstained} "
                     f"(CANNOT_ASSESS handling: {CannotAssessMode(result.cannot_assess).value}).")
    worst_first = sorted(result.per_criterion, key=lambda c: c.accuracy)
    lines += ["", "### Criteria, worst first"]
    for cr in worst_first:
        kappa = "n/a" if cr.kappa is None else f"{cr.kappa:.2f}"
        lines.append(f"- criterion {cr.criterion_index + 1} {_quote(cr.criterion_name)}: accuracy {cr.accuracy:.0%} "
                     f"(n={cr.n_samples}), false positives {cr.false_positive_rate:.0%}, false negatives "
                     f"{cr.false_negative_rate:.0%}, kappa {kappa}")
    k = max_exemplars_per_criterion
    for cr in worst_first:
        wrong, right = cr.disagreement_exemplars[:k], cr.agreement_exemplars[:k]
        if not wrong and not right:
            continue
        lines += ["", f"### Criterion {cr.criterion_index + 1} {_quote(cr.criterion_name)}"]
        if wrong:
            lines.append("Judge disagreed with ground truth:")
            lines += [f"- item {ex.item_index + 1}: judge {ex.llm_verdict.value}, ground truth "
                      f"{ex.ground_truth_verdict.value}; submission {_quote(ex.submission_snippet)}; judge's reason "
                      f"{_quote(ex.llm_reason)}" for ex in wrong]
        if right:
            lines.append("Judge agreed with ground truth:")
            lines += [f"- item {ex.item_index + 1}: judge {ex.llm_verdict.value}; judge's reason "
                      f"{_quote(ex.llm_reason)}" for ex in right]
    lines += ["", "Reword the criteria whose disagreements show an ambiguous reading; keep the wording the "
                  "agreements show working. Keep the number and order of the criteria."]
    return "\n".join(lines)


def build_revision_history(iterations: Sequence[IterationSummary], window: int) -> str:
    """The last ``window`` iterations, oldest first, as a prompt section.

    Each iteration: its number, quality (percent), agreement (percent or "n/a"), number of
    issues, the issues it fixed and introduced (when any) and, when rejected, why. "No earlier
    iterations." when there are none. AutoRubric 1.6.1: ``autorubric.meta.build_revision_history``
    (``_improve.py``).

    Parameters
    ----------
    iterations : sequence of IterationSummary
        Iteration results, oldest first (AutoRubric's ``IterationResult`` fits).
    window : int, >= 1

    Raises
    ------
    InputError
        ``window`` < 1.
    """
    if window < 1:
        raise InputError(f"field 'window': must be >= 1, got {window}")
    if not iterations:
        return "No earlier iterations."
    blocks: list[str] = []
    for it in iterations[-window:]:
        agreement = "n/a" if it.agreement is None else f"{it.agreement:.0%}"
        n = len(it.issues)
        lines = [f"Iteration {it.iteration}: quality {it.quality_score:.1%}, agreement {agreement}, "
                 f"{n} issue{'' if n == 1 else 's'}"]
        if it.issues_fixed:
            lines.append(f"  fixed: {', '.join(_quote(name) for name in it.issues_fixed)}")
        if it.issues_introduced:
            lines.append(f"  introduced: {', '.join(_quote(name) for name in it.issues_introduced)}")
        if not it.accepted:
            lines.append(f"  rejected: {it.rejection_reason or 'no reason recorded'}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
