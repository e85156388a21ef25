"""The prompt text of a hosted judge: a reversible serialisation of its chat messages.

Graders build prompts as text, ``engine.format_chat(messages)`` split into a shared prefix and
a per-criterion suffix (``graders/prompts.py``). A hosted model takes a messages list, not
text, so the hosted engine's :func:`format_chat` writes each message as a role marker followed
by its content, and :func:`parse_chat` turns ``prefix + suffix`` back into exactly the messages
that were formatted (with the criterion inside the user message), plus the assistant text the
grader appended after the opened assistant turn (the JSON answer opener).

A role marker is ``U+FDD2 <role> U+FDD3``. U+FDD2/U+FDD3 are Unicode noncharacters no real text
holds, and :func:`parse_chat` looks for markers only outside the untrusted spans marked with
:func:`~.user_text.mark` (submission, query, criterion ...), so data can never forge a message.
Messages are sent with those span markers removed (:func:`~.user_text.plain`).

Example
-------
>>> text = format_chat([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])
>>> parse_chat(text + '{"criterion_status": "')
([{'role': 'system', 'content': 'S'}, {'role': 'user', 'content': 'U'}], '{"criterion_status": "')
"""

from __future__ import annotations

from autorubric_local.engine.requests import JudgeRequest, render_spans
from autorubric_local.engine.user_text import plain, split_marked

__all__ = ["ROLE_CLOSE", "ROLE_OPEN", "format_chat", "judgment_messages", "parse_chat"]

ROLE_OPEN = "\ufdd2"
ROLE_CLOSE = "\ufdd3"
ROLES = ("system", "user", "assistant")


def _marker(role: str) -> str:
    return f"{ROLE_OPEN}{role}{ROLE_CLOSE}"


def format_chat(messages: list[dict[str, str]]) -> str:
    """Serialise ``messages`` (roles system, user, assistant) and open the assistant turn.

    Raises
    ------
    ValueError
        On an unknown role, or content holding U+FDD2/U+FDD3 outside a marked span.
    """
    parts: list[str] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role not in ROLES:
            raise ValueError(f"unknown chat role {role!r}; expected one of {ROLES}")
        if any(not untrusted and (ROLE_OPEN in text or ROLE_CLOSE in text) for text, untrusted in split_marked(content)):
            raise ValueError("message content holds a hosted-chat role marker (U+FDD2/U+FDD3)")
        parts.append(_marker(role) + content)
    return "".join(parts) + _marker("assistant")


def parse_chat(text: str) -> tuple[list[dict[str, str]], str]:
    """Invert :func:`format_chat`: the messages (plain text) and the opened assistant turn's text.

    Returns
    -------
    messages : list of {"role", "content"}
        Every message before the last assistant marker.
    assistant_text : str
        What follows the last assistant marker (plain), e.g. ``'{"criterion_status": "'``.

    Raises
    ------
    ValueError
        If the text does not start with a role marker or has no opened assistant turn.
    """
    turns: list[tuple[str, list[str]]] = []
    for segment, untrusted in split_marked(text):
        if untrusted:
            if not turns:
                raise ValueError("hosted chat text must start with a role marker")
            turns[-1][1].append(segment)
            continue
        pieces = segment.split(ROLE_OPEN)
        if pieces[0]:
            if not turns:
                raise ValueError("hosted chat text must start with a role marker")
            turns[-1][1].append(pieces[0])
        for piece in pieces[1:]:
            role, sep, content = piece.partition(ROLE_CLOSE)
            if not sep or role not in ROLES:
                raise ValueError(f"malformed hosted chat role marker near {piece[:20]!r}")
            turns.append((role, [content] if content else []))
    if not turns or turns[-1][0] != "assistant":
        raise ValueError("hosted chat text has no opened assistant turn")
    messages = [{"role": role, "content": plain("".join(parts))} for role, parts in turns[:-1]]
    return messages, plain("".join(turns[-1][1]))


def judgment_messages(judgment: JudgeRequest) -> list[dict[str, str]]:
    """The chat messages a hosted judge is sent for ``judgment``, rendered from its structure.

    A system message (the item's system prompt) and one user message (the item's user-turn
    head, then the per-criterion block), span markers removed (:func:`~.user_text.plain`). The
    assistant opener is not a message: a chat API answers a whole turn, its schema taken from
    ``judgment.answer``. These are exactly the messages the grader's prompt text serialises
    (``format_chat`` of the item, the block inside the user turn).
    """
    user = render_spans(judgment.item.user_head) + render_spans(judgment.block)
    return [{"role": "system", "content": plain(judgment.item.system)}, {"role": "user", "content": plain(user)}]
