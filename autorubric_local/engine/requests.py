"""A judge request's parts as data (issue 32, "Structured requests").

Requests stay text (:class:`~.base.ScoreRequest`, :class:`~.base.GenerateRequest`: a shared
prefix and a per-criterion suffix), and the grader also sends, on each request, its structure:
a :class:`JudgeRequest` (``request.judgment``), with the answer it wants (:class:`AnswerSpec`,
the JSON key of the verdict and its values in the order shown). Local backends read the text
(the label continuations and the suffix say everything they need). The hosted engine reads
only the structure: it renders its chat messages from the item and the block
(:func:`~.hosted.chat.judgment_messages`) and its response format from the answer, and parses
none of our prompt text; one structured answer is a whole judgment, verdict and explanation
(``EngineCapabilities.whole_judgment``), the explanation continued after the step's start by
:func:`continued_explanation`.

The rest of a request's structure is here too, with the text functions that render it, so the
text the engines see is derived from the structure in one place:

- :class:`Span`: a piece of text, trusted (ours) or untrusted (from the data: rendered with
  :func:`~.user_text.mark`, so it never becomes a control token or a message boundary);
- :class:`ItemPrompt`: the shared prefix of one item and judge (system prompt, start of the
  user turn), rendered and split by :func:`split_item` / :func:`split_at_turn_end`;
- :class:`Step`: which request of a judgment this is (verdict first, its explanation, the
  reasoning, the verdict after the reasoning);
- :class:`JudgeRequest`: item, per-criterion block, answer and step together.

Answer text after the assistant turn opens (:func:`answer_opener`, :meth:`AnswerSpec.labels`,
:func:`explanation_after_label`):

========================  =====================================  ==================
answer, order             assistant opener                       labels
========================  =====================================  ==================
status, verdict first     ``{"criterion_status": "``             ``MET"`` ...
status, reasoning first   ``{"explanation": "<text>", "criterion_status": "``  ``MET"`` ...
option, verdict first     ``{"selected_option": ``               ``1,`` ``2,`` ...
option, reasoning first   ``{"explanation": "<text>", "selected_option": ``    ``1}`` ``2}`` ...
========================  =====================================  ==================

Example
-------
>>> AnswerSpec("selected_option", ("1", "2", "3")).schema.__name__
'MultiChoiceJudgment'
>>> answer_opener(AnswerSpec("criterion_status", ("MET", "UNMET")))
'{"criterion_status": "'
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Literal

from pydantic import BaseModel

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import CriterionJudgment, MultiChoiceJudgment
from autorubric_local.engine.user_text import mark, marker_problem

__all__ = [
    "ANSWER_KEYS",
    "EXPLANATION_OPENER",
    "GENERATE_STEPS",
    "STEP_KINDS",
    "AnswerKey",
    "AnswerSpec",
    "ItemPrompt",
    "JudgeRequest",
    "OptionList",
    "PromptParts",
    "Span",
    "Step",
    "answer_opener",
    "answer_schema",
    "continued_explanation",
    "explanation_after_label",
    "numbered",
    "render_spans",
    "split_at_turn_end",
    "split_item",
]

FormatChat = Callable[[list[dict[str, str]]], str]
"""An engine's ``format_chat``: messages rendered with its template, assistant turn opened."""

AnswerKey = Literal["criterion_status", "selected_option"]
ANSWER_KEYS: tuple[str, ...] = ("criterion_status", "selected_option")


def answer_schema(key: str) -> type[BaseModel]:
    """The structured answer's model for a verdict key: ``CriterionJudgment`` for
    ``criterion_status``, ``MultiChoiceJudgment`` for ``selected_option``.

    Raises
    ------
    ValueError
        On another key.
    """
    if key not in ANSWER_KEYS:
        raise ValueError(f"answer key must be one of {ANSWER_KEYS}, got {key!r}")
    return CriterionJudgment if key == "criterion_status" else MultiChoiceJudgment


@dataclass(frozen=True)
class AnswerSpec:
    """The verdict a request asks for.

    Attributes
    ----------
    key : {"criterion_status", "selected_option"}
        The JSON key of the verdict: a binary criterion's status, or the number of the option
        chosen (a multi-choice criterion, a selection task).
    values : tuple of str, length n_labels >= 1
        The verdict's allowed values in the order of the request's labels (bare: ``"MET"``,
        ``"2"``), e.g. ``("MET", "UNMET", "CANNOT_ASSESS")`` or ``("1", "2", "3")``.

    Raises
    ------
    ValueError
        On another key, or no values.
    """

    key: AnswerKey
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.key not in ANSWER_KEYS:
            raise ValueError(f"AnswerSpec.key must be one of {ANSWER_KEYS}, got {self.key!r}")
        if not self.values:
            raise ValueError("AnswerSpec.values must hold at least one value, got none")

    @property
    def schema(self) -> type[BaseModel]:
        """The structured answer's model: ``CriterionJudgment`` or ``MultiChoiceJudgment``."""
        return answer_schema(self.key)

    def labels(self, reasoning_first: bool = False) -> tuple[str, ...]:
        """Label continuations after :func:`answer_opener`, in ``values`` order.

        Status: each value and its closing quote (``MET"``), which keeps the set prefix-free.
        Option: each number followed by ``,`` (verdict first, the explanation follows) or ``}``
        (reasoning first, the object ends).
        """
        if self.key == "criterion_status":
            return tuple(f'{value}"' for value in self.values)
        end = "}" if reasoning_first else ","
        return tuple(f"{value}{end}" for value in self.values)


EXPLANATION_OPENER = '{"explanation": "'
"""Assistant text that opens the reasoning (reasoning first)."""


def answer_opener(answer: AnswerSpec, explanation: str | None = None) -> str:
    """Assistant text up to the verdict label; with ``explanation`` (untrusted: the judge's own
    words fed back), the reasoning comes first."""
    quote = '"' if answer.key == "criterion_status" else ""
    if explanation is None:
        return f'{{"{answer.key}": {quote}'
    return f'{{"explanation": {mark(json.dumps(explanation))}, "{answer.key}": {quote}'


def explanation_after_label(label: str, start: str = "") -> str:
    """Assistant text after a chosen label up to the open explanation string, then ``start``
    (the start the explanation is made to take; part of the prompt)."""
    if label.endswith('"'):
        return label + ', "explanation": "' + start
    return label + ' "explanation": "' + start


def continued_explanation(start: str, written: str) -> str:
    """What follows ``start`` in an explanation a judge ``written`` whole instead of going on
    from ``start`` (a hosted judge answers a whole turn): the text after ``start`` when it
    begins with it, else ``": "`` and all of it (all of it when there is no start). The
    explanation kept is ``start`` plus this.

    >>> continued_explanation("The submission", "The submission names it.")
    ' names it.'
    >>> continued_explanation("The submission", "It names it.")
    ': It names it.'
    """
    if written.startswith(start):
        return written[len(start):]
    return ": " + written if start else written


@dataclass(frozen=True)
class Span:
    """A piece of prompt text; ``untrusted`` text comes from the data (submission, query,
    criterion, options, examples) and is rendered marked (:func:`~.user_text.mark`).

    Raises
    ------
    InputError
        If ``untrusted`` text holds a reserved marker character (it could not be rendered):
        refused when the span is built, not when it is first rendered.
    """

    text: str
    untrusted: bool = False

    def __post_init__(self) -> None:
        if self.untrusted:
            problem = marker_problem(self.text)
            if problem is not None:
                raise InputError(problem)

    def rendered(self) -> str:
        """The text as it goes into a prompt string: marked when untrusted."""
        return mark(self.text) if self.untrusted else self.text


def render_spans(spans: Sequence[Span]) -> str:
    """The spans joined, untrusted ones marked."""
    return "".join(span.rendered() for span in spans)


@dataclass(frozen=True)
class OptionList:
    """A block that lists options in a chosen order, its spans built once per criterion.

    An option order is laid out by :meth:`spans` as ``head``, then for each shown position
    ``k`` (0-based) ``openers[k]``, the label of the option shown there and ``closers[k]`` (when
    there are closers), then ``tail``: one tuple per order, no span built.

    Attributes
    ----------
    head, tail : tuple of Span
    labels : tuple of Span, shape (n_options,)
        The options' labels (untrusted) in their original order.
    openers : tuple of Span, shape (n_options,)
        What goes before the label shown at each position (its number).
    closers : tuple of Span, shape (n_options,) or ()
        What goes after the label shown at each position; () for nothing.

    Raises
    ------
    ValueError
        If ``openers`` (and ``closers``, when given) do not hold one span per label.
    """

    head: tuple[Span, ...]
    labels: tuple[Span, ...]
    tail: tuple[Span, ...]
    openers: tuple[Span, ...] = ()
    closers: tuple[Span, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.labels)
        if len(self.openers) != n or (self.closers and len(self.closers) != n):
            raise ValueError(f"OptionList needs one opener (and closer, if any) per label: {n} labels, "
                             f"{len(self.openers)} openers, {len(self.closers)} closers")

    def spans(self, order: Sequence[int] | None = None) -> tuple[Span, ...]:
        """The block with the option ``order[k]`` (original index) shown at position ``k``;
        None shows them in their own order.

        Raises
        ------
        ValueError
            If ``order`` does not hold ``n_options`` indices.
        IndexError
            If an index is not below ``n_options``.
        """
        labels = self.labels
        shown = labels if order is None else [labels[original] for original in order]
        if self.closers:
            listed = zip(self.openers, shown, self.closers, strict=True)
        else:
            listed = zip(self.openers, shown, strict=True)
        return (*self.head, *chain.from_iterable(listed), *self.tail)


def numbered(table: tuple[Span, ...], make: Callable[[int], Span], n: int) -> tuple[Span, ...]:
    """The first ``n`` spans of a module's ``table`` (``table[k] == make(k + 1)``), made past
    its end."""
    if n <= len(table):
        return table[:n]
    return table + tuple(make(position) for position in range(len(table) + 1, n + 1))


@dataclass(frozen=True)
class ItemPrompt:
    """The shared part of every judgment of one item by one judge: the system prompt and the
    start of the user turn (the per-criterion block follows it in the same user message)."""

    system: str
    user_head: tuple[Span, ...]


@dataclass(frozen=True)
class PromptParts:
    """The rendered prefix of one item, the chat text that closes the user turn, and the item
    they were rendered from.

    ``turn_switch`` is what the chat template puts between the end of the user's message and
    the start of the assistant's answer (end-of-turn, assistant header). ``item`` is the
    structure ``prefix`` renders (not compared: two parts of the same text are equal), so a
    task that swaps its parts swaps its text and its structure together.
    """

    prefix: str
    turn_switch: str
    item: ItemPrompt = field(compare=False)


def split_at_turn_end(format_chat: FormatChat, system: str, user_start: str) -> PromptParts:
    """Render ``[system, user_start + <suffix goes here>]`` and split it where the suffix goes.

    The split point is a sentinel with a fresh random nonce, so no text in ``user_start`` can
    collide with it. ``user_start`` is taken as rendered: the parts' ``item`` holds it as one
    trusted span.

    Raises
    ------
    ValueError
        If the chat template moved or duplicated the sentinel (a template that rewrites content).
    """
    return split_item(format_chat, ItemPrompt(system, (Span(user_start),)))


def split_item(format_chat: FormatChat, item: ItemPrompt) -> PromptParts:
    """The shared prefix of ``item`` rendered with ``format_chat``, its turn switch, and ``item``
    (:func:`split_at_turn_end`'s split).

    Raises
    ------
    ValueError
        If the chat template moved or duplicated the split point.
    """
    sentinel = f"\x00split:{secrets.token_hex(16)}\x00"
    user = render_spans(item.user_head) + sentinel
    text = format_chat([{"role": "system", "content": item.system}, {"role": "user", "content": user}])
    if text.count(sentinel) != 1:
        raise ValueError("the chat template altered the prompt layout; cannot split prefix/suffix")
    prefix, turn_switch = text.split(sentinel)
    return PromptParts(prefix=prefix, turn_switch=turn_switch, item=item)


StepKind = Literal["verdict", "explain", "reason", "verdict_after_reason"]
STEP_KINDS: tuple[str, ...] = ("verdict", "explain", "reason", "verdict_after_reason")
GENERATE_STEPS: tuple[str, ...] = ("explain", "reason")
"""The steps answered by generating text (:class:`~.base.GenerateRequest`); the others are scored."""


@dataclass(frozen=True)
class Step:
    """Which request of a judgment this is.

    Attributes
    ----------
    kind : {"verdict", "explain", "reason", "verdict_after_reason"}
        ``verdict``: score the labels (verdict first). ``explain``: generate the explanation of
        the ``chosen`` value. ``reason``: generate the reasoning (reasoning first).
        ``verdict_after_reason``: score the labels after ``explanation``.
    chosen : str or None
        ``explain`` only: the verdict value explained (one of the answer's values).
    explanation : str or None
        ``verdict_after_reason`` only: the reasoning the judge wrote (untrusted), its ``start``
        included.
    start : str
        ``explain`` and ``reason`` only: the text the explanation is made to start with, part
        of the prompt (``graders.prompts.EXPLANATION_STEM`` for one-sentence explanations);
        empty for none.

    Raises
    ------
    ValueError
        On another kind, or ``chosen``/``explanation``/``start`` set on a step that has none.
    """

    kind: StepKind
    chosen: str | None = None
    explanation: str | None = None
    start: str = ""

    def __post_init__(self) -> None:
        if self.kind not in STEP_KINDS:
            raise ValueError(f"Step.kind must be one of {STEP_KINDS}, got {self.kind!r}")
        if (self.chosen is not None) != (self.kind == "explain"):
            raise ValueError(f"Step.chosen is set for an 'explain' step only, got kind {self.kind!r}, chosen {self.chosen!r}")
        if (self.explanation is not None) != (self.kind == "verdict_after_reason"):
            raise ValueError(f"Step.explanation is set for a 'verdict_after_reason' step only, got kind {self.kind!r}")
        if self.start and self.kind not in GENERATE_STEPS:
            raise ValueError(f"Step.start is set for an 'explain' or 'reason' step only, got kind {self.kind!r}, "
                             f"start {self.start!r}")


@dataclass(frozen=True)
class JudgeRequest:
    """One request of a judgment, as data: the item's shared prompt, the per-criterion block
    (criterion and options, or a selection task's candidates, few-shot examples before it),
    the answer wanted and the step.

    Raises
    ------
    ValueError
        If an ``explain`` step's ``chosen`` is not one of the answer's values.
    """

    item: ItemPrompt
    block: tuple[Span, ...]
    answer: AnswerSpec
    step: Step

    def __post_init__(self) -> None:
        if self.step.chosen is not None and self.step.chosen not in self.answer.values:
            raise ValueError(f"Step.chosen {self.step.chosen!r} is not one of the answer's values {list(self.answer.values)}")
