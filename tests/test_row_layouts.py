"""The memo of packed-trie layouts (autorubric_local.engine.transformers.row_layouts): a placed row
is pack_trie's row, a memoised mask block gives row_mask's mask, and the read-out indexes what
the row's targets name."""

from __future__ import annotations

import pytest
import torch

from autorubric_local.engine.transformers.attention import AttentionPlan
from autorubric_local.engine.transformers.batched import row_mask, trie_allowed, trie_block
from autorubric_local.engine.transformers.packing import node_shares, pack_trie, prompt_shares
from autorubric_local.engine.transformers.row_layouts import RowLayouts, make_layout


# Tree 2's suffix is a start of tree 0's, tree 3 repeats tree 0 (tests/test_packing.py's trees).
TREES = [
    ([10, 11, 12], [[20], [21, 22, 23]]),
    ([10, 11, 13], [[20], [21, 24]]),
    ([10, 11], [[12, 21], [30]]),
    ([10, 11, 12], [[20], [21, 22, 23]]),
]

FULL = AttentionPlan(True, None, ("full_attention",), "full")
SLIDING = AttentionPlan(True, 3, ("sliding_attention", "full_attention"), "sliding")


@pytest.mark.parametrize("prefix_len", [0, 1, 7, 300])
def test_a_placed_row_is_pack_trie_after_that_prefix(prefix_len: int) -> None:
    layouts = RowLayouts(torch.float32, "cpu", with_blocks=True)
    layouts.placed(11, TREES)  # packed once, placed again below
    row, layout = layouts.placed(prefix_len, TREES)
    assert row == pack_trie(prefix_len, TREES)
    assert layout.row == pack_trie(0, TREES)
    assert (layout.depths + prefix_len).tolist() == [row.positions]  # the position ids the engine feeds
    assert len(layouts._layouts) == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_memoised_masks_are_row_masks_masks(dtype: torch.dtype) -> None:
    layouts = RowLayouts(dtype, "cpu", with_blocks=True)
    # the wide buffer: made for 0 (width 1), widened for 5 (8), 64 (128), 3000 (4096); 5 and 0 then read it
    for prefix_len in (0, 5, 64, 3000, 5, 0):
        row, layout = layouts.placed(prefix_len, TREES)
        block = layouts.block(layout)
        assert block is not None and torch.equal(block, trie_block(row, dtype, "cpu"))
        expected = row_mask(FULL, row, dtype, "cpu")
        got = layouts.mask(FULL, row, layout)
        assert got.dtype == dtype and got.shape == (1, 1, 7, prefix_len + 7)
        assert torch.equal(got, expected)
        assert torch.equal(row_mask(FULL, row, dtype, "cpu", block), expected)
        # by hand: the prefix columns are open, the row's columns open exactly where a node sees a node
        assert torch.equal(got[0, 0, :, :prefix_len], torch.zeros(7, prefix_len, dtype=dtype))
        assert torch.equal(got[0, 0, :, prefix_len:] == 0, trie_allowed(row))
    assert layouts._wide[id(layout)].shape == (7, 4096 + 7)  # one buffer, widened once to 3000's power of two


def test_a_cpu_mask_is_a_view_of_one_buffer_and_scores_like_a_fresh_mask() -> None:
    layouts = RowLayouts(torch.float32, "cpu", with_blocks=True)
    row, layout = layouts.placed(9, TREES)
    first = layouts.mask(FULL, row, layout)
    again = layouts.mask(FULL, *layouts.placed(4, TREES))
    assert first.data_ptr() != again.data_ptr() and first.untyped_storage().data_ptr() == again.untyped_storage().data_ptr()
    assert not first.is_contiguous()
    # attention with the strided view gives what a contiguous copy gives
    torch.manual_seed(0)
    q = torch.randn(1, 2, 7, 8)
    k, v = torch.randn(1, 2, 9 + 7, 8), torch.randn(1, 2, 9 + 7, 8)
    fn = torch.nn.functional.scaled_dot_product_attention
    assert torch.allclose(fn(q, k, v, attn_mask=first), fn(q, k, v, attn_mask=first.contiguous()), atol=1e-6)


def test_an_accelerator_gets_fresh_masks_made_on_its_device() -> None:
    # "meta" stands in for an accelerator: anything not a CPU makes the mask on the device
    layouts = RowLayouts(torch.float32, "meta", with_blocks=True)
    row, layout = layouts.placed(6, TREES)
    got = layouts.mask(FULL, row, layout)
    assert got.device.type == "meta" and got.shape == (1, 1, 7, 13)
    assert layouts._wide == {} and layouts._blocks[id(layout)] is not None


def test_a_sliding_window_plan_gets_no_block_and_its_own_masks() -> None:
    layouts = RowLayouts(torch.float32, "cpu", with_blocks=not SLIDING.windowed)
    row, layout = layouts.placed(4, TREES)
    assert layouts.block(layout) is None
    masks = layouts.mask(SLIDING, row, layout)
    expected = row_mask(SLIDING, row, torch.float32, "cpu")
    assert isinstance(masks, dict) and set(masks) == {"sliding_attention", "full_attention"}
    assert all(torch.equal(masks[kind], expected[kind]) for kind in expected)


def test_blocks_and_wide_buffers_over_their_byte_budgets_are_not_kept() -> None:
    # 7 nodes: a float32 block takes 196 bytes
    assert RowLayouts(torch.float32, "cpu", True, max_block_bytes=196).block(make_layout(TREES, "cpu")) is not None
    layouts = RowLayouts(torch.float32, "cpu", True, max_block_bytes=195)
    row, layout = layouts.placed(3, TREES)
    assert layouts.block(layout) is None
    assert torch.equal(layouts.mask(FULL, row, layout), row_mask(FULL, row, torch.float32, "cpu"))
    # prefix 3 -> width 4: 7 x (4 + 7) float32 = 308 bytes
    for budget, kept in ((308, True), (307, False)):
        layouts = RowLayouts(torch.float32, "cpu", True, max_wide_bytes=budget)
        row, layout = layouts.placed(3, TREES)
        got = layouts.mask(FULL, row, layout)
        assert torch.equal(got, row_mask(FULL, row, torch.float32, "cpu"))
        assert (id(layout) in layouts._wide) is kept and got.is_contiguous() is not kept


def test_the_read_out_names_each_targets_node_and_token_in_order() -> None:
    layout = make_layout(TREES, "cpu")
    row = layout.row
    assert layout.keep == row.keep_positions and layout.keep_index.tolist() == layout.keep
    assert layout.tokens.tolist() == [row.token_ids] and layout.depths.tolist() == [row.depths]
    assert layout.prompt_shares == prompt_shares(row) and layout.node_shares == node_shares(row)
    # tree 0: labels [20] and [21, 22, 23] predicted at nodes 2; 2, 3, 4; firsts {20, 21} at node 2
    expected_tree0 = [(2, 20), (2, 21), (3, 22), (4, 23), (2, 20), (2, 21)]
    read = [(layout.keep[k], token) for k, token in layout.index.tolist()]
    assert read[: len(expected_tree0)] == expected_tree0
    assert layout.firsts == [[20, 21], [20, 21], [12, 30], [20, 21]]
    per_tree = [sum(len(label) for label in labels) + len(first)
                for (_, labels), first in zip(TREES, layout.firsts, strict=True)]
    assert len(read) == sum(per_tree)


def test_the_memo_keeps_its_last_distinct_tries() -> None:
    layouts = RowLayouts(torch.float32, "cpu", with_blocks=True, capacity=2)
    first, second, third = TREES[:1], TREES[1:2], TREES[2:3]
    for trees in (first, second, third, first):
        row, layout = layouts.placed(3, trees)
        assert row == pack_trie(3, trees)
        layouts.mask(FULL, row, layout)
    assert list(layouts._layouts) == [tuple((tuple(s), tuple(map(tuple, ls))) for s, ls in t) for t in (third, first)]
    kept = {id(layout) for layout in layouts._layouts.values()}
    assert set(layouts._blocks) == kept and set(layouts._wide) == kept  # an evicted layout's masks go with it
