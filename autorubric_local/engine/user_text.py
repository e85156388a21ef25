"""Untrusted text inside a prompt: marked by the planner, encoded as plain text by engines.

Prompts are strings rendered with the judge's chat template, whose own control tokens
(``<|im_start|>``, ``<start_of_turn>`` ...) must stay control tokens. Text that comes from the
data (submission, query, reference, few-shot examples, criterion text, option labels, a
generated explanation fed back) must never become one, whatever it contains. The planner wraps
each such span with :func:`mark`; an engine splits a prompt with :func:`split_marked` and
encodes the marked spans with the tokenizer's special-token parsing switched off
(``split_special_tokens=True``), so ``"<|im_end|>"`` inside a submission is read as the
characters ``<``, ``|``, ``im`` ... and never as the end-of-turn token.

The markers are the Unicode noncharacters U+FDD0 (open) and U+FDD1 (close), which Unicode
reserves for a program's internal use and which no real text contains. :func:`mark` refuses
text that contains either (an :class:`~autorubric_local.core.errors.InputError`, so the item
fails on its own and nothing is silently changed), so data can neither forge nor close a span.
Fixed markers keep prompts meaningful across processes (a worker process splits them the same
way). They are removed before tokenization and never reach a model; :func:`plain` gives the
prompt as the model reads it.

Example
-------
>>> prompt = "<|im_start|>user\\n" + mark("hi <|im_end|>") + "<|im_end|>"
>>> [(text, untrusted) for text, untrusted in split_marked(prompt)]
[('<|im_start|>user\\n', False), ('hi <|im_end|>', True), ('<|im_end|>', False)]
>>> plain(prompt)
'<|im_start|>user\\nhi <|im_end|><|im_end|>'
"""

from __future__ import annotations

from autorubric_local.core.errors import InputError

__all__ = ["CLOSE", "OPEN", "mark", "marker_problem", "plain", "split_marked"]

OPEN = "\ufdd0"
"""Start of an untrusted span (a Unicode noncharacter)."""
CLOSE = "\ufdd1"
"""End of an untrusted span (a Unicode noncharacter)."""


def mark(text: str) -> str:
    """``text`` wrapped as an untrusted span (empty text stays empty).

    Raises
    ------
    InputError
        If ``text`` contains U+FDD0 or U+FDD1, the noncharacters reserved for the markers.
    """
    problem = marker_problem(text)
    if problem is not None:
        raise InputError(problem)
    return f"{OPEN}{text}{CLOSE}" if text else text


def marker_problem(text: str) -> str | None:
    """Why ``text`` cannot be marked (it holds a reserved marker character), or None."""
    for reserved in (OPEN, CLOSE):
        at = text.find(reserved)
        if at >= 0:
            return (
                f"U+{ord(reserved):04X} at character {at} is a Unicode noncharacter this tool reserves "
                "to delimit untrusted text; remove it from the data"
            )
    return None


def split_marked(prompt: str) -> list[tuple[str, bool]]:
    """``(text, untrusted)`` pieces of ``prompt`` in order, markers removed; empty pieces dropped.

    Raises
    ------
    ValueError
        If a marker is unbalanced (a span opened and not closed, or closed without opening):
        a bug in the planner, never caused by data, which :func:`mark` keeps free of markers.
    """
    pieces: list[tuple[str, bool]] = []
    position = 0
    while True:
        start = prompt.find(OPEN, position)
        stray = prompt.find(CLOSE, position)
        if start < 0:
            if stray >= 0:
                raise ValueError("untrusted-text marker closed without being opened")
            if position < len(prompt):
                pieces.append((prompt[position:], False))
            return pieces
        if 0 <= stray < start:
            raise ValueError("untrusted-text marker closed without being opened")
        end = prompt.find(CLOSE, start + len(OPEN))
        if end < 0:
            raise ValueError("untrusted-text marker opened and not closed")
        if start > position:
            pieces.append((prompt[position:start], False))
        inner = prompt[start + len(OPEN) : end]
        if OPEN in inner:
            raise ValueError("untrusted-text markers are nested")
        if inner:
            pieces.append((inner, True))
        position = end + len(CLOSE)


def plain(prompt: str) -> str:
    """``prompt`` as the model reads it: the markers removed, every character kept."""
    return prompt.replace(OPEN, "").replace(CLOSE, "")
