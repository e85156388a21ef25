"""Which attention path the transformers backend may take for a model, and its masks.

The packed token trie (:mod:`.packing`) and branch decoding feed many sequences through one
forward pass and separate them with a custom additive attention mask over a plain key/value
cache that keeps every token. That is exact only where the model applies that mask as given:

- the attention implementation reads a 4D mask (``eager``, ``sdpa``); FlashAttention-2 and the
  other kernels take only padding information and would let every trie node see every other;
- every layer is full attention or sliding-window attention (Gemma 2/3, Mistral, Qwen2 with
  ``use_sliding_window``). A sliding-window layer lets a query at position ``q`` see a key at
  position ``k`` only when ``q - k < window`` (transformers' ``sliding_window_overlay``), so its
  mask is the trie mask AND that window, built from the nodes' position ids; a model that mixes
  both kinds gets one mask per layer type (the ``{"full_attention": ..., "sliding_attention":
  ...}`` mapping those models accept in place of a mask);
- other layer kinds (chunked attention, state-space or linear-attention layers, layers that
  reuse another layer's cache) keep state the trie cannot branch or crop.

Anything else takes the *plain* path: each prompt, with its label continuations, is run as
ordinary sequences with the model's own cache and masks, which is correct for any model and
slower. :func:`plan_attention` decides once per engine; the decision's ``description`` is
recorded with every run that uses the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

MASKED_IMPLEMENTATIONS: tuple[str, ...] = ("eager", "sdpa")
"""Attention implementations that apply a custom 4D additive mask as given."""

FULL, SLIDING = "full_attention", "sliding_attention"


@dataclass(frozen=True)
class AttentionPlan:
    """How one model's attention is driven.

    Attributes
    ----------
    packed : bool
        True: packed-trie scoring and branch decoding with custom masks; False: plain path.
    window : int or None
        Sliding window in tokens of the sliding layers (None when there are none).
    layer_types : tuple of str
        The layer types present (``"full_attention"``, ``"sliding_attention"``, ...), sorted.
    description : str
        One line recorded per run, e.g. ``"packed-trie (sdpa; full attention)"``.
    """

    packed: bool
    window: int | None
    layer_types: tuple[str, ...]
    description: str

    @property
    def windowed(self) -> bool:
        """Whether some layers need the sliding window in their mask (:func:`additive_masks`)."""
        return SLIDING in self.layer_types and self.window is not None

    @property
    def per_layer_type(self) -> bool:
        """Whether the model gets one mask per layer type (full and sliding layers mixed)."""
        return self.packed and set(self.layer_types) == {FULL, SLIDING}


def plan_attention(model: Any, *, force_plain: str | None = None) -> AttentionPlan:
    """Decide the attention path for ``model`` (a transformers causal LM); module docstring.

    ``force_plain``: a reason to take the plain path regardless (for tests and for a model the
    packed path failed on).
    """
    config = model.config
    implementation = str(getattr(config, "_attn_implementation", None) or "eager")
    types, windows = _layer_types(config)
    kinds = tuple(sorted(set(types)))
    window = windows.pop() if len(windows) == 1 else None
    reason = force_plain
    if reason is None and implementation not in MASKED_IMPLEMENTATIONS:
        reason = f"{implementation} attention does not apply custom attention masks"
    if reason is None and not set(kinds) <= {FULL, SLIDING}:
        reason = f"layer types {', '.join(k for k in kinds if k not in (FULL, SLIDING))} cannot be packed"
    if reason is None and len(windows) > 1:
        reason = f"sliding layers with different windows {sorted(windows)}"
    if reason is not None:
        return AttentionPlan(False, window, kinds, f"plain ({reason})")
    if SLIDING not in kinds:
        layout = "full attention"
    elif FULL not in kinds:
        layout = f"sliding window {window} in every layer, honoured in the mask"
    else:
        layout = (f"sliding window {window} in {types.count(SLIDING)} of {len(types)} layers, "
                  "one mask per layer type")
    return AttentionPlan(True, window, kinds, f"packed-trie ({implementation}; {layout})")


def _layer_types(config: Any) -> tuple[list[str], set[int]]:
    """Per-layer attention types of ``config`` and the distinct sliding windows."""
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    try:
        from transformers.cache_utils import get_layer_types_and_kwargs

        types, kwargs = get_layer_types_and_kwargs(text)
    except (ImportError, AttributeError, TypeError):  # an older or different transformers
        window = getattr(text, "sliding_window", None) if getattr(text, "use_sliding_window", True) else None
        n = int(getattr(text, "num_hidden_layers", 1))
        types = list(getattr(text, "layer_types", None) or [SLIDING if window else FULL] * n)
        kwargs = [{"sliding_window": window}] * len(types)
    # transformers' own pairing does not require equal lengths (kwargs may be shorter)
    windows = {int(k["sliding_window"]) for t, k in zip(types, kwargs, strict=False)
               if t == SLIDING and k.get("sliding_window")}
    return list(types), windows


def additive_masks(
    plan: AttentionPlan,
    allowed: torch.Tensor,
    query_positions: torch.Tensor,
    key_positions: torch.Tensor,
    dtype: Any,
    device: Any,
) -> torch.Tensor | dict[str, torch.Tensor]:
    """Additive attention mask(s), shape (1, 1, n_queries, n_keys): 0 allowed, dtype min elsewhere.

    ``allowed`` (bool, (n_queries, n_keys)) is the trie/branch rule; sliding layers also need
    ``query_position - key_position < window`` (positions: long tensors of shape (n_queries,)
    and (n_keys,)). Returns one tensor when every layer gets the same mask, else a mapping
    layer type -> mask.
    """
    import torch

    def additive(rule: torch.Tensor) -> torch.Tensor:
        # built where the rule is (on the accelerator when the caller built it there), then moved
        mask = torch.zeros(rule.shape, dtype=dtype, device=rule.device)
        mask.masked_fill_(~rule, torch.finfo(dtype).min)
        return mask[None, None].to(device)

    if not plan.windowed:
        return additive(allowed)
    near = (query_positions[:, None] - key_positions[None, :]) < plan.window
    sliding = additive(allowed & near)
    if FULL not in plan.layer_types:
        return sliding
    return {FULL: additive(allowed), SLIDING: sliding}
