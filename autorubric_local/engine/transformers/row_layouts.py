"""Memo of packed-trie layouts: one rubric gives every item the same suffix trie.

Two items' score requests differ in their prefix (the submission) and nowhere else: the
criterion suffixes and labels after the prefix tokenize alike (:mod:`..token_cuts`), so their
trie (:func:`.packing.pack_trie`) has the same tokens, parents, depths and targets for every
item; only its position ids move with the prefix's length (``prefix_len + depth``).
:class:`RowLayouts` packs each distinct trie once and places it after each prefix, with what
follows from the trie alone made once too: the read-out of the logits its labels need, each
tree's accounting shares and, when a row is scored on top of a prefix cache, the additive
attention block of the trie's own nodes (:func:`.batched.trie_block`, made at first use: the
batched path never needs it).

On a CPU device a row's whole mask is a view too: the block sits at the right end of a wide
zero-filled buffer made once per layout, and a row after ``prefix_len`` prefix tokens reads the
buffer's last ``prefix_len + n`` columns, so no item fills a fresh (n, prefix_len + n) mask
of its own. Accelerators keep making the mask on the
device (an asynchronous fill that costs the host nothing, and no kernel sees a mask whose rows
start at an unaligned offset).

A placed row equals ``pack_trie(prefix_len, trees)`` field for field, and the memoised masks
equal :func:`.batched.row_mask`'s (``tests/test_row_layouts.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from autorubric_local.engine.transformers.attention import AttentionPlan
from autorubric_local.engine.transformers.batched import row_mask, trie_block
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
    tokens: Any
    depths: Any
    keep: list[int]
    keep_index: Any
    index: Any
    firsts: list[list[int]]
    prompt_shares: list[int]
    node_shares: list[float]


def make_layout(trees: Sequence[Tree], device: Any) -> Layout:
    """The :class:`Layout` of ``trees`` for a model on ``device``.

    Raises
    ------
    ValueError
        As :func:`.packing.pack_trie` (an empty suffix or label).
    """
    import torch

    row = pack_trie(0, trees)
    keep = row.keep_positions
    where = {node: i for i, node in enumerate(keep)}
    firsts = [sorted({label[0][1] for label in tree}) for tree in row.targets]
    pairs = [(where[node], token) for tree, end, first in zip(row.targets, row.ends, firsts, strict=True)
             for node, token in [*(step for label in tree for step in label), *((end, t) for t in first)]]
    return Layout(
        row=row,
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
    """Layouts of the last ``capacity`` distinct tries, oldest evicted first, and their masks.

    Parameters
    ----------
    dtype, device
        The model's compute dtype and device (masks and indices are made there).
    with_blocks : bool
        Whether rows' masks may use a memoised block (False for a sliding-window attention
        plan: its masks need the positions).
    capacity : int
        Distinct tries kept (one rubric needs one; its multi-choice rotations share it).
    max_block_bytes : int
        A trie whose block would take more bytes than this keeps no block (its mask is made
        per row, as without the memo), so the memo holds at most ``capacity`` such blocks.
    max_wide_bytes : int
        Byte budget of one layout's wide CPU buffer (module docstring); a row whose buffer
        would exceed it gets a fresh mask made with the block.
    """

    def __init__(self, dtype: Any, device: Any, with_blocks: bool, capacity: int = 4,
                 max_block_bytes: int = 16 * 2**20, max_wide_bytes: int = 64 * 2**20) -> None:
        import torch

        self.dtype, self.device, self.with_blocks = dtype, device, with_blocks
        self.capacity, self.max_block_bytes, self.max_wide_bytes = capacity, max_block_bytes, max_wide_bytes
        self._element_size = torch.empty((), dtype=dtype).element_size()
        self._on_cpu = torch.device(device).type == "cpu"
        self._layouts: dict[tuple[Any, ...], Layout] = {}
        # per layout (by id, dropped with it): its block (None: none kept) and its wide CPU buffer
        self._blocks: dict[int, torch.Tensor | None] = {}
        self._wide: dict[int, torch.Tensor] = {}

    def placed(self, prefix_len: int, trees: Sequence[Tree]) -> tuple[PackedRow, Layout]:
        """``pack_trie(prefix_len, trees)`` and its :class:`Layout`, the trie packed once.

        The placed row shares its lists with the layout's row: neither may be changed.
        """
        key = tuple((tuple(suffix), tuple(map(tuple, labels))) for suffix, labels in trees)
        layout = self._layouts.get(key)
        if layout is None:
            layout = make_layout(trees, self.device)
            if len(self._layouts) >= self.capacity:
                evicted = self._layouts.pop(next(iter(self._layouts)))
                self._blocks.pop(id(evicted), None)
                self._wide.pop(id(evicted), None)
            self._layouts[key] = layout
        row = layout.row
        return replace(row, prefix_len=prefix_len, positions=[prefix_len + d for d in row.depths]), layout

    def block(self, layout: Layout) -> torch.Tensor | None:
        """The layout's additive (n_nodes, n_nodes) block (:func:`.batched.trie_block`) in the
        memo's dtype and on its device, made at first use; None without blocks or over
        ``max_block_bytes``. ``layout`` must be one :meth:`placed` returned and not yet evicted."""
        if id(layout) not in self._blocks:
            n = len(layout.row.token_ids)
            fits = self.with_blocks and n * n * self._element_size <= self.max_block_bytes
            self._blocks[id(layout)] = trie_block(layout.row, self.dtype, self.device) if fits else None
        return self._blocks[id(layout)]

    def mask(self, plan: AttentionPlan, row: PackedRow, layout: Layout) -> torch.Tensor | dict[str, torch.Tensor]:
        """:func:`.batched.row_mask` of ``row`` (placed with ``layout``) on the memo's dtype and
        device, shape (1, 1, n_nodes, prefix_len + n_nodes).

        On CPU with a block: a read-only view of the layout's wide buffer (module docstring;
        its rows are strided, not contiguous), the buffer widened to the next power of two when
        a longer prefix arrives. Callers must not write into it.
        """
        block = self.block(layout)
        if block is None or not self._on_cpu:
            return row_mask(plan, row, self.dtype, self.device, block)
        n, prefix_len = len(row.token_ids), row.prefix_len
        wide = self._wide.get(id(layout))
        if wide is None or wide.shape[1] - n < prefix_len:
            width = 1 << prefix_len.bit_length()  # the power of two above prefix_len: few widenings
            if n * (width + n) * self._element_size > self.max_wide_bytes:
                return row_mask(plan, row, self.dtype, self.device, block)
            wide = self._wide[id(layout)] = self._fill_wide(block, width)
        return wide[None, None, :, wide.shape[1] - n - prefix_len :]

    def _fill_wide(self, block: torch.Tensor, width: int) -> torch.Tensor:
        import torch

        n = block.shape[0]
        wide = torch.zeros(n, width + n, dtype=self.dtype, device=self.device)
        wide[:, width:] = block
        return wide
