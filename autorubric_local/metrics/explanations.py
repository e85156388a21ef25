"""Do explanations address the criterion or copy the submission? (issue 20)

A weak judge asked to explain often pastes the submission back. :func:`copy_rate` measures how
much of an explanation is verbatim submission text: the share of its words that lie in a run of
at least ``min_words`` consecutive words also found, in the same order, in the submission.
Matching blocks come from :class:`difflib.SequenceMatcher` over the two word lists (case and
surrounding punctuation ignored), with its junk heuristic off so frequent words still match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

_WORD = re.compile(r"\w+(?:['’]\w+)*")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (letters, digits, inner apostrophes), punctuation dropped."""
    return [w.lower() for w in _WORD.findall(text)]


def copy_rate(explanation: str, submission: str, *, min_words: int = 5) -> float | None:
    """Share of ``explanation``'s words inside verbatim runs of >= ``min_words`` submission words.

    Returns a float in [0, 1], or None for an explanation with no words.

    Raises
    ------
    ValueError
        If ``min_words`` < 1.
    """
    if min_words < 1:
        raise ValueError(f"min_words must be >= 1, got {min_words}")
    said, source = words(explanation), words(submission)
    if not said:
        return None
    matcher = SequenceMatcher(None, said, source, autojunk=False)
    copied = sum(block.size for block in matcher.get_matching_blocks() if block.size >= min_words)
    return copied / len(said)


def mean_copy_rate(pairs: Sequence[tuple[str, str]], *, min_words: int = 5) -> float | None:
    """Mean :func:`copy_rate` over ``(explanation, submission)`` pairs with words; None if none."""
    rates = [r for e, s in pairs if (r := copy_rate(e, s, min_words=min_words)) is not None]
    return sum(rates) / len(rates) if rates else None
