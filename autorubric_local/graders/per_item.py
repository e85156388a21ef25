"""Single-call grading (AutoRubric's ``llm_calls="per_item"``), score mode on local engines.

One prompt per item and judge holds the whole rubric, every criterion numbered in rubric
order, and asks for one JSON object whose ``verdicts`` list gives each criterion's verdict in
that order. A local engine scores by prefill, so criterion ``k``'s label probabilities are read
at its verdict's position: the request's prefix is the item prompt and its suffix the answer so
far, verdicts ``1..k-1`` filled in as the judge chose them (the argmax label of their rounds:
teacher forcing). Grading ``K`` criteria is ``K`` rounds; only the rounds of one item depend on
each other, and one engine call settles several of them, speculating on the judge's choices
(:func:`score_per_item`).

Built here: score mode (no explanation), binary and multi-choice criteria, on any engine with
``format_chat`` and ``score`` (no engine change). :class:`~autorubric_local.graders.criterion_grader.CriterionGrader`
uses it for ``llm_calls="per_item"`` (in memory; the stored runner refuses it); explain mode and
hosted judges are not built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from autorubric_local.core.types import Criterion
from autorubric_local.engine.base import Engine, LabelScores, ScoreRequest
from autorubric_local.engine.requests import ItemPrompt, PromptParts, Span, answer_opener, split_item
from autorubric_local.graders.prompts import answer_spec, criterion_spans, item_prompt, labels_for

ANSWER_HEAD = '{"verdicts": ['
"""Assistant text that opens the per-item answer."""

VERDICT_SEPARATOR = ", "


@dataclass(frozen=True)
class PerItemInput:
    """One item to grade: its submission, and optional question and reference (untrusted text)."""

    submission: str
    query: str | None = None
    reference_submission: str | None = None


def rubric_spans(criteria: Sequence[Criterion]) -> tuple[Span, ...]:
    """The whole rubric, each criterion's block (:func:`criterion_spans`) numbered 1..K in
    rubric order, then the answer format.

    Raises
    ------
    InputError
        If a requirement or option label holds a reserved marker character.
    ValueError
        If ``criteria`` is empty.
    """
    if not criteria:
        raise ValueError("per-item grading needs at least one criterion")
    spans: list[Span] = [Span(f"Grade the submission on each of these {len(criteria)} criteria.")]
    for number, criterion in enumerate(criteria, start=1):
        spans.append(Span(f"\n\nCriterion {number}:\n"))
        spans.extend(criterion_spans(criterion))
    spans.append(Span(
        '\n\nAnswer with one JSON object {"verdicts": [...]} that lists one verdict per criterion, '
        'in the order above: {"criterion_status": "MET" | "UNMET" | "CANNOT_ASSESS"} for a '
        'criterion without options, {"selected_option": n} (the option number) for one with options.'
    ))
    return tuple(spans)


def per_item_parts(engine: Engine, item: PerItemInput, criteria: Sequence[Criterion],
                   system_prompt: str | None = None) -> PromptParts:
    """The item's prompt with the whole rubric, rendered with ``engine.format_chat``."""
    head = item_prompt(item.submission, query=item.query, reference_submission=item.reference_submission,
                       system_prompt=system_prompt)
    return split_item(engine.format_chat, ItemPrompt(head.system, head.user_head + rubric_spans(criteria)))


def filled_verdict(criterion: Criterion, label: str) -> str:
    """A verdict as the answer holds it once chosen: opener, label, end of its object."""
    text = answer_opener(answer_spec(criterion)) + label
    return text if text.endswith("}") else text + "}"


def round_suffix(turn_switch: str, criteria: Sequence[Criterion], chosen: Sequence[str]) -> str:
    """The suffix of round ``k = len(chosen)``: the turn switch, the answer with the chosen
    labels of criteria ``0..k-1`` filled in, and criterion ``k``'s opener."""
    k = len(chosen)
    done = [filled_verdict(c, label) for c, label in zip(criteria[:k], chosen)]
    return (turn_switch + ANSWER_HEAD + "".join(v + VERDICT_SEPARATOR for v in done)
            + answer_opener(answer_spec(criteria[k])))


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: values[i])


SPECULATED_REQUESTS = 13
"""Most requests one item sends in one engine call (:func:`score_per_item`): its next round and,
speculatively, the rounds after it for every label the judge may choose there, as many rounds
ahead as fit (binary criteria: 1 + 3 + 9, three rounds a call)."""


def _speculated(criteria: Sequence[Criterion], k: int, budget: int) -> list[tuple[str, ...]]:
    """The label paths one call sends from round ``k``: ``()`` (round ``k`` itself), then every
    path of labels of rounds ``k, k+1, ...`` whose next round fits ``budget`` requests in all,
    breadth first (whole rounds only)."""
    paths: list[tuple[str, ...]] = [()]
    level: list[tuple[str, ...]] = [()]
    for depth in range(k, len(criteria) - 1):
        labels = labels_for(criteria[depth], True)
        following = [path + (label,) for path in level for label in labels]
        if len(paths) + len(following) > budget:
            break
        paths += following
        level = following
    return paths


def score_per_item(engine: Engine, items: Sequence[PerItemInput], criteria: Sequence[Criterion],
                   system_prompt: str | None = None, speculate: int | None = None,
                   ) -> tuple[list[list[LabelScores]], list[list[ScoreRequest | None]]]:
    """Grade every item on every criterion with one teacher-forced prompt per item.

    Returns ``(scores, requests)``, each a list per item of a list per criterion (length K, rubric
    order): criterion ``k``'s :class:`LabelScores` (labels of :func:`labels_for` with
    ``reasoning_first=True``, raw log-probabilities) and the request scored: its suffix holds
    verdicts ``0..k-1`` as the judge chose them (argmax labels). An item whose round fails gets
    that error for every later criterion (no verdict to force), with no request sent (None).
    A hosted engine refuses these requests (they carry no ``judgment``:
    :class:`~autorubric_local.engine.base.EngineContractError`).

    Each engine call sends, for every item still going, its next round and, speculatively, the
    rounds after it for every label the judge may choose (up to ``speculate`` requests an item,
    whole rounds: :func:`_speculated`). The requests of one item share its prompt, which an
    engine that shares prefixes within a call prefills once, so a call settles several rounds
    for one prefill; the branches the judge's choices do not take are discarded (their engine
    seconds are added to the item's first round of that call; token usage is the kept
    requests'). The requests kept are exactly those of round-by-round teacher forcing.

    Parameters
    ----------
    speculate : int >= 1, optional
        Default :data:`SPECULATED_REQUESTS` (read at call time); 1: one call per round, nothing
        speculated.

    Raises
    ------
    RuntimeError
        If the engine returns another number of results than requests.
    ValueError
        If ``criteria`` is empty, ``speculate`` < 1, or the chat template moves the prompt's split
        point.
    """
    speculate = SPECULATED_REQUESTS if speculate is None else speculate
    if speculate < 1:
        raise ValueError(f"speculate must be >= 1, got {speculate!r}")
    parts = [per_item_parts(engine, item, criteria, system_prompt) for item in items]
    chosen: list[list[str]] = [[] for _ in items]
    scores: list[list[LabelScores]] = [[] for _ in items]
    requests: list[list[ScoreRequest | None]] = [[] for _ in items]
    failed: list[str | None] = [None for _ in items]
    while any(failed[i] is None and len(chosen[i]) < len(criteria) for i in range(len(items))):
        live = [i for i in range(len(items)) if failed[i] is None and len(chosen[i]) < len(criteria)]
        sent: list[tuple[int, tuple[str, ...]]] = []
        batch: list[ScoreRequest] = []
        for i in live:
            k = len(chosen[i])
            for path in _speculated(criteria, k, speculate):
                sent.append((i, path))
                batch.append(ScoreRequest(parts[i].prefix,
                                          round_suffix(parts[i].turn_switch, criteria, [*chosen[i], *path]),
                                          labels_for(criteria[k + len(path)], True)))
        results = engine.score(batch)
        if len(results) != len(batch):
            raise RuntimeError(f"engine score returned {len(results)} results for {len(batch)} requests")
        answered = {key: (request, result) for key, request, result in zip(sent, batch, results)}
        for i in live:
            path: tuple[str, ...] = ()
            first = len(scores[i])
            while (i, path) in answered:
                request, result = answered.pop((i, path))
                requests[i].append(request)
                scores[i].append(result)
                if result.error is not None or not result.logprobs:
                    failed[i] = result.error or "engine returned no logprobs"
                    break
                label = request.labels[_argmax(result.logprobs)]
                chosen[i].append(label)
                path += (label,)
            discarded = sum(result.seconds for (j, _), (_, result) in answered.items() if j == i)
            if discarded:
                scores[i][first] = replace(scores[i][first], seconds=scores[i][first].seconds + discarded)
        for i in range(len(items)):
            while failed[i] is not None and len(scores[i]) < len(criteria):
                scores[i].append(LabelScores((), error=f"per_item: earlier verdict failed: {failed[i]}"))
                requests[i].append(None)
    return scores, requests
