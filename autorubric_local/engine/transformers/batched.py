"""Batched packed scoring: many prefix groups in one forward pass (transformers backend).

The per-group path (:meth:`.transformers_backend.TransformersEngine._score_packed`) runs each
group of requests sharing a prefix alone: the prefix into a key/value cache (batch 1), then the
group's token trie on top of it (batch 1). Here each group whose trie fits one chunk becomes one
*unit*, the sequence ``prefix + trie row``, and units are stacked as right-padded rows of one
forward pass (batch > 1), with no cache:

- position ids per row: ``0 .. prefix_len - 1`` for the prefix, then the trie nodes' own
  (``prefix_len + depth``), 0 for padding;
- one 4D additive mask per row (:func:`unit_allowed`): the prefix is causal; a trie node sees the
  whole prefix and its trie ancestors (itself included), exactly :func:`~.packing.may_attend`;
  a padding slot sees only itself, so no softmax row is empty (no NaN) and no real token sees
  padding. Sliding-window layers get the window on top (:func:`~.attention.additive_masks`);
- logits only where a label token is predicted: ``logits_to_keep`` as a boolean
  (batch, seq) mask, which transformers turns into the gathered hidden states before the model's
  own LM head and logit post-processing (Gemma's final softcapping included).

Rows are sized from a token budget: padded ``rows x longest row <= max_batch_tokens``, groups
sorted by length so rows of one batch are alike (:func:`plan_batches`). A group whose trie needs
several chunks keeps the per-group path (one prefix cache for all its chunks), since a unit
would recompute its prefix once per chunk.

Accounting is the per-group path's: per request, prompt tokens and cache reads as
:func:`~.packing.prompt_shares` splits them; a batch's wall time is split among its units by
their real tokens, then within a group by :func:`~.packing.node_shares`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autorubric_local.engine.transformers.attention import AttentionPlan, additive_masks
from autorubric_local.engine.base import mass_outside
from autorubric_local.engine.transformers.packing import PackedRow
from autorubric_local.engine.transformers.paths import PathUnsupported, call_model

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Unit:
    """One group's prefix and packed trie: one row of a batched forward pass.

    Attributes
    ----------
    prefix_ids : list of int
        Token ids of the group's common prompt start (the shared prefix).
    row : PackedRow
        The group's token trie after the prefix (``row.prefix_len == len(prefix_ids)``).
    """

    prefix_ids: list[int]
    row: PackedRow

    @property
    def length(self) -> int:
        """Real tokens of the row: prefix plus trie nodes."""
        return len(self.prefix_ids) + len(self.row.token_ids)


def plan_batches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Group unit indices into batches of at most ``max_tokens`` padded tokens.

    Units are taken longest first (ties in input order); a batch grows while
    ``rows x longest row <= max_tokens``. A unit longer than ``max_tokens`` gets a batch of its
    own. Every index appears exactly once.

    Parameters
    ----------
    lengths : sequence of int
        Tokens of each unit (its row length before padding).
    max_tokens : int
        Padded tokens per batch, >= 1.

    Raises
    ------
    ValueError
        If ``max_tokens`` < 1.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    for index in order:
        if batches and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= max_tokens:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


def trie_allowed(row: PackedRow) -> torch.Tensor:
    """Bool (n_nodes, n_nodes): node ``q`` may see node ``k`` iff ``k`` is ``q`` or its ancestor.

    :func:`~.packing.may_attend` for every pair, built a chain at a time: a node is inserted
    after its parent (:func:`~.packing.pack_trie`), and the trie is mostly chains (each node's
    parent the node before it: a criterion's text, a label's tokens). A chain's rows are the row
    of the node it hangs from (one broadcast copy) plus a lower triangle over the chain itself,
    so a row of a few hundred nodes takes a few dozen numpy operations.
    """
    import numpy as np
    import torch

    n = len(row.token_ids)
    if n == 0:
        return torch.zeros((0, 0), dtype=torch.bool)
    parents = np.asarray(row.parents, dtype=np.int64)
    numbers = np.arange(n)
    if (parents >= numbers).any():  # _Trie.insert numbers a node after its parent; anything else is our bug
        node = int(np.flatnonzero(parents >= numbers)[0])
        raise AssertionError(f"trie node {node} has parent {int(parents[node])}: parents must come first")
    starts = np.flatnonzero(parents != numbers - 1)  # where a chain begins (node 0 hangs from the root)
    if starts.size == 0 or starts[0] != 0:
        starts = np.concatenate(([0], starts))
    ends = np.append(starts[1:], n)
    allowed = np.zeros((n, n), dtype=bool)
    triangle = np.tri(int((ends - starts).max()), dtype=bool)
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        parent = int(parents[start])
        if parent >= 0:
            allowed[start:end] = allowed[parent]
        allowed[start:end, start:end] = triangle[: end - start, : end - start]
    return torch.from_numpy(allowed)


def trie_block(row: PackedRow, dtype: Any, device: Any) -> torch.Tensor:
    """Additive (n_nodes, n_nodes) mask of a row's own nodes on ``device``: 0 where
    :func:`trie_allowed`, ``dtype``'s min elsewhere. The same for every placement of one trie
    (it does not depend on ``row.prefix_len``), so :mod:`.row_layouts` makes it once."""
    import torch

    n = len(row.token_ids)
    block = torch.zeros(n, n, dtype=dtype)
    block.masked_fill_(~trie_allowed(row), torch.finfo(dtype).min)
    return block.to(device)


def row_mask(plan: AttentionPlan, row: PackedRow, dtype: Any, device: Any,
             block: torch.Tensor | None = None) -> torch.Tensor | dict[str, torch.Tensor]:
    """Additive mask(s) of a packed row scored on top of its prefix's cache, shape
    (1, 1, n_row, prefix_len + n_row): 0 where attention is allowed, ``dtype``'s min elsewhere.

    Every node sees the whole prefix and, in the row, itself and its ancestors
    (:func:`trie_allowed`); sliding-window layers also need the window
    (:func:`~.attention.additive_masks`, one mask per layer type when they are mixed).
    ``block``: the row's :func:`trie_block` when already made (``dtype``, ``device``); a
    sliding-window plan ignores it.
    """
    import torch

    n = len(row.token_ids)
    if not plan.windowed:  # the prefix block is all zeros: made on the device, the row's block copied in
        mask = torch.zeros(n, row.prefix_len + n, dtype=dtype, device=device)
        mask[:, row.prefix_len :] = trie_block(row, dtype, device) if block is None else block
        return mask[None, None]
    full = torch.ones(n, row.prefix_len + n, dtype=torch.bool)
    full[:, row.prefix_len :] = trie_allowed(row)
    positions = torch.tensor(row.positions, dtype=torch.long)
    keys = torch.cat([torch.arange(row.prefix_len), positions])
    return additive_masks(plan, full, positions, keys, dtype, device)


def unit_allowed(unit: Unit, width: int, device: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention rule and position ids of one unit right-padded to ``width`` tokens.

    Returns ``(allowed, positions)`` on ``device`` (default CPU): bool (width, width), True where
    query may see key (prefix causal, trie nodes see the whole prefix and their ancestors,
    padding sees only itself), and long (width,) position ids (0 for padding). The (width,
    width) rule is allocated and filled on ``device``; only the trie's own (n, n) block comes
    from the host, so an accelerator does the O(width^2) work, not the CPU. (Building it by
    broadcast comparisons instead cost 7 ms more a judgment on CPU:
    ``scripts/results/ab_scale_masks_broadcast_2cpu_2026-11-28.txt``.)
    """
    import torch

    p, n = len(unit.prefix_ids), len(unit.row.token_ids)
    allowed = torch.zeros(width, width, dtype=torch.bool, device=device)
    allowed[:p, :p] = torch.ones(p, p, dtype=torch.bool, device=device).tril()
    allowed[p : p + n, :p] = True
    allowed[p : p + n, p : p + n] = trie_allowed(unit.row).to(device)
    pad = torch.arange(p + n, width, device=device)
    allowed[pad, pad] = True
    positions = torch.zeros(width, dtype=torch.long)
    positions[:p] = torch.arange(p)
    positions[p : p + n] = torch.tensor(unit.row.positions, dtype=torch.long)
    return allowed, positions.to(device)


def batch_masks(
    plan: AttentionPlan, units: Sequence[Unit], width: int, dtype: Any, device: Any
) -> tuple[torch.Tensor | dict[str, torch.Tensor], torch.Tensor]:
    """Additive masks (rows, 1, width, width) and position ids (rows, width) of a batch.

    One tensor, or one per layer type for models mixing full and sliding layers (as
    :func:`~.attention.additive_masks`).
    """
    import torch

    masks: list[Any] = []
    positions: list[torch.Tensor] = []
    for unit in units:
        allowed, pos = unit_allowed(unit, width, device)
        masks.append(additive_masks(plan, allowed, pos, pos, dtype, device))
        positions.append(pos)
    stacked_positions = torch.stack(positions)
    if isinstance(masks[0], dict):
        return {kind: torch.cat([m[kind] for m in masks]) for kind in masks[0]}, stacked_positions
    return torch.cat(masks), stacked_positions


def score_batch(model: Any, plan: AttentionPlan, units: Sequence[Unit]) -> list[list[tuple[tuple[float, ...], float]]]:
    """One forward pass over ``units`` as right-padded rows; per unit, per tree of its row,
    ``(label logprobs, off-label mass)`` as the per-group path computes them.

    Raises
    ------
    PathUnsupported
        The model's forward raised on these inputs, or returned logits of another shape than the
        kept positions (a transformers version or model without boolean ``logits_to_keep``).
    """
    import torch

    device = model.device
    width = max(unit.length for unit in units)
    input_ids = torch.zeros(len(units), width, dtype=torch.long)
    keep = torch.zeros(len(units), width, dtype=torch.bool)
    for b, unit in enumerate(units):
        p = len(unit.prefix_ids)
        input_ids[b, : unit.length] = torch.tensor([*unit.prefix_ids, *unit.row.token_ids], dtype=torch.long)
        keep[b, [p + node for node in unit.row.keep_positions]] = True
    mask, positions = batch_masks(plan, units, width, model.dtype, device)
    n_kept = int(keep.sum())
    logits = call_model(
        model, "batched",
        input_ids=input_ids.to(device),
        position_ids=positions,
        attention_mask=mask,
        use_cache=False,
        logits_to_keep=keep.to(device),
    ).logits
    if logits.ndim != 2 or logits.shape[0] != n_kept:
        raise PathUnsupported("batched", RuntimeError(
            f"boolean logits_to_keep gave logits of shape {tuple(logits.shape)}, expected ({n_kept}, vocab)"))
    logsoftmax = logits.float().log_softmax(-1)
    # Every needed (kept row, token) log-probability in one gather and one transfer.
    rows: list[int] = []
    tokens: list[int] = []
    offset = 0
    for unit in units:
        # Kept rows come in (row, position) order: this unit's kept nodes, sorted.
        where = {node: offset + i for i, node in enumerate(unit.row.keep_positions)}
        offset += len(where)
        for tree, end in zip(unit.row.targets, unit.row.ends, strict=True):
            for label in tree:
                rows.extend(where[node] for node, _ in label)
                tokens.extend(token for _, token in label)
            firsts = sorted({label[0][1] for label in tree})
            rows.extend([where[end]] * len(firsts))
            tokens.extend(firsts)
    values = iter(logsoftmax[torch.tensor(rows, device=logits.device), torch.tensor(tokens, device=logits.device)]
                  .tolist())
    out = []
    for unit in units:
        results = []
        for tree in unit.row.targets:
            logprobs = tuple(float(sum(next(values) for _ in label)) for label in tree)
            firsts = {label[0][1] for label in tree}
            results.append((logprobs, mass_outside([next(values) for _ in firsts])))
        out.append(results)
    return out


def run_units(
    model: Any, plan: AttentionPlan, units: Sequence[Unit], max_tokens: int
) -> tuple[list[list[tuple[tuple[float, ...], float]]], list[float]]:
    """Score every unit in batches of at most ``max_tokens`` padded tokens (:func:`plan_batches`).

    Returns per unit (input order) its trees' results (:func:`score_batch`) and its seconds: the
    wall time of its batch split among the batch's units by their real tokens.
    """
    results: list[list[tuple[tuple[float, ...], float]]] = [[] for _ in units]
    seconds = [0.0] * len(units)
    for batch in plan_batches([unit.length for unit in units], max_tokens):
        start = time.perf_counter()
        scored = score_batch(model, plan, [units[i] for i in batch])
        elapsed = time.perf_counter() - start
        real = sum(units[i].length for i in batch)
        for i, result in zip(batch, scored, strict=True):
            results[i] = result
            seconds[i] = elapsed * units[i].length / real
    return results, seconds
