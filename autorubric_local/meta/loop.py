"""AutoRubric's rubric-improvement loop on local judges (issue 53): ``improve_rubric`` and
``ImprovementRunner``.

Each iteration measures the current rubric, checks whether to stop, and asks an LLM for a
revision, which the next iteration measures (AutoRubric 1.6.1: ``autorubric/meta/_improve.py``,
docs/api/meta.md, docs/cookbook/rubric-improvement.md). Two strategies:

``"meta_rubric"`` (default)
    The rubric is graded against a meta-rubric (:func:`~autorubric_local.meta.evaluate_rubric_in_context`
    or ``_standalone``): its score is the iteration's ``quality_score`` and its failed
    criteria are the issues. With ``validation_data``, the rubric also grades those items:
    with ground truth on every item, the Spearman correlation of its scores with the
    ground truth's (:func:`~autorubric_local.meta.validate_ground_truth`); with none, the
    agreement of an ensemble of at least 2 judges
    (:func:`~autorubric_local.meta.validate_agreement`). That figure is the iteration's
    ``agreement``; a revision whose agreement falls more than 0.03 below the last accepted one
    is rejected (:func:`~autorubric_local.meta.pareto_accept`), and the next revision starts
    again from the last accepted rubric.
``"held_out"``
    The rubric grades held-out items with ground truth; the iteration's ``quality_score`` is
    the mean per-criterion accuracy (:func:`~autorubric_local.meta.validate_held_out`) and the
    revision rewords criteria without changing their count or names.

The loop stops (``convergence_reason``) at the first of: ``"no_issues"``, ``"thresholds_met"``
(quality >= ``min_quality_score`` and, with validation data, agreement >= ``min_agreement``),
``"held_out_accuracy_met"``, ``"max_iterations"`` (``max_iterations`` rubrics measured),
``"score_plateau"`` (``plateau_patience`` iterations in a row whose score moved less than
``score_plateau_threshold``), ``"pareto_stuck"``, ``"cost_limit"``; or where
``convergence_fn`` says, when given (it replaces these rules). A revision whose answer is not a
rubric (or whose model failed: :class:`EngineError`) stops the loop with ``"revision_failed"``
and its error on the last iteration's ``revision_error``: nothing is made up, and a greedy
local model asked again would answer the same. ``best_rubric`` (also ``final_rubric``, as
AutoRubric) is the accepted rubric with the highest quality (mean of quality and agreement
when agreement was measured; held out, the highest accuracy).

Differences from AutoRubric 1.6.1: the configuration and results are immutable and validated
(:class:`InputError` naming the field); ``IterationResult.revision_error`` and the
``"revision_failed"`` stop are extensions (AutoRubric raises out of the loop); a failed grade
raises :class:`EngineError`; artifacts are the rubrics and iterations as JSON, the meta-rubric
reports as HTML pages and ``summary.json`` (no HTML improvement report); a rubric with
multi-choice criteria is refused (its revision would drop their options).
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from autorubric_local.core.errors import EngineError, InputError
from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.graders import CriterionGrader, JudgeSpec
from autorubric_local.judges.config import LLMConfig
from autorubric_local.meta.evaluate import evaluate_rubric_in_context, evaluate_rubric_standalone
from autorubric_local.meta.improvement import (
    ConvergenceFn,
    ImprovementConfig,
    ImprovementResult,
    IterationResult,
    Mode,
    Strategy,
    build_revision_history,
    compute_expected_scores,
    diff_issues,
    extract_issues,
    format_agreement_for_prompt,
    format_ground_truth_for_prompt,
    format_held_out_for_prompt,
    pareto_accept,
)
from autorubric_local.meta.progress import ImprovementProgressDisplay
from autorubric_local.meta.revision import revise_rubric, revise_rubric_held_out
from autorubric_local.meta.validation import validate_agreement, validate_ground_truth, validate_held_out

__all__ = ["ConvergenceFn", "ImprovementConfig", "ImprovementResult", "ImprovementRunner", "IterationResult",
           "improve_rubric"]

# ---- stopping rules --------------------------------------------------------------------------


@dataclass
class _Stopping:
    """What the built-in stopping rules remember between iterations."""

    previous_score: float = 0.0
    flat_iterations: int = 0
    rejections_in_a_row: int = 0

    def plateau(self, score: float, config: ImprovementConfig) -> bool:
        self.flat_iterations = self.flat_iterations + 1 if abs(score - self.previous_score) < \
            config.score_plateau_threshold else 0
        self.previous_score = score
        return self.flat_iterations >= config.plateau_patience


def _over_budget(config: ImprovementConfig, total_cost: float) -> bool:
    return config.max_total_cost is not None and total_cost > 0 and total_cost >= config.max_total_cost


def _meta_rubric_stop(it: IterationResult, config: ImprovementConfig, state: _Stopping,
                      total_cost: float) -> str | None:
    if not it.issues:
        return "no_issues"
    agreement_met = config.validation_data is None or (it.agreement is not None
                                                      and it.agreement >= config.min_agreement)
    if it.quality_score >= config.min_quality_score and agreement_met:
        return "thresholds_met"
    if it.iteration >= config.max_iterations - 1:
        return "max_iterations"
    if state.plateau(it.quality_score, config):
        return "score_plateau"
    if state.rejections_in_a_row >= 3:
        return "pareto_stuck"
    return "cost_limit" if _over_budget(config, total_cost) else None


def _held_out_stop(it: IterationResult, config: ImprovementConfig, state: _Stopping,
                   total_cost: float) -> str | None:
    if it.quality_score >= config.held_out_min_accuracy:
        return "held_out_accuracy_met"
    if it.iteration >= config.max_iterations - 1:
        return "max_iterations"
    if state.plateau(it.quality_score, config):
        return "score_plateau"
    return "cost_limit" if _over_budget(config, total_cost) else None


# ---- artifacts -------------------------------------------------------------------------------


def _criteria(rubric: Rubric) -> list[dict[str, Any]]:
    return [{**({"name": c.name} if c.name else {}), "weight": c.weight, "requirement": c.requirement}
            for c in rubric.rubric]


def _iteration_json(it: IterationResult) -> dict[str, Any]:
    held_out = None
    if it.held_out_diagnostics is not None:
        held_out = it.held_out_diagnostics.model_dump(mode="json", exclude={"item_reports"})
    return {"iteration": it.iteration, "rubric": _criteria(it.rubric), "quality_score": it.quality_score,
            "agreement": it.agreement, "per_criterion_agreement": it.per_criterion_agreement,
            "issues": [i.model_dump(mode="json") for i in it.issues], "issues_fixed": it.issues_fixed,
            "issues_introduced": it.issues_introduced, "accepted": it.accepted,
            "rejection_reason": it.rejection_reason, "revision_error": it.revision_error,
            "completion_cost": it.completion_cost,
            "token_usage": None if it.token_usage is None else asdict(it.token_usage),
            "quality_report": None if it.quality_report is None else it.quality_report.model_dump(mode="json"),
            "held_out_diagnostics": held_out}


class _Artifacts:
    """The files of a run under one folder, or nothing when artifacts are off."""

    def __init__(self, config: ImprovementConfig) -> None:
        self.folder: Path | None = None
        if config.save_artifacts:
            stamp = datetime.now(timezone.utc).strftime("%Y%m%d_%H%M%S")
            self.folder = Path(config.artifacts_dir or Path("experiments") / f"rubric_improvement_{stamp}")
            self.folder.mkdir(parents=True, exist_ok=True)

    def html_path(self, iteration: int) -> Path | None:
        return None if self.folder is None else self.folder / f"eval-iter-{iteration:02d}.html"

    def iteration(self, it: IterationResult, validation: list | None, revision: dict | None) -> None:
        if self.folder is None:
            return
        self._write(f"rubric-iter-{it.iteration:02d}.json", _criteria(it.rubric))
        body = _iteration_json(it)
        if validation:
            body["validation_samples"] = validation
        if revision:
            body["revision"] = revision
        self._write(f"iter-{it.iteration:02d}.json", body)

    def summary(self, body: dict[str, Any]) -> None:
        if self.folder is not None:
            self._write("summary.json", body)

    def _write(self, name: str, body: Any) -> None:
        assert self.folder is not None
        (self.folder / name).write_text(json.dumps(body, indent=2, ensure_ascii=False, default=str), encoding="utf-8")


# ---- the runner ------------------------------------------------------------------------------


def _check_rubric(rubric: Any) -> Rubric:
    if not isinstance(rubric, Rubric):
        raise InputError(f"ImprovementRunner: field 'rubric': expected a Rubric, got {type(rubric).__name__}")
    if not rubric.rubric:
        raise InputError("ImprovementRunner: field 'rubric': the rubric has no criteria")
    multi = [i + 1 for i, c in enumerate(rubric.rubric) if c.options]
    if multi:
        raise InputError(f"ImprovementRunner: field 'rubric': criteria {multi} are multi-choice; improvement "
                         "revises binary criteria only")
    return rubric


class ImprovementRunner:
    """Runs the rubric-improvement loop (AutoRubric 1.6.1: ``autorubric.meta.ImprovementRunner``).

    Parameters
    ----------
    rubric : Rubric
        Binary criteria.
    task_prompt : str, optional
        The task the rubric grades; required with ``mode="in_context"``.
    config : ImprovementConfig, keyword-only
        Required (AutoRubric's default None raises too).

    Raises
    ------
    InputError
        No config, a rubric that is not a non-empty binary :class:`Rubric`, ``in_context``
        without a task prompt, validation items of which only some have ground truth,
        agreement validation without >= 2 judges, or ``"held_out"`` without ground truth on
        every validation item.

    Examples
    --------
    >>> runner = ImprovementRunner(rubric, "Write a haiku", config=config)  # doctest: +SKIP
    >>> result = asyncio.run(runner.run())  # doctest: +SKIP
    """

    def __init__(self, rubric: Rubric, task_prompt: str | None = None, *,
                 config: ImprovementConfig | None = None) -> None:
        if not isinstance(config, ImprovementConfig):
            raise InputError("ImprovementRunner: field 'config': an ImprovementConfig is required")
        self.rubric = _check_rubric(rubric)
        self.task_prompt = task_prompt
        self.config = config
        self._check_validation()

    def _check_validation(self) -> None:
        config, data = self.config, self.config.validation_data
        if config.strategy == "meta_rubric" and config.mode == "in_context" and not self.task_prompt:
            raise InputError("ImprovementRunner: field 'task_prompt': required with mode='in_context' "
                             "(or use mode='standalone')")
        if data is None:
            if config.strategy == "held_out":
                raise InputError("ImprovementRunner: field 'validation_data': required with strategy='held_out'")
            return
        if not data.items:
            raise InputError("ImprovementRunner: field 'validation_data': the dataset has no items")
        with_truth = [item.ground_truth is not None for item in data.items]
        if config.strategy == "held_out" and not all(with_truth):
            raise InputError(f"ImprovementRunner: field 'validation_data': strategy='held_out' needs ground truth "
                             f"on every item; item {with_truth.index(False)} has none")
        if any(with_truth) and not all(with_truth):
            raise InputError("ImprovementRunner: field 'validation_data': either every item has ground truth "
                             f"(correlation) or none has (judge agreement); item {with_truth.index(False)} has none")
        if not any(with_truth) and (not isinstance(config.eval_llm, list) or len(config.eval_llm) < 2):
            raise InputError("ImprovementRunner: field 'eval_llm': validation items without ground truth are "
                             "measured by judge agreement, which needs a list of >= 2 JudgeSpec")

    def _grader(self) -> CriterionGrader:
        llm = self.config.eval_llm
        return CriterionGrader(judges=llm) if isinstance(llm, list) else CriterionGrader(llm_config=llm)

    def _display(self) -> ImprovementProgressDisplay:
        config = self.config
        if config.show_progress:
            return ImprovementProgressDisplay()
        if config.display == "stdout":
            from rich.console import Console

            return ImprovementProgressDisplay(console=Console(soft_wrap=True))
        return ImprovementProgressDisplay(enabled=False)

    async def run(self) -> ImprovementResult:
        """Run the loop of ``config.strategy``.

        Returns
        -------
        ImprovementResult

        Raises
        ------
        EngineError
            A meta-rubric evaluation or a ground-truth grade failed.
        """
        if self.config.strategy == "held_out":
            return await self._run_held_out()
        return await self._run_meta_rubric()

    async def _quality(self, rubric: Rubric, html_path: Path | None) -> EnsembleEvaluationReport:
        config = self.config
        display: Literal["stdout", "html"] | None = "html" if html_path is not None else (
            "stdout" if config.display == "stdout" else None)
        if config.mode == "in_context":
            assert self.task_prompt is not None
            report = await evaluate_rubric_in_context(rubric, self.task_prompt, config.meta_judge, display=display,
                                                      output_html_path=html_path)
        else:
            report = await evaluate_rubric_standalone(rubric, config.meta_judge, display=display,
                                                      output_html_path=html_path)
        if report.score is None:
            raise EngineError(f"the meta-rubric evaluation failed, so the rubric has no quality score: {report.error}")
        return report

    async def _validate(self, rubric: Rubric, expected: list[float] | None, grader: CriterionGrader | None,
                        progress: ImprovementProgressDisplay, capture: list | None,
                        ) -> tuple[float | None, dict[str, float] | None, str, float]:
        """(agreement, per-criterion agreement, prompt section, cost) of one validation."""
        data = self.config.validation_data
        if data is None or grader is None:
            return None, None, "", 0.0
        if expected is not None:
            reports: list = []
            correlation, per_item, cost = await validate_ground_truth(
                rubric, data, expected, grader, task_prompt=self.task_prompt, on_item_complete=progress.advance,
                _capture=capture, _item_reports=reports)
            text = format_ground_truth_for_prompt(correlation, per_item, item_reports=reports)
            return correlation, None, text, cost or 0.0
        assert isinstance(self.config.eval_llm, list)
        agreement, per_criterion, cost = await validate_agreement(
            rubric, [item.submission for item in data.items], self.config.eval_llm, task_prompt=self.task_prompt,
            on_sample_complete=progress.advance, _capture=capture)
        return agreement, per_criterion, format_agreement_for_prompt(per_criterion), cost or 0.0

    async def _run_meta_rubric(self) -> ImprovementResult:
        config, data = self.config, self.config.validation_data
        artifacts = _Artifacts(config)
        progress = self._display()
        expected = compute_expected_scores(data) if data is not None and data.items[0].ground_truth is not None \
            else None
        grader = self._grader() if data is not None else None
        steps = 1 + (len(data.items) if data is not None else 0)
        state = _Stopping()
        iterations: list[IterationResult] = []
        rubric, last_accepted = self.rubric, self.rubric
        accepted_agreement: float | None = None
        total_cost = 0.0
        best: tuple[float, int, Rubric] = (-math.inf, 0, self.rubric)
        reason = "max_iterations"
        for n in range(config.max_iterations):
            validation_capture: list | None = [] if artifacts.folder else None
            revision_capture: dict | None = {} if artifacts.folder else None
            progress.begin_iteration(n, config.max_iterations, steps)
            try:
                report = await self._quality(rubric, artifacts.html_path(n))
                progress.advance("validating" if data is not None else "done")
                agreement, per_criterion, validation_text, validation_cost = await self._validate(
                    rubric, expected, grader, progress, validation_capture)
            finally:
                progress.end_iteration()
            issues = extract_issues(report)
            fixed, introduced = diff_issues(iterations[-1].issues if iterations else [], issues)
            accepted, rejection = pareto_accept(agreement, accepted_agreement, config.reject_agreement_regression,
                                                state.rejections_in_a_row)
            if accepted:
                state.rejections_in_a_row, accepted_agreement, last_accepted = 0, agreement, rubric
            else:
                state.rejections_in_a_row += 1
            cost = (report.completion_cost or 0.0) + validation_cost
            total_cost += cost
            it = IterationResult(iteration=n, rubric=rubric, quality_score=report.score,  # type: ignore[arg-type]
                                 agreement=agreement, per_criterion_agreement=per_criterion, issues=issues,
                                 issues_fixed=fixed, issues_introduced=introduced, accepted=accepted,
                                 rejection_reason=rejection, quality_report=report, token_usage=report.token_usage,
                                 completion_cost=cost or None)
            iterations.append(it)
            progress.log_iteration(it)
            if len(iterations) >= 2:
                progress.log_rubric_diff(iterations[-2].rubric, rubric, n)
            else:
                progress.log_rubric(rubric, n)
            progress.log_issues_table(issues, rubric=rubric)
            combined = it.quality_score if agreement is None else (it.quality_score + agreement) / 2
            if accepted and combined > best[0]:
                best = (combined, n, rubric)
            stop = config.convergence_fn(it, list(iterations)) if config.convergence_fn is not None else \
                _meta_rubric_stop(it, config, state, total_cost)
            if stop is not None:
                reason = stop
                artifacts.iteration(it, validation_capture, None)
                break
            history = build_revision_history(iterations, config.history_window)
            revised = await self._revise(revise_rubric(last_accepted, self.task_prompt, issues, validation_text, history,
                                                       config, _capture=revision_capture),
                                         iterations, progress, artifacts, validation_capture, revision_capture)
            if revised is None:
                reason = "revision_failed"
                break
            rubric, revision_cost = revised
            total_cost += revision_cost or 0.0
        progress.log_convergence(reason)
        mode = None if data is None else "ground_truth" if expected is not None else "multi_judge"
        return self._finish(iterations, best, reason, total_cost, artifacts, progress, {"validation_mode": mode})

    async def _run_held_out(self) -> ImprovementResult:
        config, data = self.config, self.config.validation_data
        assert data is not None
        artifacts = _Artifacts(config)
        progress = self._display()
        grader = self._grader()
        state = _Stopping()
        iterations: list[IterationResult] = []
        rubric = self.rubric
        total_cost = 0.0
        best: tuple[float, int, Rubric] = (-math.inf, 0, self.rubric)
        reason = "max_iterations"
        for n in range(config.max_iterations):
            validation_capture: list | None = [] if artifacts.folder else None
            revision_capture: dict | None = {} if artifacts.folder else None
            progress.begin_iteration(n, config.max_iterations, len(data.items))
            try:
                held_out = await validate_held_out(
                    rubric, data, grader, task_prompt=self.task_prompt,
                    max_exemplars_per_criterion=config.max_exemplars_per_criterion,
                    cannot_assess=config.cannot_assess, on_item_complete=progress.advance,
                    _capture=validation_capture)
            finally:
                progress.end_iteration()
            cost = held_out.total_cost or 0.0
            total_cost += cost
            it = IterationResult(iteration=n, rubric=rubric, quality_score=held_out.mean_accuracy, agreement=None,
                                 per_criterion_agreement=None, issues=[], issues_fixed=[], issues_introduced=[],
                                 accepted=True, rejection_reason=None, quality_report=None, token_usage=None,
                                 completion_cost=cost or None, held_out_diagnostics=held_out)
            iterations.append(it)
            progress.log_held_out_iteration(it)
            if len(iterations) >= 2:
                progress.log_rubric_diff(iterations[-2].rubric, rubric, n)
            else:
                progress.log_rubric(rubric, n)
            if it.quality_score > best[0]:
                best = (it.quality_score, n, rubric)
            stop = config.convergence_fn(it, list(iterations)) if config.convergence_fn is not None else \
                _held_out_stop(it, config, state, total_cost)
            if stop is not None:
                reason = stop
                artifacts.iteration(it, validation_capture, None)
                break
            diagnostics = format_held_out_for_prompt(held_out,
                                                     max_exemplars_per_criterion=config.max_exemplars_per_criterion)
            history = build_revision_history(iterations, config.history_window)
            revised = await self._revise(revise_rubric_held_out(rubric, self.task_prompt, diagnostics, history, config,
                                                                _capture=revision_capture),
                                         iterations, progress, artifacts, validation_capture, revision_capture)
            if revised is None:
                reason = "revision_failed"
                break
            rubric, revision_cost = revised
            total_cost += revision_cost or 0.0
        progress.log_convergence(reason)
        return self._finish(iterations, best, reason, total_cost, artifacts, progress, {"strategy": "held_out"},
                            held_out=True)

    async def _revise(self, revision: Awaitable[tuple[Rubric, float | None]], iterations: list[IterationResult],
                      progress: ImprovementProgressDisplay, artifacts: _Artifacts, validation_capture: Any,
                      revision_capture: Any) -> tuple[Rubric, float | None] | None:
        """Await the last iteration's revision (``revise_rubric`` or ``revise_rubric_held_out``)
        and write the iteration's artifacts. A revision that is not a rubric, or a revision
        model that failed, is recorded on the iteration (``revision_error``) and gives None: the
        loop stops with ``"revision_failed"``."""
        it = iterations[-1]
        try:
            with progress.phase(it.iteration, self.config.max_iterations, "revising the rubric"):
                revised = await revision
        except (InputError, EngineError) as exc:
            iterations[-1] = replace(it, revision_error=str(exc))
            artifacts.iteration(iterations[-1], validation_capture, revision_capture)
            return None
        artifacts.iteration(it, validation_capture, revision_capture)
        return revised

    def _finish(self, iterations: list[IterationResult], best: tuple[float, int, Rubric], reason: str,
                total_cost: float, artifacts: _Artifacts, progress: ImprovementProgressDisplay,
                extra: dict[str, Any], *, held_out: bool = False) -> ImprovementResult:
        """The one place an :class:`ImprovementResult` is built (and ``summary.json`` written)."""
        _, best_iteration, best_rubric = best
        result = ImprovementResult(original_rubric=self.rubric, final_rubric=best_rubric, iterations=iterations,
                                   best_rubric=best_rubric, best_iteration=best_iteration, convergence_reason=reason,
                                   total_completion_cost=total_cost if total_cost > 0 else None)
        config = self.config
        artifacts.summary({
            **extra, "original_rubric": _criteria(self.rubric), "final_rubric": _criteria(best_rubric),
            "task_prompt": self.task_prompt, "convergence_reason": reason, "best_iteration": best_iteration,
            "total_iterations": len(iterations), "total_completion_cost": result.total_completion_cost,
            "config": {"strategy": config.strategy, "mode": config.mode, "max_iterations": config.max_iterations,
                       "eval_llm_model": config.meta_judge.model, "revision_llm_model": config.revision_llm.model},
            "iterations_summary": [{"iteration": it.iteration, "quality_score": it.quality_score,
                                    "agreement": it.agreement, "num_issues": len(it.issues),
                                    "accepted": it.accepted, "rejection_reason": it.rejection_reason,
                                    "revision_error": it.revision_error} for it in iterations]})
        summary = progress.print_held_out_summary if held_out else progress.print_summary
        summary(iterations, reason, total_cost, artifacts.folder)
        return result


async def improve_rubric(
    rubric: Rubric,
    task_prompt: str | None = None,
    *,
    config: ImprovementConfig | None = None,
    eval_llm: LLMConfig | list[JudgeSpec] | None = None,
    revision_llm: LLMConfig | None = None,
    validation_data: RubricDataset | None = None,
    max_iterations: int | None = None,
    display: Literal["stdout", "html", None] = None,
    artifacts_dir: Path | str | None = None,
    save_artifacts: bool | None = None,
    show_progress: bool | None = None,
    mode: Mode | None = None,
    max_total_cost: float | None = None,
    strategy: Strategy | None = None,
) -> ImprovementResult:
    """Improve ``rubric`` in a loop of evaluation, validation and LLM revision.

    AutoRubric 1.6.1: ``autorubric.meta.improve_rubric``, the short form of
    :class:`ImprovementRunner`; the loop and its stopping rules are described in
    :mod:`autorubric_local.meta.loop`. The keywords that are not None override the fields of
    ``config`` (or, without one, make the config: ``eval_llm`` and ``revision_llm`` are then
    required).

    Parameters
    ----------
    rubric : Rubric
    task_prompt : str, optional
        Required with ``mode="in_context"`` (the default).
    config : ImprovementConfig, optional
    eval_llm, revision_llm, validation_data, max_iterations, display, artifacts_dir,
    save_artifacts, show_progress, mode, max_total_cost, strategy : optional
        :class:`ImprovementConfig` fields.

    Returns
    -------
    ImprovementResult

    Raises
    ------
    InputError
        Neither ``config`` nor both LLMs, or as :class:`ImprovementConfig` and
        :class:`ImprovementRunner`.
    EngineError
        As :meth:`ImprovementRunner.run`.

    Examples
    --------
    >>> result = asyncio.run(improve_rubric(rubric, "Write a haiku", eval_llm=judge,
    ...                                     revision_llm=writer, save_artifacts=False))  # doctest: +SKIP
    >>> result.best_rubric, result.convergence_reason  # doctest: +SKIP
    """
    overrides = {name: value for name, value in (
        ("eval_llm", eval_llm), ("revision_llm", revision_llm), ("validation_data", validation_data),
        ("max_iterations", max_iterations), ("display", display), ("artifacts_dir", artifacts_dir),
        ("save_artifacts", save_artifacts), ("show_progress", show_progress), ("mode", mode),
        ("max_total_cost", max_total_cost), ("strategy", strategy)) if value is not None}
    if config is None:
        if eval_llm is None or revision_llm is None:
            raise InputError("improve_rubric: pass config=, or both eval_llm= and revision_llm=")
        config = ImprovementConfig(**overrides)
    elif overrides:
        config = replace(config, **overrides)
    return await ImprovementRunner(rubric, task_prompt, config=config).run()
