"""Hard cuts: places where a text can be encoded in two calls with exactly the one call's tokens.

Encoding ``head + tail`` in one call is the reference (:mod:`.chat_text`, "Exact tokenization"),
but many prompts share one long head (the system text and the submission) and differ only in a
short tail (criterion, label). This module finds, in the head, a position ``c`` where the
tokenizer provably never lets a token or pre-token span the boundary, so that

``encode(head + tail) == encode(head[:c]) + encode(head[c:] + tail)``

and ``encode(head[:c])`` can be computed once for every tail.

The cut
-------
``c`` is a position with an ASCII letter at ``c - 1``, a space (U+0020) at ``c`` and an ASCII
letter at ``c + 1`` (ASCII, so that every Unicode version agrees on what a letter is). It is
accepted only for tokenizers whose pipeline is one of these (:func:`supports_cuts`, read from
the tokenizer's own ``tokenizer.json``):

- *Byte-level BPE* (GPT-2, SmolLM2): no normalizer, pre-tokenizer ``ByteLevel`` with its
  built-in regex. BPE merges never cross pre-tokens. The regex's pre-token holding the letter
  at ``c - 1`` (a letter run, or a contraction such as ``'s``) ends at ``c`` whatever follows
  ``c`` (a space is no letter; no alternative looks further), every earlier match is decided by
  text before ``c``, and the pattern has no look-behind or anchor, so matching from ``c`` on is
  the same in ``head + tail`` and in ``head[c:] + tail``.
- *SentencePiece-style BPE without pre-tokenizer* (Gemma 3 as converted here): normalizer
  ``Replace(" ", "▁")`` only, pre-tokenizer absent or a ``Split`` on ``" "`` (which finds no
  space after that normalizer), BPE over the whole text. A merge across ``c`` would produce a
  token containing ``<letter>▁``; the check requires that no vocabulary token contains one, so
  no merge crosses ``c``, and the merges on either side never see each other: each side merges
  as it would alone.

- *Regex-split byte-level BPE* (Llama 3, Qwen2 and Qwen2.5, Qwen3.5, Mistral's Tekken, GPT-4o's
  o200k as transformers writes them): normalizer absent or ``NFC``, pre-tokenizer a
  ``Sequence`` of a ``Split`` on one of the regexes in :data:`SPLIT_PATTERNS` (behaviour
  ``Isolated``, not inverted) and a ``ByteLevel`` without its own regex or prefix space. In each
  of those regexes a space can only open a match (an optional leading character) or sit in a
  whitespace-only match, so no match holds a letter followed by a space: the match holding the
  letter at ``c - 1`` ends at ``c``, having looked no further than ``c`` (where a space and the
  end of the text fail its character classes alike); the regexes have no look-behind or anchor,
  so matching from ``c`` on is the same in ``head + tail`` and in ``head[c:] + tail``. ``NFC``
  composes and reorders only within runs that start at a starter, and neither an ASCII letter
  nor U+0020 is ever the second character of a canonical composition, so it normalizes each
  side of ``c`` as it normalizes the whole (both sides keep their ASCII characters at ``c``).
  ``ByteLevel`` without its regex only maps each pre-token's bytes to characters.

In all, the BPE model must have no dropout and no subword prefix or suffix, and no added
token may contain ``<letter><space>`` or ``<letter>▁``, as written or in its NFC form (so the
added-token split, which comes first, never spans ``c``), or strip whitespace around it, or
match whole words only (``lstrip``/``rstrip``/``single_word``). Any other tokenizer gets no
cut: callers then encode
the whole text in one call, as before. The tests compare both ways on many prompts for both
judge families.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

SPACE = " "
META_SPACE = "\u2581"
SPLIT_PATTERNS: frozenset[str] = frozenset({
    # Llama 3 (transformers' convert_slow_tokenizer and GGUF mapping)
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # Qwen2 and Qwen2.5 (transformers' models/qwen2/tokenization_qwen2.py)
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # Qwen3.5 (letters with their combining marks)
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # Mistral Tekken (transformers' GGUF mapping)
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    # GPT-4o's o200k (transformers' GGUF mapping)
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
})
"""Pre-tokenizer regexes under which a cut is exact (module docstring, regex-split byte-level BPE).
Only these exact strings: another regex could let a match run across a space."""
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _has_letter_then(text: str, spaces: str) -> bool:
    """Whether ``text`` holds an ASCII letter followed by one of ``spaces``."""
    return any(text[i] in spaces and text[i - 1] in _LETTERS for i in range(1, len(text)))


def supports_cuts(tokenizer: Any) -> bool:
    """Whether :func:`last_cut` positions are exact for ``tokenizer`` (module docstring).

    ``tokenizer`` is a transformers fast tokenizer (``backend_tokenizer`` a ``tokenizers``
    object); anything else is not supported.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    try:
        model = backend.model  # type: ignore[union-attr]
        normalizer, pre = _spec(backend.normalizer), _spec(backend.pre_tokenizer)  # type: ignore[union-attr]
        added = list(backend.get_added_tokens_decoder().values())  # type: ignore[union-attr]
    except (AttributeError, TypeError, ValueError):
        return False
    if type(model).__name__ != "BPE" or model.dropout or model.continuing_subword_prefix or model.end_of_word_suffix:
        return False
    for token in added:
        # An added token marked ``normalized`` is matched in the normalized text: NFC turns
        # U+212A KELVIN SIGN into "K", so its NFC form is checked too.
        forms = (token.content, unicodedata.normalize("NFC", token.content))
        if token.lstrip or token.rstrip or token.single_word or any(
                _has_letter_then(form, SPACE + META_SPACE) for form in forms):
            return False
    if normalizer in (None, {"type": "NFC"}) and _regex_split_then_bytes(pre):
        return True
    if normalizer is None:
        return bool(pre and pre.get("type") == "ByteLevel" and pre.get("use_regex", True))
    spaces_to_meta = (normalizer.get("type") == "Replace" and normalizer.get("pattern") == {"String": SPACE}
                      and normalizer.get("content") == META_SPACE)
    split_on_space = pre is not None and pre.get("type") == "Split" and pre.get("pattern") == {"String": SPACE}
    if not spaces_to_meta or not (pre is None or split_on_space):
        return False
    vocab = backend.get_vocab(with_added_tokens=False)  # type: ignore[union-attr]
    return META_SPACE in vocab and not any(_has_letter_then(token, META_SPACE) for token in vocab)


def _regex_split_then_bytes(pre: dict[str, Any] | None) -> bool:
    """Whether ``pre`` is ``Sequence[Split(one of SPLIT_PATTERNS, Isolated), ByteLevel(no regex,
    no prefix space)]`` (module docstring)."""
    steps = pre.get("pretokenizers") if pre and pre.get("type") == "Sequence" else None
    if not steps or len(steps) != 2:
        return False
    split, byte_level = steps
    return (split.get("type") == "Split" and split.get("pattern", {}).get("Regex") in SPLIT_PATTERNS
            and split.get("behavior") == "Isolated" and not split.get("invert")
            and byte_level.get("type") == "ByteLevel" and byte_level.get("use_regex") is False
            and byte_level.get("add_prefix_space") is False)


def _spec(component: Any) -> dict[str, Any] | None:
    """A ``tokenizers`` normalizer or pre-tokenizer as its JSON object (None when absent)."""
    return None if component is None else json.loads(component.__getstate__())


def last_cut(pieces: list[tuple[str, bool]]) -> tuple[int, int] | None:
    """The last cut inside one piece of ``pieces``, as ``(piece index, offset of the space)``.

    A cut is a space with an ASCII letter on both sides within the same piece (so the text
    after it is never empty); None when there is none.
    """
    for index in range(len(pieces) - 1, -1, -1):
        text = pieces[index][0]
        at = text.rfind(SPACE, 1, len(text) - 1)
        while at > 0:
            if text[at - 1] in _LETTERS and text[at + 1] in _LETTERS:
                return index, at
            at = text.rfind(SPACE, 1, at)
    return None


def first_cut(pieces: list[tuple[str, bool]]) -> tuple[int, int] | None:
    """The first cut inside one piece of ``pieces``, as :func:`last_cut` gives the last."""
    for index, (text, _) in enumerate(pieces):
        at = text.find(SPACE, 1, len(text) - 1)
        while at > 0:
            if text[at - 1] in _LETTERS and text[at + 1] in _LETTERS:
                return index, at
            at = text.find(SPACE, at + 1, len(text) - 1)
    return None


def split_at(pieces: list[tuple[str, bool]], at: tuple[int, int]) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """``pieces`` split at ``at`` (``(piece index, offset)``, as :func:`last_cut` gives): the
    pieces before the offset and from it on, the split piece's half on each side."""
    index, offset = at
    text, untrusted = pieces[index]
    return [*pieces[:index], (text[:offset], untrusted)], [(text[offset:], untrusted), *pieces[index + 1 :]]


def join_pieces(left: list[tuple[str, bool]], right: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """``left + right`` with two trusted pieces at the seam merged into one, as
    :func:`~.user_text.split_marked` gives for the joined text (it keeps adjacent untrusted
    spans apart)."""
    if left and right and not left[-1][1] and not right[0][1]:
        return [*left[:-1], (left[-1][0] + right[0][0], left[-1][1]), *right[1:]]
    return [*left, *right]
