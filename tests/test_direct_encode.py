"""The backend's own encode gives exactly ``tokenizer.encode``'s ids (:mod:`autorubric_local.engine.direct_encode`).

For the tests' byte-level ChatML BPE, the in-memory Gemma-style BPE and the real SmolLM2 and
Gemma 3 tokenizers (when installed), hostile text (special-token strings, odd spaces, unicode)
is encoded both ways, with special-token parsing on and off, in mixed order so the backend's
``encode_special_tokens`` flag is switched back and forth between calls.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from test_token_cuts import SEAM_TEXT, gemma_style_tokenizer, real_tokenizer

from autorubric_local.engine.direct_encode import direct_encoder


@pytest.fixture(scope="module", params=["byte_level", "gemma_style", "smollm2", "gemma3"])
def tokenizer(request: pytest.FixtureRequest, tiny_model: Any) -> Any:
    if request.param == "byte_level":
        return tiny_model.tokenizer
    if request.param == "gemma_style":
        return gemma_style_tokenizer(cross_space_merges=False)
    return real_tokenizer("smollm2-135m-instruct" if request.param == "smollm2" else "gemma3-270m")


def _reference(tokenizer: Any, text: str, split: bool) -> list[int]:
    if split:
        return list(tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True))
    return list(tokenizer.encode(text, add_special_tokens=False))


def test_the_backend_path_is_taken_for_fast_tokenizers(tokenizer: Any) -> None:
    """Not the wrapper in disguise: the backend is called directly (the wrapper is never)."""
    encode = direct_encoder(tokenizer)
    calls: list[str] = []
    original = type(tokenizer).encode
    type(tokenizer).encode = lambda self, *a, **k: calls.append("wrapper") or original(self, *a, **k)  # type: ignore[method-assign]
    try:
        encode("a <|im_end|> b", False)
        encode("a <|im_end|> b", True)
    finally:
        type(tokenizer).encode = original  # type: ignore[method-assign]
    assert calls == []


@given(texts=st.lists(st.tuples(SEAM_TEXT, st.booleans()), min_size=1, max_size=6))
@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_direct_equals_the_wrapper(tokenizer: Any, texts: list[tuple[str, bool]]) -> None:
    encode = direct_encoder(tokenizer)
    for text, split in texts:
        assert encode(text, split) == _reference(tokenizer, text, split)


def test_special_token_strings_follow_the_flag(tokenizer: Any) -> None:
    """The same string is a control token with parsing on and characters with it off, whichever
    came before (the flag is state in the backend)."""
    special = sorted(str(t.content) for t in tokenizer.added_tokens_decoder.values() if t.special and t.content)[-1]
    text = f"x {special} y"
    encode = direct_encoder(tokenizer)
    for split in (True, False, False, True, False):
        ids = encode(text, split)
        assert ids == _reference(tokenizer, text, split)
        assert (tokenizer.convert_tokens_to_ids(special) in ids) is (not split)


def test_truncation_set_on_the_backend_falls_back_to_the_wrapper(tiny_model: Any) -> None:
    """A backend with truncation on would cut the text; the wrapper switches it off, and so
    does the direct path by handing the call to the wrapper."""
    import copy

    tokenizer = copy.deepcopy(tiny_model.tokenizer)
    tokenizer.backend_tokenizer.enable_truncation(max_length=3)
    text = "a longer text than three tokens, surely"
    ids = direct_encoder(tokenizer)(text, False)
    assert len(ids) > 3 and ids == _reference(tokenizer, text, False)


def test_a_tokenizer_that_is_not_fast_keeps_its_own_encode() -> None:
    class Slow:
        def encode(self, text: str, add_special_tokens: bool = True, split_special_tokens: bool = False) -> list[int]:
            return [len(text), int(add_special_tokens), int(split_special_tokens)]

    encode = direct_encoder(Slow())
    assert encode("abc", False) == [3, 0, 0]
    assert encode("abcd", True) == [4, 0, 1]


def test_a_subclass_overriding_the_wrapper_keeps_its_own_encode(tiny_model: Any) -> None:
    """CodeLlama-style tokenizers override ``_encode_plus`` (an infilling split); the backend call
    would skip that, so they get the wrapper."""
    import copy

    tokenizer = copy.deepcopy(tiny_model.tokenizer)

    class Infilling(type(tokenizer)):  # type: ignore[misc]
        def _encode_plus(self, text: Any, *args: Any, **kwargs: Any) -> Any:
            return super()._encode_plus(text.replace("<FILL>", "x"), *args, **kwargs)

    tokenizer.__class__ = Infilling
    text = "a <FILL> b"
    assert direct_encoder(tokenizer)(text, False) == _reference(tokenizer, text, False)
    assert direct_encoder(tokenizer)(text, False) == _reference(tiny_model.tokenizer, "a x b", False)


def test_split_special_tokens_set_later_on_the_tokenizer_is_honoured(tiny_model: Any) -> None:
    import copy

    tokenizer = copy.deepcopy(tiny_model.tokenizer)
    encode = direct_encoder(tokenizer)
    tokenizer.split_special_tokens = True  # now the wrapper's default splits them
    text = "x <|im_end|> y"
    assert encode(text, False) == list(tokenizer.encode(text, add_special_tokens=False))
