"""Cross-item batched constrained decoding (transformers backend, explain mode).

The per-group path (:meth:`.backend.TransformersEngine._decode_branches`) decodes the branches
(criteria) of one item below that item's prefix cache, one token per open branch per step, then
the next item: a step's forward pass carries at most one item's branches (<= 14 tokens), so a
decode-bound workload pays one pass per token *per item*. Here the open branches of many items
advance in one forward pass per step.

KV layout: a right-padded batch of per-item caches
    One row of a :class:`transformers.DynamicCache` per *unit* (an item's prefix plus one chunk
    of its suffix trie, exactly what the per-group path has in its cache when it starts
    decoding), right-padded to the longest unit. Each step appends ``W`` key slots to every row,
    ``W`` the most branches open in any row; row ``b``'s ``j``-th open branch feeds its token at
    slot ``K + j`` (``K`` the keys so far) and the rest of the row's new slots are padding. One
    additive 4-D mask ``(rows, 1, W, K + W)`` says who sees what: a branch sees its item's whole
    prefix, its own suffix path in the trie and its own generated tokens, exactly the per-group
    rule (:func:`~.packing.may_attend`); it never sees padding, another branch, or another row
    (rows are separate sequences of the batch). A padding query sees only its row's first key,
    so no softmax row is empty. Position ids are each token's own (its item's prefix length plus
    its depth), so RoPE sees what the per-group and plain paths give it.

    Why this layout: it is what HF's :class:`~transformers.DynamicCache` and the ``sdpa`` /
    ``eager`` attention take as they are (a batch of equal-length key rows and a 4-D additive
    mask, the mask the packed path already relies on), so the per-item prefill stays the
    per-group path's own code and numbers, and only the decode steps change. A packed layout
    (every unit's keys in one row with block masks) would make each step attend over every
    item's keys (rows x keys instead of keys); transformers' paged / continuous-batching cache
    (``generate_batch``) takes neither our per-branch trie masks nor per-step grammar masks.
    The price of padding: keys of the longest unit in every row, and slots of closed branches.
    A row whose branches have all finished leaves the batch (``batch_select_indices``, a copy of
    the cache about as costly as the concatenation every step already makes).

Greedy tokens equal the per-group path's and plain decoding's (same rule, same positions; only
the shapes of the matrix products differ). Sampling draws every step's tokens in one
``torch.multinomial`` call over the open branches of all rows, in row then branch order, from
the engine's seeded generator: reproducible for a seed and a batch plan, not the per-group
path's draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autorubric_local.engine.transformers.attention import FULL, SLIDING, AttentionPlan
from autorubric_local.engine.transformers.paths import PathUnsupported, call_model

if TYPE_CHECKING:
    import torch


@dataclass
class DecodeUnit:
    """One item's prefix and suffix trie, ready to decode below: one row of the batch.

    Attributes
    ----------
    layers : list of (keys, values)
        Per layer the row's cache, tensors of shape (1, heads, length, head_dim).
    seen : torch.Tensor
        Bool (n_branches, length): the keys each branch sees (whole prefix, its suffix path).
    key_positions : torch.Tensor
        Long (length,): position id of every key.
    last_positions : list of int
        Per branch, the position of its suffix's last token (the first generated token is at
        ``last + 1``).
    logits : torch.Tensor
        (n_branches, vocab): the logits predicting each branch's first token.
    grammars : list
        Per branch its :class:`~autorubric_local.engine.constrained.RegexGrammar`.
    budgets : list of int
        Per branch its ``max_new_tokens``.
    """

    layers: list[tuple[torch.Tensor, torch.Tensor]]
    seen: torch.Tensor
    key_positions: torch.Tensor
    last_positions: list[int]
    logits: torch.Tensor
    grammars: list[Any]
    budgets: list[int]

    @property
    def length(self) -> int:
        return int(self.key_positions.shape[0])


def plan_rows(sizes: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Consecutive runs of unit indices whose padded size ``rows x largest`` fits ``max_tokens``.

    Units stay in input order (an item's chunks stay together, so its prefix is computed once
    per batch); a unit larger than ``max_tokens`` gets a batch of its own.

    Raises
    ------
    ValueError
        If ``max_tokens`` < 1.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    batches: list[list[int]] = []
    widest = 0
    for index, size in enumerate(sizes):
        if batches and (len(batches[-1]) + 1) * max(widest, size) <= max_tokens:
            batches[-1].append(index)
            widest = max(widest, size)
        else:
            batches.append([index])
            widest = size
    return batches


def decode_units(model: Any, plan: AttentionPlan, units: Sequence[DecodeUnit],
                 sampler: Any) -> list[list[tuple[list[int], bool]]]:
    """Decode every branch of every unit, one forward pass per step for all of them.

    Returns per unit, per branch, the generated token ids and whether its grammar finished
    within its budget (what :meth:`~.backend.TransformersEngine._decode_branches` returns).

    Raises
    ------
    PathUnsupported
        The model's forward refused the batched inputs (path ``"batched"``), or returned logits
        of another shape than the open branches (no boolean ``logits_to_keep``).
    """
    import torch
    from transformers import DynamicCache

    from autorubric_local.engine.constrained import choose_tokens

    device, dtype = model.device, model.dtype
    rows = len(units)
    width = max(unit.length for unit in units)
    most = max(len(unit.budgets) for unit in units)
    capacity = width + most * max(max(unit.budgets) for unit in units)
    # seen[b, j, k]: branch j of row b sees key k; branch row `most` is the padding query's rule.
    seen = torch.zeros(rows, most + 1, capacity, dtype=torch.bool)
    seen[:, most, 0] = True
    key_positions = torch.zeros(rows, capacity, dtype=torch.long)
    layers = []
    for layer in range(len(units[0].layers)):
        keys, values = units[0].layers[layer]
        shape = (rows, keys.shape[1], width, keys.shape[3])
        k_all, v_all = keys.new_zeros(shape), values.new_zeros(shape)
        for b, unit in enumerate(units):
            k_all[b, :, : unit.length] = unit.layers[layer][0][0]
            v_all[b, :, : unit.length] = unit.layers[layer][1][0]
        layers.append((k_all, v_all))
    for b, unit in enumerate(units):
        seen[b, : len(unit.budgets), : unit.length] = unit.seen
        key_positions[b, : unit.length] = unit.key_positions
    cache = DynamicCache(ddp_cache_data=layers)
    del layers

    generated = [[[] for _ in unit.budgets] for unit in units]
    guides = [[grammar.new_guide() for grammar in unit.grammars] for unit in units]
    live = list(range(rows))  # unit index of each batch row
    active = [list(range(len(unit.budgets))) for unit in units]  # open branches per unit
    logits = torch.cat([unit.logits for unit in units])
    keys_so_far = width
    while True:
        order = [(u, j) for u in live for j in active[u]]
        chosen = choose_tokens([units[u].grammars[j] for u, j in order], [guides[u][j] for u, j in order],
                               logits, sampler)
        fed: dict[int, list[tuple[int, int]]] = {u: [] for u in live}
        for (u, j), token in zip(order, chosen, strict=True):
            generated[u][j].append(token)
            if not guides[u][j].is_finished() and len(generated[u][j]) < units[u].budgets[j]:
                fed[u].append((j, token))
        keep = [r for r, u in enumerate(live) if fed[u]]
        if not keep:
            break
        if len(keep) < len(live):  # rows with every branch closed leave the batch
            index = torch.tensor(keep)
            cache.batch_select_indices(index.to(device))
            seen, key_positions = seen[index], key_positions[index]
            live = [live[r] for r in keep]
        for u in live:
            active[u] = [j for j, _ in fed[u]]
        n_rows, step = len(live), max(len(fed[u]) for u in live)
        tokens = torch.zeros(n_rows, step, dtype=torch.long)
        positions = torch.zeros(n_rows, step, dtype=torch.long)
        branch = torch.full((n_rows, step), most, dtype=torch.long)
        for r, u in enumerate(live):
            for i, (j, token) in enumerate(fed[u]):
                tokens[r, i] = token
                positions[r, i] = units[u].last_positions[j] + len(generated[u][j])
                branch[r, i] = j
                seen[r, j, keys_so_far + i] = True
        keys_so_far += step
        key_positions[:, keys_so_far - step : keys_so_far] = positions
        allowed = seen[torch.arange(n_rows)[:, None], branch, :keys_so_far]  # (rows, step, keys)
        mask = _additive(plan, allowed, positions, key_positions[:, :keys_so_far], dtype, device)
        real = branch != most
        n_real = int(real.sum())
        logits = call_model(
            model, "batched",
            input_ids=tokens.to(device),
            position_ids=positions.to(device),
            attention_mask=mask,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=real.to(device),  # no LM head over padding slots
        ).logits  # (open branches, vocab), in row then branch order
        if logits.ndim != 2 or logits.shape[0] != n_real:
            raise PathUnsupported("batched", RuntimeError(
                f"boolean logits_to_keep gave logits of shape {tuple(logits.shape)}, expected ({n_real}, vocab)"))
    return [[(ids, guide.is_finished()) for ids, guide in zip(generated[u], guides[u], strict=True)]
            for u in range(rows)]


def _additive(plan: AttentionPlan, allowed: torch.Tensor, query_positions: torch.Tensor,
              key_positions: torch.Tensor, dtype: Any, device: Any) -> torch.Tensor | dict[str, torch.Tensor]:
    """Additive (rows, 1, queries, keys) mask(s) of a batched step: 0 where ``allowed``, ``dtype``'s
    min elsewhere; sliding-window layers also need ``query - key < window`` (as
    :func:`~.attention.additive_masks`, batched). A padding query keeps its one key (position 0
    against its own position 0)."""
    import torch

    def additive(rule: torch.Tensor) -> torch.Tensor:
        mask = torch.zeros(rule.shape, dtype=dtype)
        mask.masked_fill_(~rule, torch.finfo(dtype).min)
        return mask[:, None].to(device)

    if not plan.windowed:
        return additive(allowed)
    near = (query_positions[:, :, None] - key_positions[:, None, :]) < plan.window
    sliding = additive(allowed & near)
    if FULL not in plan.layer_types:
        return sliding
    return {FULL: additive(allowed), SLIDING: sliding}
