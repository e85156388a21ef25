"""Token ids straight from a fast tokenizer's Rust backend, skipping transformers' wrapper.

``tokenizer.encode(text, add_special_tokens=False)`` on a transformers fast tokenizer
(``TokenizersBackend``, alias ``PreTrainedTokenizerFast``) validates its input, resets the
backend's truncation and padding, sets the backend's ``encode_special_tokens`` flag to
``split_special_tokens``, calls ``backend.encode_batch([text], add_special_tokens=False)`` and
converts the result to a ``BatchEncoding``: Python work on every call, which a judgment pays
several times (prompt and each label, :mod:`.chat_text`). :func:`direct_encoder` returns a
function doing the same backend call without the wrapper (``encode_batch_fast`` of one text
where the backend has it: the same ids, no character offsets) when that is exactly what the wrapper
would run (a fast tokenizer class overriding neither ``encode`` nor ``_encode_plus``, whose
backend has no truncation or padding set), else one that calls ``tokenizer.encode``. ``tests/test_direct_encode.py`` compares both on hostile text for the
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
    transformers fast tokenizer whose class overrides neither ``encode`` nor ``_encode_plus``
    (checked per call: its backend still has no truncation or padding, which the wrapper would
    switch off, and its ``split_special_tokens`` attribute is still False), else the wrapper.
    """
    try:
        from transformers.tokenization_utils_base import PreTrainedTokenizerBase
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:  # a transformers without these classes: keep its own encode
        return _wrapped(tokenizer)
    backend = getattr(tokenizer, "_tokenizer", None)
    kind = type(tokenizer)
    # A subclass that overrides the wrapper (CodeLlama's infilling split of "<FILL_ME>") is not
    # the plain backend call: it keeps its own encode.
    plain = (isinstance(tokenizer, TokenizersBackend) and backend is not None
             and kind.encode is PreTrainedTokenizerBase.encode and kind._encode_plus is TokenizersBackend._encode_plus)
    wrapped = _wrapped(tokenizer)
    if not plain:
        return wrapped
    # tokenizers >= 0.21: the same ids without the character offsets ``encode`` also computes
    fast = getattr(backend, "encode_batch_fast", None)

    def encode(text: str, split_special_tokens: bool) -> list[int]:
        if (backend.truncation is not None or backend.padding is not None
                or getattr(tokenizer, "split_special_tokens", False)):
            return wrapped(text, split_special_tokens)  # the wrapper turns them off, or splits by default
        if backend.encode_special_tokens != split_special_tokens:
            backend.encode_special_tokens = split_special_tokens
        if fast is not None:
            return list(fast([text], add_special_tokens=False)[0].ids)
        return list(backend.encode(text, add_special_tokens=False).ids)

    return encode
