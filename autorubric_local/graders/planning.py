"""Pure planning of a grading job: items x criteria x judges -> a flat list of judgment tasks.

No model is touched here. Each task carries its prompt split into the item's shared prefix and
the criterion's suffix (:mod:`autorubric_local.graders.prompts`), the label continuations to score, and
the option order shown to the judge (``option_order[k]`` = original index of the option shown
at position ``k``; AutoRubric's ``shuffle_order``).

Shuffles are reproducible and independent of processing order: the permutation of a criterion
is drawn from a generator seeded by ``(seed, submission hash, criterion index, judge id)``.

Permutation modes (:class:`OptionPermutations`): ``single`` judges each multi-choice criterion
once, in that order; ``cyclic`` judges it once per cyclic rotation of that order (N tasks for N
options, ``permutation_index`` 0..N-1), so every option is shown at every position exactly
once (the setting of Iourovitski 2024, "Grade Score"). Binary criteria are
always judged once (``permutation_index`` 0).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cached_property

from autorubric_local.core.errors import InputError
from autorubric_local.core.text import unicode_problem, utf8
from autorubric_local.core.types import Criterion
from autorubric_local.engine.requests import AnswerSpec, JudgeRequest, OptionList, PromptParts, Span, Step, render_spans
from autorubric_local.engine.user_text import marker_problem
from autorubric_local.graders.prompts import (
    EXPLANATION_OPENER,
    ExplanationStyle,
    answer_spec,
    criterion_options,
    explanation_start,
    labels_for,
    render_item,
    verdict_opener,
)


@dataclass(frozen=True)
class GradeItem:
    """One submission to grade against its rubric.

    ``submission`` is the text the judge sees (the output part of a thinking/output input).
    ``criterion_positions``, when set, gives each criterion's position in the item's full
    rubric (a live cascade's sub-rubric of escalated criteria), which seeds its option shuffle
    in place of its position in ``rubric``, so a criterion is shown as a full-rubric grade shows it.
    """

    submission: str
    rubric: tuple[Criterion, ...]
    query: str | None = None
    reference_submission: str | None = None
    item_id: str = ""
    criterion_positions: tuple[int, ...] | None = None


def check_item_text(item: GradeItem, where: str) -> None:
    """Refuse an item whose text cannot be judged safely: ``where`` names the item.

    Text cannot be encoded when it holds a lone surrogate, and cannot be delimited as untrusted
    when it holds a reserved marker character (:mod:`autorubric_local.engine.user_text`).

    Raises
    ------
    InputError
        Naming the item, the field and the first offending character.
    """
    fields: list[tuple[str, str | None]] = [
        ("submission", item.submission), ("query", item.query), ("reference_submission", item.reference_submission),
    ]
    for c_index, criterion in enumerate(item.rubric):
        fields.append((f"rubric[{c_index}].requirement", criterion.requirement))
        fields.append((f"rubric[{c_index}].name", criterion.name))
        for o_index, option in enumerate(criterion.options or []):
            fields.append((f"rubric[{c_index}].options[{o_index}].label", option.label))
    for name, text in fields:
        problem = (unicode_problem(text) or marker_problem(text)) if text else None
        if problem is not None:
            raise InputError(f"{where}: field '{name}': {problem}")


class OptionPermutations(str, Enum):
    """How many option orders a multi-choice criterion is judged in (module docstring)."""

    SINGLE = "single"
    CYCLIC = "cyclic"


@dataclass(frozen=True)
class JudgmentTask:
    """One (item, criterion, judge) judgment, planned.

    Attributes
    ----------
    item_index, criterion_index, judge_index : int
        Positions in the job's items, the item's rubric, and the grader's judges.
    criterion : Criterion
        The criterion as judged (with the NA option appended when the grader adds one).
    option_order : tuple of int or None
        Shown position -> original option index; None for binary criteria.
    parts : PromptParts
        The item's shared prefix, the chat template's turn switch and the item they render
        (:class:`~autorubric_local.engine.requests.ItemPrompt`).
    block : tuple of Span
        The per-criterion block (few-shot examples, then the criterion and its options in
        ``option_order``; a selection task's candidates), as spans.
    prefix, turn_switch : str
        ``parts.prefix``, ``parts.turn_switch`` (read-only views).
    criterion_block : str
        ``block`` rendered (computed once per task).
    suffix : str
        The criterion block, the turn switch and the assistant opener: the suffix ends where
        the verdict label begins (verdict-first layout).
    permutation_index : int
        Which option order of the criterion this is (0 unless permutations are cyclic).
    shuffled : bool
        True when ``option_order`` comes from a seeded shuffle (``shuffle_options=True`` on a
        multi-choice criterion). False: the options are in their own order (or a rotation of
        it), and the vote's ``shuffle_order`` is None, as AutoRubric's API reference has it.
    """

    item_index: int
    criterion_index: int
    judge_index: int
    criterion: Criterion
    option_order: tuple[int, ...] | None
    parts: PromptParts
    block: tuple[Span, ...]
    permutation_index: int = 0
    shuffled: bool = False

    @property
    def prefix(self) -> str:
        """The item's shared prefix (``parts.prefix``)."""
        return self.parts.prefix

    @property
    def turn_switch(self) -> str:
        """The chat text between the user's message and the answer (``parts.turn_switch``)."""
        return self.parts.turn_switch

    @cached_property
    def criterion_block(self) -> str:
        """``block`` rendered, untrusted spans marked."""
        return render_spans(self.block)

    @property
    def suffix(self) -> str:
        """Suffix for verdict-first scoring."""
        return self.criterion_block + self.turn_switch + verdict_opener(self.criterion)

    def request(self, answer: AnswerSpec, step: Step) -> JudgeRequest:
        """This task's request for ``step`` as data (item, block, ``answer``, ``step``).

        Raises
        ------
        ValueError
            If an ``explain`` step's ``chosen`` is not one of ``answer``'s values.
        """
        return JudgeRequest(self.parts.item, self.block, answer, step)

    def labels(self, reasoning_first: bool = False) -> tuple[str, ...]:
        """Label continuations in shown order."""
        return labels_for(self.criterion, reasoning_first)

    def answer(self) -> AnswerSpec:
        """The verdict asked for, as data (:func:`.prompts.answer_spec`): key and values in shown order."""
        return answer_spec(self.criterion)

    def reasoning_suffix(self, explanation: str | None, style: ExplanationStyle = "free") -> str:
        """Suffix that opens (``None``; up to the ``style``'s start) or contains the explanation, before the verdict."""
        if explanation is None:
            return self.criterion_block + self.turn_switch + EXPLANATION_OPENER + explanation_start(style)
        return self.criterion_block + self.turn_switch + verdict_opener(self.criterion, explanation)


def _with_examples(examples: str, block: tuple[Span, ...]) -> tuple[Span, ...]:
    """``block`` after the few-shot ``examples`` (already rendered, their data marked), if any."""
    return (Span(examples), *block) if examples else block


def shuffle_order(seed: int, submission: str, criterion_index: int, judge_id: str, n_options: int) -> tuple[int, ...]:
    """Reproducible permutation of ``range(n_options)`` for one judgment."""
    digest = hashlib.sha256(
        utf8(f"{seed}\x1f{criterion_index}\x1f{judge_id}\x1f{submission}")
    ).digest()
    order = list(range(n_options))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return tuple(order)


def cyclic_rotations(order: Sequence[int]) -> list[tuple[int, ...]]:
    """The N cyclic rotations of ``order``; rotation ``r`` shows ``order[(k + r) % N]`` at ``k``.

    Every option appears at every position exactly once across the rotations.
    """
    n = len(order)
    return [tuple(order[(k + r) % n] for k in range(n)) for r in range(n)]


def option_orders(
    criterion: Criterion,
    *,
    seed: int,
    submission: str,
    criterion_index: int,
    judge_id: str,
    shuffle_options: bool,
    permutations: OptionPermutations,
) -> list[tuple[int, ...] | None]:
    """The option orders ``criterion`` is judged in: ``[None]`` for a binary criterion, else the
    seeded shuffle (or identity) and, with cyclic permutations, all its rotations."""
    if criterion.options is None:
        return [None]
    n = len(criterion.options)
    base = shuffle_order(seed, submission, criterion_index, judge_id, n) if shuffle_options else tuple(range(n))
    return list(cyclic_rotations(base)) if permutations is OptionPermutations.CYCLIC else [base]


def judgments_per_judge(
    rubric: Sequence[Criterion], *, auto_na_option: bool, permutations: OptionPermutations
) -> int:
    """How many tasks :func:`plan_tasks` makes for one item and one judge."""
    total = 0
    for criterion in rubric:
        if criterion.options is None or permutations is OptionPermutations.SINGLE:
            total += 1
        else:
            total += len((criterion.with_guaranteed_na_option() if auto_na_option else criterion).options or [])
    return total


def plan_tasks(
    items: Sequence[GradeItem],
    judges: Sequence[tuple[str, Callable[[list[dict[str, str]]], str]] | tuple[str, Callable[[list[dict[str, str]]], str], str | None]],
    *,
    system_prompt: str | None = None,
    shuffle_options: bool = True,
    seed: int = 0,
    auto_na_option: bool = False,
    permutations: OptionPermutations = OptionPermutations.SINGLE,
    examples: Callable[[Criterion], str] | None = None,
    multi_choice_system_prompt: str | None = None,
) -> list[JudgmentTask]:
    """Every judgment of the job, item-major, then judge, then criterion.

    Parameters
    ----------
    items : sequence of GradeItem
    judges : sequence of (judge_id, format_chat) or (judge_id, format_chat, system_prompt)
        ``format_chat`` renders messages with that judge's chat template; a judge's own
        ``system_prompt`` (not None) replaces the job's.
    system_prompt : str, optional
        Replaces :data:`autorubric_local.graders.prompts.DEFAULT_SYSTEM_PROMPT`.
    multi_choice_system_prompt : str, optional
        Replaces the system prompt for multi-choice criteria (AutoRubric's parameter): their
        tasks get an item prefix of their own, rendered with it. A judge's own
        ``system_prompt`` still replaces both.
    shuffle_options : bool
        Present multi-choice options in a seeded random order.
    seed : int
    auto_na_option : bool
        Give every multi-choice criterion an NA option (``Criterion.with_guaranteed_na_option``).
    permutations : OptionPermutations
        ``cyclic`` adds one task per rotation of each multi-choice criterion's options.
    examples : callable, optional
        Few-shot block for a criterion (:func:`.few_shot.render_examples`), placed before the
        criterion in the suffix.
    """
    tasks: list[JudgmentTask] = []
    blocks: dict[int, tuple[Criterion, OptionList]] = {}  # by id of the rubric's criterion, kept alive
    for item_index, item in enumerate(items):
        for judge_index, judge in enumerate(judges):
            judge_id, format_chat = judge[0], judge[1]
            own_prompt = judge[2] if len(judge) > 2 else None
            parts = render_item(
                format_chat,
                item.submission,
                query=item.query,
                reference_submission=item.reference_submission,
                system_prompt=own_prompt if own_prompt is not None else system_prompt,
            )
            choice_parts = parts
            if own_prompt is None and multi_choice_system_prompt is not None and any(
                    c.options is not None for c in item.rubric):
                choice_parts = render_item(
                    format_chat,
                    item.submission,
                    query=item.query,
                    reference_submission=item.reference_submission,
                    system_prompt=multi_choice_system_prompt,
                )
            for criterion_index, original in enumerate(item.rubric):
                criterion = original
                if auto_na_option and criterion.options is not None:
                    criterion = criterion.with_guaranteed_na_option()
                built = blocks.get(id(original))
                if built is None:
                    built = blocks[id(original)] = (original, criterion_options(criterion))
                listed = built[1]
                orders = option_orders(
                    criterion,
                    seed=seed,
                    submission=item.submission,
                    criterion_index=(criterion_index if item.criterion_positions is None
                                     else item.criterion_positions[criterion_index]),
                    judge_id=judge_id,
                    shuffle_options=shuffle_options,
                    permutations=permutations,
                )
                for permutation_index, order in enumerate(orders):
                    tasks.append(
                        JudgmentTask(
                            item_index=item_index,
                            criterion_index=criterion_index,
                            judge_index=judge_index,
                            criterion=criterion,
                            option_order=order,
                            parts=parts if original.options is None else choice_parts,
                            block=_with_examples(examples(original) if examples else "", listed.spans(order)),
                            permutation_index=permutation_index,
                            shuffled=shuffle_options and order is not None,
                        )
                    )
    return tasks
