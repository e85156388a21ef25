"""Text that may not be valid Unicode: Python strings can hold lone surrogates (from a JSON
``"\\ud800"`` escape, say), which UTF-8, SQLite and tokenizers refuse. These helpers let such
text be hashed, checked and stored without raising, so one bad item fails on its own."""

from __future__ import annotations

import re

__all__ = ["storable", "unicode_problem", "utf8"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8(text: str) -> bytes:
    """UTF-8 bytes of ``text``; lone surrogates pass through (same bytes as ``encode()`` otherwise)."""
    return text.encode("utf-8", "surrogatepass")


def unicode_problem(text: str) -> str | None:
    """Why ``text`` is not valid Unicode text (its first lone surrogate), or None."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"lone surrogate U+{ord(found.group()):04X} at character {found.start()} is not valid Unicode text"


def storable(text: str | None) -> str | None:
    """``text`` with each lone surrogate written as a ``\\uXXXX`` escape (for display columns)."""
    if text is None:
        return None
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
