"""Text handling shared by backends that wrap a Hugging Face tokenizer."""

from __future__ import annotations

from typing import Any

from autorubric_local.engine.user_text import split_marked

_MAX_MEMOISED = 100_000


class HFTextMixin:
    """``tokens`` (memoised, no special tokens added) and ``format_chat`` over ``self.tokenizer``."""

    tokenizer: Any
    _token_cache: dict[str, list[int]]

    def tokens(self, text: str) -> list[int]:
        """Token ids of ``text`` without added special tokens (memoised).

        Spans marked untrusted (:mod:`.user_text`) are encoded with special-token parsing off,
        so a special-token string inside them becomes ordinary tokens; the rest (the chat
        template's own text) is encoded as usual. The markers themselves are never encoded.
        """
        cache = self.__dict__.setdefault("_token_cache", {})
        cached = cache.get(text)
        if cached is None:
            cached = []
            for piece, untrusted in split_marked(text):
                if untrusted:
                    cached.extend(self.tokenizer.encode(piece, add_special_tokens=False, split_special_tokens=True))
                else:
                    cached.extend(self.tokenizer.encode(piece, add_special_tokens=False))
            if len(cache) < _MAX_MEMOISED:
                cache[text] = cached
        return cached

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        """Render ``messages`` with the tokenizer's chat template (plain text when it has none)."""
        if getattr(self.tokenizer, "chat_template", None):
            return str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
        return "".join(f"{m['role'].upper()}:\n{m['content']}\n\n" for m in messages) + "ASSISTANT:\n"
