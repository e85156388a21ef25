"""Memo of packed-trie layouts: one rubric gives every item the same suffix trie.

Two items' score requests differ in their prefix (the submission) and nowhere else: the
criterion suffixes and labels after the prefix tokenize alike (:mod:`..token_cuts`), so their
trie (:func:`.packing.pack_trie`) has the same tokens, parents, depths and targets for every
item; only its position ids move with the prefix's length (``prefix_len + depth``).
:class:`RowLayouts` packs each distinct trie once and places it after each prefix, with what
follows from the trie alone made once too: the additive attention block of the trie's own
nodes (:func:`.batched.trie_block`), the read-out of the logits its labels need and each
tree's accounting shares.

A placed row equals ``pack_trie(prefix_len, trees)`` field for field, and the mask made with the
memoised block equals :func:`.batched.row_mask` without it (``tests/test_row_layouts.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from autorubric_local.engine.transformers.batched import trie_block
from autorubric_local.engine.transformers.packing import PackedRow, Tree, node_shares, pack_trie, prompt_shares

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Layout:
    """A packed trie with no prefix (``row.prefix_len == 0``) and what derives from it alone.

    Attributes
    ----------
    row : PackedRow
        ``pack_trie(0, trees)``.
    block : torch.Tensor or None
        Additive (n_nodes, n_nodes) mask block of the trie's nodes in the engine's dtype and on
        its device (:func:`.batched.trie_block`); None for a sliding-window plan (its masks need
        positions) or a block over the memo's byte budget.
    tokens : torch.Tensor
        The row's token ids, long (1, n_nodes) on the device (``input_ids``).
    depths : torch.Tensor
        The nodes' depths, long (1, n_nodes) on the device (a row's position ids are these plus
        its ``prefix_len``).
    keep : list of int
        Sorted nodes whose logits are read (``row.keep_positions``).
    keep_index : torch.Tensor
        ``keep`` as a long tensor on the device (``logits_to_keep``).
    index : torch.Tensor
        Long (m, 2) on the device: (row of the kept logits, token id) of every logprob read, in
        read order: per tree, each label's tokens, then the tree's distinct first label tokens
        (their order in ``firsts``) at the tree's last suffix node.
    firsts : list of list of int
        Per tree, its labels' distinct first tokens, sorted.
    prompt_shares, node_shares : list
        :func:`.packing.prompt_shares` and :func:`.packing.node_shares` of the row (accounting:
        they depend on the trie alone).
    """

    row: PackedRow
    block: Any
    tokens: Any
    depths: Any
    keep: list[int]
    keep_index: Any
    index: Any
    firsts: list[list[int]]
    prompt_shares: list[int]
    node_shares: list[float]


def make_layout(trees: Sequence[Tree], dtype: Any, device: Any, max_block_bytes: int | None) -> Layout:
    """The :class:`Layout` of ``trees`` for a model computing in ``dtype`` on ``device``, with a
    mask block when ``max_block_bytes`` is not None and the block fits in it.

    Raises
    ------
    ValueError
        As :func:`.packing.pack_trie` (an empty suffix or label).
    """
    import torch

    row = pack_trie(0, trees)
    n = len(row.token_ids)
    with_block = max_block_bytes is not None and n * n * torch.empty((), dtype=dtype).element_size() <= max_block_bytes
    keep = row.keep_positions
    where = {node: i for i, node in enumerate(keep)}
    firsts = [sorted({label[0][1] for label in tree}) for tree in row.targets]
    pairs = [(where[node], token) for tree, end, first in zip(row.targets, row.ends, firsts, strict=True)
             for node, token in [*(step for label in tree for step in label), *((end, t) for t in first)]]
    return Layout(
        row=row,
        block=trie_block(row, dtype, device) if with_block else None,
        tokens=torch.tensor([row.token_ids], dtype=torch.long, device=device),
        depths=torch.tensor([row.depths], dtype=torch.long, device=device),
        keep=keep,
        keep_index=torch.tensor(keep, dtype=torch.long, device=device),
        index=torch.tensor(pairs, dtype=torch.long, device=device).reshape(-1, 2),
        firsts=firsts,
        prompt_shares=prompt_shares(row),
        node_shares=node_shares(row),
    )


class RowLayouts:
    """Layouts of the last ``capacity`` distinct tries, oldest evicted first.

    Parameters
    ----------
    dtype, device
        The model's compute dtype and device (masks and indices are made there).
    with_blocks : bool
        Whether layouts carry a mask block (False for a sliding-window attention plan).
    capacity : int
        Distinct tries kept (one rubric needs one; its multi-choice rotations share it).
    max_block_bytes : int
        A trie whose block would take more bytes than this keeps no block (its mask is made
        per row, as without the memo), so the memo holds at most ``capacity`` such blocks.
    """

    def __init__(self, dtype: Any, device: Any, with_blocks: bool, capacity: int = 4,
                 max_block_bytes: int = 16 * 2**20) -> None:
        self.dtype, self.device, self.with_blocks = dtype, device, with_blocks
        self.capacity, self.max_block_bytes = capacity, max_block_bytes
        self._layouts: dict[tuple[Any, ...], Layout] = {}

    def placed(self, prefix_len: int, trees: Sequence[Tree]) -> tuple[PackedRow, Layout]:
        """``pack_trie(prefix_len, trees)`` and its :class:`Layout`, the trie packed once.

        The placed row shares its lists with the layout's row: neither may be changed.
        """
        key = tuple((tuple(suffix), tuple(map(tuple, labels))) for suffix, labels in trees)
        layout = self._layouts.get(key)
        if layout is None:
            layout = make_layout(trees, self.dtype, self.device, self.max_block_bytes if self.with_blocks else None)
            if len(self._layouts) >= self.capacity:
                del self._layouts[next(iter(self._layouts))]
            self._layouts[key] = layout
        row = layout.row
        return replace(row, prefix_len=prefix_len, positions=[prefix_len + d for d in row.depths]), layout
