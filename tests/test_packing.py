"""Pure tests of the packed-tree layout (autorubric_local.engine.packing): no model, no torch."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autorubric_local.engine.packing import TRUNK, chunk_trees, may_attend, pack_trees, tree_size

# Two trees after a 5-token prefix:
#   tree 0: suffix [10, 11, 12], labels [20] (1 token) and [21, 22, 23] (3 tokens)
#   tree 1: suffix [30], labels [40, 41] and [42]
TREES = [
    ([10, 11, 12], [[20], [21, 22, 23]]),
    ([30], [[40, 41], [42]]),
]


def test_pack_trees_layout_of_tokens_positions_groups_branches() -> None:
    row = pack_trees(5, TREES)
    assert row.prefix_len == 5
    # trunk 0, branch of label 1 (its tokens but the last), trunk 1, branch of label 0 of tree 1.
    assert row.token_ids == [10, 11, 12, 21, 22, 30, 40]
    assert row.groups == [0, 0, 0, 0, 0, 1, 1]
    assert row.branches == [TRUNK, TRUNK, TRUNK, 2, 2, TRUNK, 1]
    # Positions restart at prefix_len for every tree and continue along a branch.
    assert row.positions == [5, 6, 7, 8, 9, 5, 6]
    assert row.orders == [0, 1, 2, 3, 4, 0, 1]


def test_pack_trees_targets_point_at_predictor_positions_and_tokens() -> None:
    row = pack_trees(5, TREES)
    assert len(row.targets) == 2
    # Tree 0: a 1-token label is predicted by the last trunk token.
    assert row.targets[0][0] == [(2, 20)]
    # A 3-token label: last trunk token predicts its first token, then its own branch tokens.
    assert row.targets[0][1] == [(2, 21), (3, 22), (4, 23)]
    # Tree 1 starts at row index 5.
    assert row.targets[1][0] == [(5, 40), (6, 41)]
    assert row.targets[1][1] == [(5, 42)]
    assert row.keep_positions == [2, 3, 4, 5, 6]


def test_pack_trees_targets_match_unpacked_sequence() -> None:
    """Every target (row index, token) is the next token of the unpacked sequence at that place."""
    prefix_len = 3
    row = pack_trees(prefix_len, TREES)
    for t, (suffix, labels) in enumerate(TREES):
        for k, label in enumerate(labels):
            full = [None] * prefix_len + list(suffix) + list(label)
            for j, (row_index, token) in enumerate(row.targets[t][k]):
                # The predictor sits at absolute position prefix+len(suffix)-1+j ...
                assert row.positions[row_index] == prefix_len + len(suffix) - 1 + j
                # ... and the token it predicts is the next token of the full sequence.
                assert full[row.positions[row_index] + 1] == token
                # The predictor's own token is the full sequence's token at that position.
                assert full[row.positions[row_index]] == row.token_ids[row_index]


def test_pack_trees_single_token_labels_add_no_row_tokens() -> None:
    row = pack_trees(0, [([7, 8], [[1], [2], [3]])])
    assert row.token_ids == [7, 8]
    assert row.targets == [[[(1, 1)], [(1, 2)], [(1, 3)]]]
    assert tree_size([7, 8], [[1], [2], [3]]) == 2


def test_tree_size_counts_trunk_plus_label_tokens_but_last() -> None:
    assert tree_size([10, 11, 12], [[20], [21, 22, 23]]) == 5
    assert tree_size([30], [[40, 41], [42]]) == 2
    row = pack_trees(5, TREES)
    assert len(row.token_ids) == sum(tree_size(s, labels) for s, labels in TREES)


def test_pack_trees_rejects_empty_suffix() -> None:
    with pytest.raises(ValueError, match="tree 1: empty suffix"):
        pack_trees(4, [([1], [[2]]), ([], [[2]])])


def test_pack_trees_rejects_empty_label() -> None:
    with pytest.raises(ValueError, match="tree 0: label 1 has no tokens"):
        pack_trees(4, [([1], [[2], []])])


def test_pack_trees_empty_input_is_an_empty_row() -> None:
    row = pack_trees(3, [])
    assert row.token_ids == [] and row.targets == [] and row.keep_positions == []


def test_may_attend_own_trunk_yes() -> None:
    row = pack_trees(5, TREES)
    assert may_attend(row, 2, 0)  # trunk token sees an earlier trunk token
    assert may_attend(row, 2, 2)  # and itself
    assert may_attend(row, 4, 0)  # a branch token sees its trunk
    assert may_attend(row, 4, 2)
    assert may_attend(row, 6, 5)  # second tree: branch sees its own trunk


def test_may_attend_own_branch_earlier_tokens_yes() -> None:
    row = pack_trees(5, TREES)
    assert may_attend(row, 4, 3)
    assert may_attend(row, 3, 3)


def test_may_attend_other_tree_no() -> None:
    row = pack_trees(5, TREES)
    assert not may_attend(row, 5, 0)  # tree 1 trunk vs tree 0 trunk (earlier in the row)
    assert not may_attend(row, 5, 4)
    assert not may_attend(row, 6, 2)
    assert not may_attend(row, 0, 5)


def test_may_attend_other_branch_of_same_tree_no() -> None:
    row = pack_trees(0, [([1, 2], [[3, 4], [5, 6]])])
    # row: trunk 1,2 | branch1: 3 | branch2: 5  (branch2's token has the same order as branch1's)
    assert row.branches == [TRUNK, TRUNK, 1, 2]
    assert not may_attend(row, 3, 2)
    assert not may_attend(row, 2, 3)
    assert may_attend(row, 3, 1)


def test_may_attend_future_no() -> None:
    row = pack_trees(5, TREES)
    assert not may_attend(row, 0, 1)  # trunk cannot see a later trunk token
    assert not may_attend(row, 1, 3)  # trunk cannot see a branch token
    assert not may_attend(row, 3, 4)  # branch token cannot see a later one of its branch


@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 50), min_size=1, max_size=5),
            st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=4), min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 20),
)
def test_may_attend_reproduces_each_unpacked_causal_sequence(trees, prefix_len) -> None:  # type: ignore[no-untyped-def]
    """For every target predictor, the visible row tokens are exactly the unpacked causal context."""
    row = pack_trees(prefix_len, trees)
    for t, (suffix, labels) in enumerate(trees):
        for k, label in enumerate(labels):
            expected = list(suffix) + list(label[:-1])
            for j, (query, token) in enumerate(row.targets[t][k]):
                visible = [key for key in range(len(row.token_ids)) if may_attend(row, query, key)]
                seen = [row.token_ids[key] for key in sorted(visible, key=lambda i: row.positions[i])]
                assert seen == expected[: len(suffix) + j]
                assert [row.positions[key] for key in sorted(visible, key=lambda i: row.positions[i])] == list(
                    range(prefix_len, prefix_len + len(suffix) + j)
                )
                assert token == label[j]


def test_chunk_trees_bounds_respected_and_order_kept() -> None:
    sizes = [3, 4, 2, 5, 1, 1]
    chunks = chunk_trees(sizes, 7)
    assert chunks == [[0, 1], [2, 3], [4, 5]]
    assert [i for chunk in chunks for i in chunk] == list(range(len(sizes)))
    assert all(sum(sizes[i] for i in chunk) <= 7 for chunk in chunks)


def test_chunk_trees_exact_fit_stays_in_one_chunk() -> None:
    assert chunk_trees([2, 3, 2], 7) == [[0, 1, 2]]


def test_chunk_trees_oversize_tree_alone() -> None:
    assert chunk_trees([2, 10, 3], 5) == [[0], [1], [2]]
    assert chunk_trees([10], 5) == [[0]]
    assert chunk_trees([10, 10], 5) == [[0], [1]]


def test_chunk_trees_empty() -> None:
    assert chunk_trees([], 5) == []


@given(st.lists(st.integers(1, 20), max_size=30), st.integers(1, 25))
def test_chunk_trees_properties(sizes, budget) -> None:  # type: ignore[no-untyped-def]
    chunks = chunk_trees(sizes, budget)
    assert [i for chunk in chunks for i in chunk] == list(range(len(sizes)))
    for chunk in chunks:
        assert chunk
        assert sum(sizes[i] for i in chunk) <= budget or len(chunk) == 1
    # Greedy: the next chunk's first tree did not fit in the previous chunk.
    for before, after in zip(chunks, chunks[1:]):
        assert sum(sizes[i] for i in before) + sizes[after[0]] > budget
