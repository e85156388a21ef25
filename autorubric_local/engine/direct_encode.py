"""Token ids straight from a fast tokenizer's Rust backend, skipping transformers' wrapper.

``tokenizer.encode(text, add_special_tokens=False)`` on a transformers fast tokenizer
(``TokenizersBackend``, alias ``PreTrainedTokenizerFast``) validates its input, resets the
backend's truncation and padding, sets the backend's ``encode_special_tokens`` flag to
``split_special_tokens``, calls ``backend.encode_batch([text], add_special_tokens=False)`` and
converts the result to a ``BatchEncoding``; about 0.1 ms of Python a call, which a judgment
pays several times (prompt and each label, :mod:`.chat_text`). :func:`direct_encoder` returns a
function doing the same backend call without the wrapper when that is exactly what the wrapper
would run (a fast tokenizer whose backend has no truncation or padding set), else one that calls
``tokenizer.encode``. ``tests/test_direct_encode.py`` compares both on hostile text for the
tiny test tokenizer and both real judge families, with special-token parsing on and off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Encoder = Callable[[str, bool], list[int]]
"""``encode(text, split_special_tokens) -> ids``, no special tokens added."""


def _wrapped(tokenizer: Any) -> Encoder:
    def encode(text: str, split_special_tokens: bool) -> list[int]:
        if split_special_tokens:
            return list(tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True))
        return list(tokenizer.encode(text, add_special_tokens=False))

    return encode


def direct_encoder(tokenizer: Any) -> Encoder:
    """An :data:`Encoder` equal to ``tokenizer.encode(text, add_special_tokens=False,
    split_special_tokens=...)``: the backend's own ``encode`` when ``tokenizer`` is a
    transformers fast tokenizer (checked per call: its backend still has no truncation or
    padding, which the wrapper would switch off), else the wrapper itself.

    The default of ``split_special_tokens`` (False) is the tokenizer's ``split_special_tokens``
    attribute in transformers; a tokenizer whose attribute is True gets the wrapper.
    """
    try:
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:  # a transformers without this class: keep its own encode
        return _wrapped(tokenizer)
    backend = getattr(tokenizer, "_tokenizer", None)
    if not isinstance(tokenizer, TokenizersBackend) or backend is None or getattr(tokenizer, "split_special_tokens", False):
        return _wrapped(tokenizer)
    wrapped = _wrapped(tokenizer)

    def encode(text: str, split_special_tokens: bool) -> list[int]:
        if backend.truncation is not None or backend.padding is not None:
            return wrapped(text, split_special_tokens)  # the wrapper turns them off first
        if backend.encode_special_tokens != split_special_tokens:
            backend.encode_special_tokens = split_special_tokens
        return list(backend.encode(text, add_special_tokens=False).ids)

    return encode
