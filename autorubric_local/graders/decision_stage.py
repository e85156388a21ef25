"""Decision-model judges inside :class:`~autorubric_local.graders.CriterionGrader` (issue 53).

AutoRubric 1.6.1 lets a judge be a decision model (``JudgeSpec(DecisionModelConfig(...), id)``,
``judge_model_config=DecisionModelConfig(...)``, the first stage of a confidence cascade;
``docs/cookbook/decision-models.md``). Here a decision model asks one System One request per
item for the whole rubric (:class:`~autorubric_local.judges.decision.DecisionModelJudge`), the
items of a batch in flight together (``max_parallel_requests`` at once, 8 when None), and each
criterion's answer becomes an ordinary :class:`~autorubric_local.graders.execution.JudgmentResult`,
assembled into votes and reports as an LLM judge's are:

- ``probabilities`` in the shown label order of the criterion (``MET``, ``UNMET``,
  ``CANNOT_ASSESS``; a multi-choice criterion's options in their own order: a decision model
  sees no option order, so nothing is shuffled), 0.0 for an outcome the question did not offer;
  ``chosen`` the decision model's own verdict (its ``decision_threshold`` on P(yes), not the
  argmax); no ``logprobs``;
- the vote's ``label_probabilities`` hold only the outcomes the question offered
  (:func:`offered_labels`), so its ``confidence`` is the decision model's own
  (``selection_confidence`` over K offered outcomes, AutoRubric's rule): a yes/no answer has
  K = 2, not the 3 of an LLM's binary labels;
- the request's input tokens, price and wall time are counted on the item's first criterion,
  so an item's and a run's totals are the request's;
- the task's ``prefix`` is the request as JSON (state and questions), what inspection shows as
  the judgment's prompt; it is never sent to a language model.

A failed request fails every criterion of its item with its categorised error; an unusable
answer fails its own criterion (never a verdict). In an ensemble beside LLM judges, the LLM
judges' tasks are planned and scored as always and the decision models' results join them
before the votes are combined. Stored runs (``EvalRunner``) record a decision-model judge with
:func:`decision_engine_record`. With ``cache_enabled`` each judge caches under its own id. A
judges file (:mod:`.panel_file`) names one with a ``decision_model`` entry.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import JudgeVote, MultiChoiceJudgeVote, TokenUsage
from autorubric_local.core.types import Criterion
from autorubric_local.engine.capabilities import DESCRIPTIONS
from autorubric_local.engine.requests import ItemPrompt, PromptParts
from autorubric_local.graders.assembly import binary_vote, choice_vote
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.graders.judge_spec import JudgeSpec
from autorubric_local.graders.planning import JudgmentTask
from autorubric_local.graders.prompts import BINARY_LABELS
from autorubric_local.judges.decision import (
    DecisionItemResult,
    DecisionModelConfig,
    DecisionModelJudge,
    DecisionOutcome,
    decision_questions,
    decision_state,
    question_kind,
)

__all__ = ["DECISION_BACKEND", "DEFAULT_PARALLEL", "DecisionClients", "decision_engine_record", "decision_judge_ids", "decision_results", "decision_vote",
           "describe_decision_judge", "offered_labels", "refuse_decision_judges",
           "refuse_decision_settings"]

DECISION_BACKEND = "decision-model"
"""The ``backend`` a run's judges record gives a decision-model judge."""

DEFAULT_PARALLEL = 8
"""Requests in flight at once for a decision model whose ``max_parallel_requests`` is None."""

Key = tuple[int, int, int]
"""(item index, criterion index, judge index) of a judgment, as the grader keys its results."""


def decision_judge_ids(judges: Sequence[JudgeSpec]) -> list[str]:
    """Ids of the judges whose ``llm_config`` is a :class:`DecisionModelConfig`, in order."""
    return [j.judge_id for j in judges if isinstance(j.llm_config, DecisionModelConfig)]


def refuse_decision_judges(judges: Sequence[JudgeSpec], what: str, why: str) -> None:
    """Refuse decision-model judges where ``what`` cannot use them.

    Raises
    ------
    InputError
        Naming the decision-model judges, ``what`` and ``why``.
    """
    ids = decision_judge_ids(judges)
    if ids:
        raise InputError(f"{what}: judges {ids} are decision models (DecisionModelConfig); {why}")


def refuse_decision_settings(judges: Sequence[JudgeSpec], every_judge: Sequence[JudgeSpec],
                             always: Mapping[str, bool], prompt_settings: Mapping[str, bool]) -> None:
    """Refuse a grader with decision-model judges and what is not built for them.

    Parameters
    ----------
    judges : sequence of JudgeSpec
        The grader's own judges (a cascade's first stage). Nothing is refused without a decision
        model among them.
    every_judge : sequence of JudgeSpec
        Every judge the grader may use, a cascade's escalation judges included.
    always : mapping of str to bool
        A setting's name (as the message shows it) to whether it is on; one on is refused
        (settings that change which judgments are planned: a decision model asks each criterion
        once, in its own option order).
    prompt_settings : mapping of str to bool
        LLM prompt settings; one on is refused only when every judge of ``every_judge`` is a
        decision model (otherwise the LLM judges use it; AutoRubric 1.6.1's rule for few-shot
        examples).

    Raises
    ------
    InputError
        Naming the decision-model judges and the settings refused; also for a decision model's
        ``JudgeSpec.system_prompt``.
    """
    ids = decision_judge_ids(judges)
    if not ids:
        return
    with_prompt = [j.judge_id for j in judges if j.judge_id in ids and j.system_prompt is not None]
    refused = [name for name, on in always.items() if on]
    if with_prompt:
        refused.append(f"JudgeSpec.system_prompt (judges {with_prompt})")
    if len(decision_judge_ids(every_judge)) == len(every_judge):
        refused += [name for name, on in prompt_settings.items() if on]
    if refused:
        raise InputError(f"CriterionGrader: decision-model judges {ids} do not use {', '.join(refused)} (a decision "
                         "model is asked typed questions, not an LLM prompt, and sees no option order); leave "
                         "them unset")


def offered_labels(criterion: Criterion, config: DecisionModelConfig) -> tuple[str, ...]:
    """The vote keys of the outcomes a decision model is offered on ``criterion``: ``MET`` and
    ``UNMET`` for a yes/no question, those and ``CANNOT_ASSESS`` for a binary choice, every
    option's label for a multi-choice choice, the non-NA options' labels for a score."""
    kind = question_kind(criterion, config)
    if criterion.options is None:
        return BINARY_LABELS if kind == "choice" else tuple(label for label in BINARY_LABELS if label != "CANNOT_ASSESS")
    return tuple(o.label for o in criterion.options if kind == "choice" or not o.na)


class DecisionClients:
    """One :class:`DecisionModelJudge` per decision-model judge, built on first use and closed by
    :meth:`close` (the grader's ``release_engines``)."""

    def __init__(self) -> None:
        self._clients: dict[str, DecisionModelJudge] = {}

    def client(self, judge: JudgeSpec) -> DecisionModelJudge:
        """The judge's client (built now if it is not held).

        Raises
        ------
        InputError
            As :class:`DecisionModelJudge` does (no SDK, no API key).
        """
        held = self._clients.get(judge.judge_id)
        if held is None:
            held = self._clients[judge.judge_id] = DecisionModelJudge(
                judge.llm_config, cache_namespace=judge.judge_id)  # type: ignore[arg-type]
        return held

    def held(self) -> frozenset[str]:
        """Ids of the judges whose client is held."""
        return frozenset(self._clients)

    def close(self, judge_ids: Sequence[str] | None = None) -> int:
        """Close and drop the clients of ``judge_ids`` (default all); returns how many."""
        chosen = [i for i in self._clients if judge_ids is None or i in judge_ids]
        for judge_id in chosen:
            self._clients.pop(judge_id).close()
        return len(chosen)


def _request_text(criteria: Sequence[Criterion], config: DecisionModelConfig, submission: str,
                  query: str | None, reference: str | None) -> str:
    """The System One request of one item as JSON (state and questions), for inspection."""
    body = {"model": config.model, "state": decision_state(submission, query, reference),
            "questions": decision_questions(criteria, config)}
    return json.dumps(body, ensure_ascii=False, sort_keys=True)


def _result(task: JudgmentTask, outcome: DecisionOutcome, spent: tuple[TokenUsage, float, float | None]) -> JudgmentResult:
    """One criterion's :class:`JudgmentResult` from its decision-model outcome."""
    usage, seconds, cost = spent
    if outcome.error is not None:
        return JudgmentResult(task, (), None, None, False, usage, seconds, outcome.error, prompt_suffix="",
                              cost_usd=cost)
    criterion = task.criterion
    if criterion.options is None:
        labels: Sequence[str] = BINARY_LABELS
        chosen = BINARY_LABELS.index(outcome.verdict.value)  # type: ignore[union-attr]
    else:
        labels = [str(i) for i in range(len(criterion.options))]
        chosen = outcome.selected_index  # type: ignore[assignment]
    probabilities = tuple(float(outcome.probabilities.get(label, 0.0)) for label in labels)
    return JudgmentResult(task, probabilities, chosen, None, False, usage, seconds, None, prompt_suffix="",
                          cost_usd=cost)


def decision_results(
    judges: Sequence[tuple[int, JudgeSpec]],
    clients: DecisionClients,
    items: Sequence[Any],
    progress: Callable[[int], None] | None = None,
) -> dict[Key, list[JudgmentResult]]:
    """Grade ``items`` with decision-model judges: one request per item and judge.

    Parameters
    ----------
    judges : sequence of (judge index, JudgeSpec)
        The judges (decision models) and their positions among the grader's judges.
    clients : DecisionClients
    items : sequence of GradeItem, length n_items
        Checked items (a non-empty rubric each).
    progress : callable, optional
        Called with the number of judgments finished after each judge's batch.

    Returns
    -------
    dict of (item index, criterion index, judge index) to a one-element list of JudgmentResult
        Every criterion of every item, for every judge.

    Raises
    ------
    InputError
        A judge's client cannot be built, or a criterion cannot be asked in its framing (naming
        the item); what the endpoint answers never raises.
    """
    results: dict[Key, list[JudgmentResult]] = {}
    for j_index, judge in judges:
        config: DecisionModelConfig = judge.llm_config  # type: ignore[assignment]
        client = clients.client(judge)
        texts: list[str] = []
        for index, item in enumerate(items):
            try:
                texts.append(_request_text(item.rubric, config, item.submission, item.query,
                                           item.reference_submission))
            except ValueError as exc:
                where = f"item {item.item_id!r}" if item.item_id else f"item {index}"
                raise InputError(f"{where}: decision model {judge.judge_id!r}: {exc}") from None

        def grade(item: Any) -> tuple[DecisionItemResult, float]:
            start = time.perf_counter()
            graded = client.grade_item(item.rubric, item.submission, query=item.query,
                                       reference=item.reference_submission)
            return graded, time.perf_counter() - start

        workers = min(len(items), config.max_parallel_requests or DEFAULT_PARALLEL) or 1
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="decision-model") as pool:
            graded_items = list(pool.map(grade, items))
        for item_index, (item, (graded, seconds)) in enumerate(zip(items, graded_items, strict=True)):
            parts = PromptParts(texts[item_index], "", ItemPrompt("", ()))
            tokens = graded.input_tokens or 0
            first = (TokenUsage(prompt_tokens=tokens, total_tokens=tokens), seconds, graded.cost_usd)
            for c_index, (criterion, outcome) in enumerate(zip(item.rubric, graded.outcomes, strict=True)):
                order = None if criterion.options is None else tuple(range(len(criterion.options)))
                task = JudgmentTask(item_index, c_index, j_index, criterion, order, parts, ())
                spent = first if c_index == 0 else (TokenUsage(), 0.0, 0.0)
                results[(item_index, c_index, j_index)] = [_result(task, outcome, spent)]
        if progress is not None:
            progress(sum(len(item.rubric) for item in items))
    return results


def decision_vote(result: JudgmentResult, judge: JudgeSpec) -> JudgeVote | MultiChoiceJudgeVote:
    """A decision-model judge's vote from its :class:`JudgmentResult`: an LLM judge's vote with
    ``label_probabilities`` restricted to :func:`offered_labels` (so ``confidence`` counts the
    outcomes the question offered)."""
    criterion = result.task.criterion
    vote: JudgeVote | MultiChoiceJudgeVote = (
        binary_vote(result, judge.judge_id, judge.weight) if criterion.is_binary
        else choice_vote(result, judge.judge_id, judge.weight))
    if vote.label_probabilities is None:
        return vote
    offered = offered_labels(criterion, judge.llm_config)  # type: ignore[arg-type]
    kept = {label: p for label, p in vote.label_probabilities.items() if label in offered}
    return vote.model_copy(update={"label_probabilities": kept})


def decision_engine_record(judge: JudgeSpec) -> dict[str, Any]:
    """A decision-model judge's record where a run stores its judges' engines
    (``runner.executors.engine_records``): ``model_id`` its model, ``backend``
    ``"decision-model"``, every other described field None (``fallbacks`` ``[]``)."""
    values: dict[str, Any] = {name: None for name in DESCRIPTIONS}
    values["fallbacks"] = []
    return {**values, "model_id": judge.llm_config.model, "backend": DECISION_BACKEND}


def describe_decision_judge(judge: JudgeSpec) -> dict[str, Any]:
    """A decision-model judge as JSON-able data for run records: every config field but the API
    key (whether one is given is kept) and the extra headers' values."""
    config: DecisionModelConfig = judge.llm_config  # type: ignore[assignment]
    fields = {name: getattr(config, name) for name in (
        "model", "api_base", "timeout", "max_retries", "max_parallel_requests", "binary_framing",
        "ordinal_framing", "decision_threshold", "input_cost_per_token")}
    return {"judge_id": judge.judge_id, "weight": judge.weight, "system_prompt": judge.system_prompt,
            "decision_model": {**fields, "api_key_given": config.api_key is not None,
                               "extra_headers": sorted(config.extra_headers)}}
