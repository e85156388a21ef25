"""Text handling shared by backends that wrap a Hugging Face tokenizer."""

from __future__ import annotations

import re
from typing import Any

from autorubric_local.engine.user_text import split_marked

_MAX_MEMOISED = 100_000


class HFTextMixin:
    """``tokens`` (memoised, no special tokens added) and ``format_chat`` over ``self.tokenizer``."""

    tokenizer: Any
    _token_cache: dict[str, list[int]]

    def tokens(self, text: str) -> list[int]:
        """Token ids of ``text`` as the tokenizer encodes it, except that data text stays text.

        Spans marked untrusted (:mod:`.user_text`) never yield a special token:

        - when no special-token string lies in (or reaches into) a marked span, the prompt is
          encoded in one call as the tokenizer would encode ``plain(text)``: the marks add no
          seam, and the template's special-token strings become their ids;
        - otherwise the template's own special tokens (strings wholly in trusted text) become
          their ids, and each run of text between two of them, trusted and untrusted together,
          is encoded in one call with special-token parsing off, so the strings in data are
          read as characters. Tokenizers that prepend a word-boundary marker per call
          (SentencePiece-style) may then add one at those runs' starts: the price of
          reading hostile text safely.

        Memoised.
        """
        cache = self.__dict__.setdefault("_token_cache", {})
        cached = cache.get(text)
        if cached is None:
            cached = self._encode_marked(text)
            if len(cache) < _MAX_MEMOISED:
                cache[text] = cached
        return cached

    def _encode_marked(self, text: str) -> list[int]:
        pieces = split_marked(text)
        pattern, ids_of = self._control_tokens()
        plain_text = "".join(piece for piece, _ in pieces)
        if pattern is None or not _special_in_untrusted(pieces, pattern):
            return list(self.tokenizer.encode(plain_text, add_special_tokens=False))
        out: list[int] = []
        run: list[str] = []

        def flush() -> None:
            if run:
                out.extend(self.tokenizer.encode("".join(run), add_special_tokens=False, split_special_tokens=True))
                run.clear()

        for piece, untrusted in pieces:
            if untrusted:
                run.append(piece)
                continue
            position = 0
            for found in pattern.finditer(piece):
                run.append(piece[position : found.start()])
                flush()
                out.append(ids_of[found.group()])
                position = found.end()
            run.append(piece[position:])
        flush()
        return out

    def _control_tokens(self) -> tuple[re.Pattern[str] | None, dict[str, int]]:
        """The tokenizer's special-token strings as one pattern (longest first) and their ids."""
        known = self.__dict__.get("_controls")
        if known is None:
            ids_of = {t.content: i for i, t in self.tokenizer.added_tokens_decoder.items() if t.special and t.content}
            ordered = sorted(ids_of, key=len, reverse=True)
            pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
            known = self.__dict__["_controls"] = (pattern, ids_of)
        return known

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        """Render ``messages`` with the tokenizer's chat template (plain text when it has none)."""
        if getattr(self.tokenizer, "chat_template", None):
            return str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
        return "".join(f"{m['role'].upper()}:\n{m['content']}\n\n" for m in messages) + "ASSISTANT:\n"


def _special_in_untrusted(pieces: list[tuple[str, bool]], pattern: re.Pattern[str]) -> bool:
    """Whether a special-token string of the joined text overlaps an untrusted piece."""
    untrusted: list[tuple[int, int]] = []
    position = 0
    for piece, flag in pieces:
        if flag:
            untrusted.append((position, position + len(piece)))
        position += len(piece)
    if not untrusted:
        return False
    joined = "".join(piece for piece, _ in pieces)
    return any(
        start < found.end() and found.start() < end
        for found in pattern.finditer(joined)
        for start, end in untrusted
    )
