"""Run planned judgment tasks through their judges' engines, the whole workload at once.

Three ways to judge, all ending in a label distribution read from log-probabilities:

- ``score``: prefill only; the verdict is the argmax of the label distribution.
- ``explain`` (verdict first): score, then generate a constrained explanation conditioned on
  the chosen verdict (``{"criterion_status": "MET", "explanation": "..."}``).
- reasoning first (``explanation_first=True`` or ``LLMConfig.thinking``): generate the
  explanation, then read the verdict distribution after it
  (``{"explanation": "...", "criterion_status": "..."}``).

Each engine receives one ``score`` call and at most one ``generate`` call per stage with all of
its tasks, so it can batch and share prefixes across the whole job.

An engine that answers a judgment's verdict and explanation in one call (``whole_judgment``,
:class:`~autorubric_local.engine.capabilities.EngineCapabilities`: a hosted judge answers a
whole structured turn) gets one ``score`` call per judgment in every mode and no ``generate``
call; the explanation comes with the verdict (``LabelScores.explanation``). Reasoning first, its
one answer gives both the reasoning and the verdict after it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from autorubric_local.core import debug
from autorubric_local.core.errors import EngineError
from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.base import (
    Engine,
    EngineContractError,
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
    add_costs,
    checked_count,
    filled,
)
from autorubric_local.engine.requests import AnswerSpec, Step, continued_explanation
from autorubric_local.engine.user_text import plain
from autorubric_local.graders.planning import JudgmentTask
from autorubric_local.graders.prompts import (
    ExplanationStyle,
    explanation_after_verdict,
    explanation_start,
)


class JudgeMode(str, Enum):
    """How a judgment is obtained (see the module docstring)."""

    SCORE = "score"
    EXPLAIN = "explain"


@dataclass(frozen=True)
class JudgmentResult:
    """What the judge said on one task.

    Attributes
    ----------
    probabilities : tuple of float, shape (n_labels,), in *shown* label order; empty on error
    chosen : int or None
        Shown position of the verdict (argmax of ``probabilities``); None on error.
    explanation : str or None
        Generated explanation (explain modes); None in score mode.
    explanation_truncated : bool
    usage : TokenUsage
        Summed over the task's engine calls.
    seconds : float
        Engine wall time of the task, summed over its engine calls.
    error : str or None
        Category-prefixed error of a failed engine call; the judgment has no verdict.
    explanation_error : str or None
        Explain mode, verdict first: the explanation's generation failed while the verdict
        was read; the verdict stands (``error`` stays None) and the explanation is None.
    logprobs : tuple of float, shape (n_labels,), in *shown* label order; empty on error
        The engine's raw natural-log label probabilities (``LabelScores.logprobs``: not
        renormalised, each finite and <= 0); ``probabilities`` is their softmax.
    off_label_mass : float in [0, 1] or None
        ``LabelScores.off_label_mass``: first-step probability outside the labels; None when
        the backend does not report it, and on error.
    prompt_suffix : str or None
        The text after ``task.prefix`` of the last request the judge answered for this
        judgment: the suffix its labels were scored after (reasoning first: the suffix with
        the explanation), or the generation's suffix when that generation failed. None means
        ``task.suffix`` (verdict first). :attr:`prompt` is the whole text.
    one_hot : bool
        ``LabelScores.one_hot``: ``probabilities`` is one-hot on the judge's answer because the
        backend returned no label log-probabilities (a hosted judge without ``top_logprobs``).
    cost_usd : float or None
        USD of the task's engine calls (``LabelScores.cost_usd``, ``Generation.cost_usd``):
        0.0 for a local engine, None when a call's price is unknown.
    """

    task: JudgmentTask
    probabilities: tuple[float, ...]
    chosen: int | None
    explanation: str | None
    explanation_truncated: bool
    usage: TokenUsage
    seconds: float
    error: str | None
    explanation_error: str | None = None
    logprobs: tuple[float, ...] = ()
    off_label_mass: float | None = None
    prompt_suffix: str | None = None
    one_hot: bool = False
    cost_usd: float | None = 0.0

    @property
    def scored_suffix(self) -> str:
        """The suffix of the judgment's prompt (``prompt_suffix``, else ``task.suffix``)."""
        return self.task.suffix if self.prompt_suffix is None else self.prompt_suffix

    @property
    def prompt(self) -> str:
        """The exact prompt text the judge answered: ``task.prefix`` + :attr:`scored_suffix`."""
        return self.task.prefix + self.scored_suffix


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


Spent = tuple[TokenUsage, float, float | None]
"""What engine calls cost: token usage, seconds and USD (None: unknown price)."""


def _spent(call: LabelScores | Generation) -> Spent:
    return call.usage, call.seconds, call.cost_usd


def _add(a: LabelScores | Generation, b: LabelScores | Generation) -> Spent:
    """Usage, seconds and USD of two engine calls together."""
    return a.usage + b.usage, a.seconds + b.seconds, add_costs(a.cost_usd, b.cost_usd)


# Failures of the engine itself (a model or runtime error, out of memory, a backend refusing
# the batch) become error results for every request of the call; programming errors
# (TypeError, AttributeError, ...) and an engine breaking its contract (EngineContractError, an
# AssertionError: another number of results than requests) still raise.
ENGINE_FAILURES: tuple[type[BaseException], ...] = (EngineError, RuntimeError, MemoryError, OSError)


def _score(engine: Engine, requests: list[ScoreRequest]) -> list[LabelScores]:
    if not requests:
        return []
    debug.show_prompts((plain(r.prefix + r.suffix) for r in requests), "judge prompt (score)")
    try:
        return checked_count(engine.score(requests), len(requests), "engine score")
    except ENGINE_FAILURES as exc:
        error = f"infrastructure: engine score call failed: {type(exc).__name__}: {exc}"
        return [LabelScores((), error=error) for _ in requests]


def _generate(engine: Engine, requests: list[GenerateRequest]) -> list[Generation]:
    if not requests:
        return []
    debug.show_prompts((plain(r.prefix + r.suffix) for r in requests), "judge prompt (generate)")
    try:
        return checked_count(engine.generate(requests), len(requests), "engine generate")
    except ENGINE_FAILURES as exc:
        error = f"infrastructure: engine generate call failed: {type(exc).__name__}: {exc}"
        return [Generation("", error=error) for _ in requests]


VERDICT = Step("verdict")
"""The step of every verdict-first score request (one object for all)."""


def verdict_request(task: JudgmentTask, answer: AnswerSpec | None = None) -> ScoreRequest:
    """The verdict-first score request of ``task``, with its structure (``answer``: the
    task's own, :meth:`JudgmentTask.answer`, when not given)."""
    answer = task.answer() if answer is None else answer
    return ScoreRequest(task.prefix, task.suffix, answer.labels(), answer=answer, judgment=task.request(answer, VERDICT))


def run_tasks(
    engine: Engine,
    tasks: Sequence[JudgmentTask],
    *,
    mode: JudgeMode,
    reasoning_first: bool,
    explanation_tokens: int,
    explanation_style: ExplanationStyle = "free",
) -> list[JudgmentResult]:
    """Judge ``tasks`` (all for this engine's judge) and return results in task order.

    Explanations follow ``explanation_style`` (:data:`.prompts.ExplanationStyle`): ``sentence``
    generates one sentence after :data:`.prompts.EXPLANATION_STEM` and the explanation kept is
    the stem plus what the judge wrote.

    Every request carries its structure (``ScoreRequest.judgment``, ``GenerateRequest.judgment``:
    the task's item and block, its answer, and the step: ``verdict``, ``explain`` of the chosen
    value, ``reason`` or ``verdict_after_reason``, the stem as the step's ``start``).

    An engine declaring ``whole_judgment`` is sent only the verdict request of each judgment,
    in every mode: explain mode and reasoning first read the explanation from its answer
    (:func:`_whole`), so a judgment never costs it a second call, whatever the chunk size.

    Raises
    ------
    EngineContractError
        An engine returned another number of results than requests, or declares
        ``whole_judgment`` and returned a verdict without its explanation.
    """
    whole = engine.capabilities.whole_judgment
    if reasoning_first and not whole:
        return _run_reasoning_first(engine, tasks, explanation_tokens, explanation_style)
    answers = [t.answer() for t in tasks]  # one spec per task: its labels and what a hosted judge is asked
    scores = _score(engine, [verdict_request(t, a) for t, a in zip(tasks, answers, strict=True)])
    start = explanation_start(explanation_style)
    if whole and (reasoning_first or mode is JudgeMode.EXPLAIN):
        return [_whole(t, s, start, explanation_style if reasoning_first else None)
                for t, s in zip(tasks, scores, strict=True)]
    results = [_from_scores(t, s, None, False, _spent(s)) for t, s in zip(tasks, scores, strict=True)]
    if mode is JudgeMode.SCORE:
        return results
    pending = [i for i, r in enumerate(results) if r.error is None]
    requests = []
    for i in pending:
        chosen = results[i].chosen or 0
        requests.append(GenerateRequest(
            tasks[i].prefix,
            tasks[i].suffix + explanation_after_verdict(answers[i].labels()[chosen], explanation_style),
            explanation_tokens,
            sentence=explanation_style == "sentence",
            answer=answers[i],
            judgment=tasks[i].request(answers[i], Step("explain", chosen=answers[i].values[chosen], start=start)),
        ))
    generations = _generate(engine, requests)
    for i, generation in zip(pending, generations, strict=True):
        base = results[i]
        results[i] = JudgmentResult(
            task=base.task,
            probabilities=base.probabilities,
            chosen=base.chosen,
            explanation=start + generation.text if generation.error is None else None,
            explanation_truncated=generation.truncated,
            usage=base.usage + generation.usage,
            seconds=base.seconds + generation.seconds,
            cost_usd=add_costs(base.cost_usd, generation.cost_usd),
            error=None,
            explanation_error=generation.error,
            logprobs=base.logprobs,
            off_label_mass=base.off_label_mass,
            one_hot=base.one_hot,
        )
    return results


def from_scores(task: JudgmentTask, scores: LabelScores, explanation: str | None, truncated: bool,
                spent: Spent) -> JudgmentResult:
    """The :class:`JudgmentResult` of ``task`` from an engine's ``scores`` (an error result when
    the scores are an error or invalid, :func:`_invalid`); ``spent`` is :func:`spent` of the calls."""
    return _from_scores(task, scores, explanation, truncated, spent)


def spent(call: LabelScores | Generation) -> Spent:
    """Usage, seconds and USD of one engine call."""
    return _spent(call)


def _whole(task: JudgmentTask, scores: LabelScores, start: str, reasoning: ExplanationStyle | None) -> JudgmentResult:
    """The judgment of an engine that answered verdict and explanation in one call
    (``whole_judgment``): the explanation kept is ``start`` and what the judge wrote after it
    (:func:`~autorubric_local.engine.requests.continued_explanation`), the call's usage and
    price counted once. Verdict first (``reasoning`` None) a judgment without a verdict keeps
    no explanation; reasoning first (``reasoning`` the style) the explanation is kept whenever
    the answer held one, and the suffix recorded is the one with it (the open one without),
    as when the reasoning and the verdict after it are asked for apart.

    Raises
    ------
    EngineContractError
        A verdict came back without the explanation the engine declared it answers with.
    """
    if scores.explanation is None and scores.error is None:
        raise EngineContractError("engine declares whole_judgment but returned a verdict without its explanation "
                                  "(LabelScores.explanation is None)")
    written = scores.explanation
    explanation = None if written is None else start + continued_explanation(start, written)
    if reasoning is None:
        result = _from_scores(task, scores, None, False, _spent(scores))
        return result if result.error is not None else dataclasses.replace(result, explanation=explanation)
    result = _from_scores(task, scores, explanation, False, _spent(scores))
    return dataclasses.replace(result, prompt_suffix=task.reasoning_suffix(explanation, reasoning))


def _run_reasoning_first(
    engine: Engine, tasks: Sequence[JudgmentTask], explanation_tokens: int, style: ExplanationStyle
) -> list[JudgmentResult]:
    sentence = style == "sentence"
    answers = [t.answer() for t in tasks]
    start = explanation_start(style)
    reason = Step("reason", start=start)
    generations = _generate(
        engine,
        [GenerateRequest(t.prefix, t.reasoning_suffix(None, style), explanation_tokens, sentence=sentence,
                         answer=a, judgment=t.request(a, reason)) for t, a in zip(tasks, answers, strict=True)],
    )
    results: list[JudgmentResult | None] = [None] * len(tasks)
    ok = [i for i, g in enumerate(generations) if g.error is None]
    for i, generation in enumerate(generations):
        if generation.error is not None:
            results[i] = JudgmentResult(
                tasks[i], (), None, None, False, generation.usage, generation.seconds, generation.error,
                prompt_suffix=tasks[i].reasoning_suffix(None, style), cost_usd=generation.cost_usd,
            )
    requests = []
    for i in ok:
        explanation = start + generations[i].text
        requests.append(ScoreRequest(
            tasks[i].prefix, tasks[i].reasoning_suffix(explanation), answers[i].labels(True), answer=answers[i],
            judgment=tasks[i].request(answers[i], Step("verdict_after_reason", explanation=explanation)),
        ))
    scores = _score(engine, requests)
    for i, request, score in zip(ok, requests, scores, strict=True):
        g = generations[i]
        scored = _from_scores(tasks[i], score, start + g.text, g.truncated, _add(g, score))
        results[i] = dataclasses.replace(scored, prompt_suffix=request.suffix)
    return filled(results, "reasoning-first judgments")


def _from_scores(
    task: JudgmentTask,
    scores: LabelScores,
    explanation: str | None,
    truncated: bool,
    spent: Spent,
) -> JudgmentResult:
    usage, seconds, cost_usd = spent
    error = scores.error or _invalid(scores)
    if error is not None:
        return JudgmentResult(task, (), None, explanation, truncated, usage, seconds, error, cost_usd=cost_usd)
    probabilities = scores.probabilities
    return JudgmentResult(
        task, probabilities, _argmax(probabilities), explanation, truncated, usage, seconds, None,
        logprobs=tuple(scores.logprobs), off_label_mass=scores.off_label_mass, one_hot=scores.one_hot,
        cost_usd=cost_usd,
    )


def _invalid(scores: LabelScores) -> str | None:
    """Why an engine's answer cannot be a verdict (an ``unknown:`` error), or None.

    Log-probabilities must be present, finite and <= 0, and ``off_label_mass`` None or in
    [0, 1]: anything else is a backend bug, recorded on the judgment rather than turned into
    a verdict (or into a report that cannot be stored).
    """
    if not scores.logprobs:
        return "unknown: engine returned no label scores"
    if not all(math.isfinite(lp) and lp <= 0.0 for lp in scores.logprobs):
        values = list(scores.logprobs)
        return f"unknown: engine returned label log-probabilities that are not all finite and <= 0: {values}"
    mass = scores.off_label_mass
    if mass is not None and not (math.isfinite(mass) and 0.0 <= mass <= 1.0):
        return f"unknown: engine returned an off-label mass outside [0, 1]: {mass}"
    return None
