"""The inverse of the hosted chat serialisation, for tests only.

The hosted engine renders its messages from each request's structure
(:func:`autorubric_local.engine.hosted.chat.judgment_messages`) and never parses prompt text.
:func:`parse_chat` turns a hosted prompt (``prefix + suffix``) back into the messages
:func:`~autorubric_local.engine.hosted.chat.format_chat` serialised, so
``tests/test_hosted_messages.py`` can check that the structure and the text say the same thing.
"""

from __future__ import annotations

from autorubric_local.engine.hosted.chat import ROLE_CLOSE, ROLE_OPEN, ROLES
from autorubric_local.engine.user_text import plain, split_marked

__all__ = ["parse_chat"]


def parse_chat(text: str) -> tuple[list[dict[str, str]], str]:
    """Invert :func:`~autorubric_local.engine.hosted.chat.format_chat`: the messages (plain text)
    and the opened assistant turn's text.

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
