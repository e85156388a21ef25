"""Contextual calibration in grading: content-free judgments, label priors, corrected results.

The *context* of a planned judgment is its prompt without the submission: the judge (chat
template and system prompt), the item's question and reference, and the criterion block (few-shot
examples, the criterion, its options in the order shown) with the labels scored. For every
distinct context the grader needs, one content-free task per content-free input
(:data:`.contextual.CONTENT_FREE_INPUTS`) is planned: the very same task with the submission
replaced by that input, so it is scored exactly like the real judgments (same prompt, same
criterion, same option order or rotation) and runs in the same engine workload. Their label
distributions give the context's prior ``p_cf`` (:func:`.contextual.content_free_log_prior`), and
each real judgment in that context is corrected with it (:func:`.contextual.contextual_correction`):
its verdict is read from the corrected distribution and its own distribution is kept beside it.

A prior is identified by ``prior_id``, ``sha256:v1:<hex>`` of the judge id and the exact
content-free prompts scored (prefix, suffix, labels of each input), so equal contexts share one
prior across items, chunks and resumed runs. If a content-free judgment fails, the context has no
prior and each real judgment in it becomes an error judgment (never an uncorrected verdict
passed off as a corrected one).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace

from autorubric_local.core.errors import InputError
from autorubric_local.core.text import unicode_problem, utf8
from autorubric_local.core.types import Criterion
from autorubric_local.engine.user_text import marker_problem
from autorubric_local.graders.contextual import (
    CONTENT_FREE_INPUTS,
    content_free_log_prior,
    contextual_correction,
)
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.graders.planning import GradeItem, JudgmentTask
from autorubric_local.graders.prompts import PromptParts

__all__ = [
    "CONTENT_FREE_ITEM",
    "CalibratedResult",
    "ContentFreePlan",
    "ContextualPrior",
    "calibrate",
    "check_content_free_inputs",
    "estimate_priors",
    "plan_content_free",
]

CONTENT_FREE_ITEM = -1
"""``item_index`` of content-free tasks (they belong to no item)."""

RenderPrefix = Callable[[int, str, str | None, str | None], PromptParts]
"""``render(judge_index, submission, query, reference_submission)``: that judge's item prefix,
with the item it renders (a content-free task's ``parts``: its text and its structure)."""


@dataclass(frozen=True)
class ContextualPrior:
    """One context's label prior, estimated from its content-free judgments.

    Attributes
    ----------
    prior_id : str
        ``sha256:v1:<hex>`` (module docstring).
    judge_id : str
    criterion : Criterion
        The criterion as judged (with the NA option when the grader adds one).
    option_order : tuple of int or None
        Shown position -> original option index; None for binary criteria.
    inputs : tuple of str, shape (n_inputs,)
        The content-free submissions judged.
    logprobs : tuple of tuple of float, shape (n_inputs, n_labels)
        Each content-free judgment's raw label log-probabilities, in shown label order (an
        empty tuple for a judgment that failed).
    log_prior : tuple of float, shape (n_labels,)
        ``log p_cf`` in shown label order; empty when ``error`` is set.
    error : str or None
        Why there is no prior (a content-free judgment failed), category-prefixed.
    """

    prior_id: str
    judge_id: str
    criterion: Criterion
    option_order: tuple[int, ...] | None
    inputs: tuple[str, ...]
    logprobs: tuple[tuple[float, ...], ...]
    log_prior: tuple[float, ...]
    error: str | None = None

    @property
    def probabilities(self) -> tuple[float, ...]:
        """``p_cf`` in shown label order (empty when ``error`` is set)."""
        return tuple(math.exp(v) for v in self.log_prior)


@dataclass(frozen=True)
class CalibratedResult(JudgmentResult):
    """A judgment corrected by its context's prior.

    ``probabilities`` holds the corrected distribution and ``chosen`` its argmax (the verdict);
    ``uncalibrated`` holds the judge's own renormalised distribution (shown order), and
    ``prior`` the prior used. When the prior could not be estimated, ``error`` says so and
    there is no verdict (``uncalibrated`` still holds what the judge said).
    """

    uncalibrated: tuple[float, ...] = ()
    prior: ContextualPrior | None = None


@dataclass(frozen=True)
class ContentFreePlan:
    """The content-free side of a grading job.

    Attributes
    ----------
    prior_ids : list of str, shape (n_tasks,)
        The prior of each real task, in task order.
    tasks : dict of str to list of JudgmentTask
        The content-free tasks still to run (one per input), by prior id; contexts whose
        prior is already known are left out.
    """

    prior_ids: list[str]
    tasks: dict[str, list[JudgmentTask]]

    def all_tasks(self) -> list[JudgmentTask]:
        """Every content-free task to run, in plan order."""
        return [task for tasks in self.tasks.values() for task in tasks]


def check_content_free_inputs(enabled: bool, inputs: Sequence[str] | None) -> tuple[str, ...]:
    """The grader's content-free inputs, validated (the defaults when ``inputs`` is None).

    Raises
    ------
    InputError
        Inputs given without contextual calibration, none, duplicates, not strings, or text
        that cannot be judged (a lone surrogate or a reserved marker character).
    """
    if inputs is None:
        return CONTENT_FREE_INPUTS
    where = "CriterionGrader: content_free_inputs"
    if not enabled:
        raise InputError(f"{where} needs contextual_calibration=True")
    chosen = tuple(inputs)
    if isinstance(inputs, str) or not chosen or not all(isinstance(text, str) for text in chosen):
        raise InputError(f"{where} must be a non-empty list of strings, got {inputs!r}")
    if len(set(chosen)) != len(chosen):
        raise InputError(f"{where} has duplicates: {list(chosen)}")
    for index, text in enumerate(chosen):
        problem = unicode_problem(text) or marker_problem(text)
        if problem is not None:
            raise InputError(f"{where}[{index}]: {problem}")
    return chosen


def _prior_id(judge_id: str, tasks: Sequence[JudgmentTask]) -> str:
    payload = [judge_id, [[t.prefix, t.suffix, list(t.labels())] for t in tasks]]
    digest = hashlib.sha256(utf8(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))).hexdigest()
    return f"sha256:v1:{digest}"


def plan_content_free(
    tasks: Sequence[JudgmentTask],
    items: Sequence[GradeItem],
    judge_ids: Sequence[str],
    render: RenderPrefix,
    inputs: Sequence[str],
    known: Mapping[str, ContextualPrior] | None = None,
) -> ContentFreePlan:
    """Plan the content-free tasks of ``tasks`` (pure: renders prompts, runs nothing).

    Parameters
    ----------
    tasks : sequence of JudgmentTask
        The job's real tasks (``task.item_index`` indexes ``items``).
    items : sequence of GradeItem
    judge_ids : sequence of str
        ``judge_ids[task.judge_index]`` names the task's judge.
    render : callable
        ``render(judge_index, submission, query, reference_submission)`` renders that judge's
        item prefix exactly as planning does (:func:`.prompts.render_item`).
    inputs : sequence of str
        The content-free submissions.
    known : mapping of prior id to ContextualPrior, optional
        Priors estimated before (earlier chunks): not planned again.

    Returns
    -------
    ContentFreePlan
    """
    known = known or {}
    by_context: dict[tuple[object, ...], str] = {}
    rendered: dict[tuple[int, str, str | None, str | None], PromptParts] = {}
    plan = ContentFreePlan(prior_ids=[], tasks={})
    for task in tasks:
        item = items[task.item_index]
        context = (task.judge_index, item.query, item.reference_submission, task.criterion_block,
                   task.turn_switch, task.labels())
        prior_id = by_context.get(context)
        if prior_id is None:
            planned = []
            for text in inputs:
                key = (task.judge_index, text, item.query, item.reference_submission)
                if key not in rendered:
                    rendered[key] = render(*key)
                parts = rendered[key]
                planned.append(replace(task, item_index=CONTENT_FREE_ITEM, parts=parts))
            prior_id = _prior_id(judge_ids[task.judge_index], planned)
            by_context[context] = prior_id
            if prior_id not in known:
                plan.tasks[prior_id] = planned
        plan.prior_ids.append(prior_id)
    return plan


def estimate_priors(
    plan: ContentFreePlan,
    results: Sequence[JudgmentResult],
    judge_ids: Sequence[str],
    inputs: Sequence[str],
) -> dict[str, ContextualPrior]:
    """The priors of ``plan``'s content-free tasks from their ``results`` (in the order of
    :meth:`ContentFreePlan.all_tasks`).

    Raises
    ------
    ValueError
        If ``results`` does not hold one result per planned content-free task.
    """
    expected = sum(len(tasks) for tasks in plan.tasks.values())
    if len(results) != expected:
        raise ValueError(f"{len(results)} content-free results for {expected} content-free tasks")
    priors: dict[str, ContextualPrior] = {}
    position = 0
    for prior_id, tasks in plan.tasks.items():
        judged = results[position : position + len(tasks)]
        position += len(tasks)
        first = tasks[0]
        failed = [(text, r.error) for text, r in zip(inputs, judged, strict=True)
                  if r.error is not None or not r.logprobs]
        error = None
        log_prior: tuple[float, ...] = ()
        if failed:
            text, message = failed[0]
            message = message or "unknown: no label scores"
            category = message.split(":", 1)[0] if ":" in message else "unknown"
            error = (f"{category}: contextual calibration has no label prior: the content-free input "
                     f"{text!r} failed: {message}")
        else:
            log_prior = tuple(content_free_log_prior([r.logprobs for r in judged]))
        priors[prior_id] = ContextualPrior(
            prior_id=prior_id,
            judge_id=judge_ids[first.judge_index],
            criterion=first.criterion,
            option_order=first.option_order,
            inputs=tuple(inputs),
            logprobs=tuple(tuple(r.logprobs) for r in judged),
            log_prior=log_prior,
            error=error,
        )
    return priors


def _argmax(values: Sequence[float]) -> int:
    """First index of the largest value (the tie rule of :mod:`.execution`)."""
    return max(range(len(values)), key=lambda i: (values[i], -i))


def calibrate(result: JudgmentResult, prior: ContextualPrior) -> CalibratedResult:
    """``result`` corrected by ``prior``: the verdict read from the corrected distribution.

    A failed ``result`` stays failed (with the prior attached); a ``prior`` with an error makes
    the judgment an error judgment saying why (its own distribution kept in ``uncalibrated``).
    """
    base = {f.name: getattr(result, f.name) for f in fields(JudgmentResult)}
    if result.error is not None or result.chosen is None:
        return CalibratedResult(**base, prior=prior)
    if prior.error is not None:
        base.update(probabilities=(), chosen=None, error=prior.error)
        return CalibratedResult(**base, uncalibrated=result.probabilities, prior=prior)
    corrected = tuple(contextual_correction(result.logprobs, prior.log_prior))
    base.update(probabilities=corrected, chosen=_argmax(corrected))
    return CalibratedResult(**base, uncalibrated=result.probabilities, prior=prior)
