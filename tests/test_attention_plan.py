"""Which attention path the transformers backend takes, per model config (no weights needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import Gemma3TextConfig, LlamaConfig, MistralConfig

from autorubric_local.engine.transformers.attention import (
    FULL,
    SLIDING,
    additive_masks,
    plan_attention,
)


def model_of(config: object, implementation: str = "sdpa") -> SimpleNamespace:
    config._attn_implementation = implementation  # type: ignore[attr-defined]
    return SimpleNamespace(config=config)


def small(cls: type, **kwargs: object) -> object:
    return cls(hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
               num_key_value_heads=1, vocab_size=128, **kwargs)


def test_full_attention_model_is_packed() -> None:
    plan = plan_attention(model_of(small(LlamaConfig)))
    assert plan.packed and plan.layer_types == (FULL,) and not plan.per_layer_type
    assert plan.description == "packed-trie (sdpa; full attention)"


def test_mixed_sliding_model_gets_one_mask_per_layer_type() -> None:
    config = small(Gemma3TextConfig, sliding_window=16, head_dim=16)
    plan = plan_attention(model_of(config, "eager"))
    assert plan.packed and plan.per_layer_type and plan.window == 16
    assert plan.description == ("packed-trie (eager; sliding window 16 in 5 of 6 layers, one mask per layer type)")


def test_all_sliding_model_gets_the_window_in_one_mask() -> None:
    plan = plan_attention(model_of(small(MistralConfig, sliding_window=8)))
    assert plan.packed and plan.layer_types == (SLIDING,) and plan.window == 8 and not plan.per_layer_type


@pytest.mark.parametrize("implementation", ["flash_attention_2", "flex_attention", "paged|sdpa"])
def test_kernels_without_custom_masks_take_the_plain_path(implementation: str) -> None:
    plan = plan_attention(model_of(small(LlamaConfig), implementation))
    assert not plan.packed
    assert plan.description == f"plain ({implementation} attention does not apply custom attention masks)"


def test_other_layer_kinds_take_the_plain_path() -> None:
    config = small(LlamaConfig)
    config.layer_types = ["full_attention", "chunked_attention"] * 3
    plan = plan_attention(model_of(config))
    assert not plan.packed and "chunked_attention" in plan.description


def test_plain_is_taken_when_asked() -> None:
    plan = plan_attention(model_of(small(LlamaConfig)), force_plain="requested")
    assert not plan.packed and plan.description == "plain (requested)"


def test_sliding_masks_apply_the_window_by_position() -> None:
    """Key k is visible to query q iff the trie allows it and pos(q) - pos(k) < window."""
    plan = plan_attention(model_of(small(Gemma3TextConfig, sliding_window=3, head_dim=16)))
    allowed = torch.ones(2, 6, dtype=torch.bool)
    allowed[1, 4] = False  # a trie sibling
    masks = additive_masks(plan, allowed, torch.tensor([4, 5]), torch.arange(6), torch.float32, "cpu")
    assert set(masks) == {FULL, SLIDING}
    visible = {name: (mask[0, 0] == 0).tolist() for name, mask in masks.items()}
    assert visible[FULL] == [[True] * 6, [True, True, True, True, False, True]]
    assert visible[SLIDING] == [[False, False, True, True, True, True], [False, False, False, True, False, True]]
