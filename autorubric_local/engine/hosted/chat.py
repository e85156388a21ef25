"""The chat messages of a hosted judge, and the prompt text that serialises them.

A hosted model takes a messages list, not text. The hosted engine renders each request's
messages from its structure (:func:`judgment_messages` of ``request.judgment``): the item's
system prompt as the system message, the item's user-turn head and the per-criterion block as
the user message, span markers removed (:func:`~.user_text.plain`). No assistant opener is
sent (a chat API answers a whole turn) and the answer's schema comes from
``judgment.answer``; nothing is parsed back out of the prompt text.

Graders still build prompts as text, ``engine.format_chat(messages)`` split into a shared
prefix and a per-criterion suffix (``graders/prompts.py``), which planning hashes and caches
key by. The hosted :func:`format_chat` writes each message as a role marker followed by its
content: a marker is ``U+FDD2 <role> U+FDD3``, Unicode noncharacters no real text holds, and
it refuses a marker outside the untrusted spans marked with :func:`~.user_text.mark`
(submission, query, criterion ...), so the text is an unambiguous serialisation of the
messages. ``tests/test_hosted_messages.py`` checks, over a broad corpus of planned requests,
that :func:`judgment_messages` gives exactly the messages that ``prefix + suffix`` serialises
(its inverse lives in ``tests/hosted_chat.py``).

Example
-------
>>> format_chat([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])
'\ufdd2system\ufdd3S\ufdd2user\ufdd3U\ufdd2assistant\ufdd3'
"""

from __future__ import annotations

from autorubric_local.engine.requests import JudgeRequest, render_spans
from autorubric_local.engine.user_text import plain, split_marked

__all__ = ["ROLE_CLOSE", "ROLE_OPEN", "ROLES", "format_chat", "judgment_messages"]

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
