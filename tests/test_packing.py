"""Pure tests of the packed token-trie layout (autorubric_local.engine.transformers.packing): no model, no torch."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autorubric_local.engine.transformers.packing import (
    ROOT,
    ancestor_table,
    chunk_trees,
    chunk_trie,
    may_attend,
    node_shares,
    pack_trie,
    prompt_shares,
    trie_size,
)

# Four trees after a 5-token prefix:
#   tree 0: suffix [10, 11, 12], labels [20] (1 token) and [21, 22, 23] (3 tokens)
#   tree 1: suffix [10, 11, 13] (shares [10, 11] with tree 0), labels [20] and [21, 24]
#   tree 2: suffix [10, 11] (a start of tree 0's suffix), labels [12, 21] (runs into tree 0's
#           suffix node 12) and [30]
#   tree 3: tree 0 again (a duplicate suffix: every node shared)
TREES = [
    ([10, 11, 12], [[20], [21, 22, 23]]),
    ([10, 11, 13], [[20], [21, 24]]),
    ([10, 11], [[12, 21], [30]]),
    ([10, 11, 12], [[20], [21, 22, 23]]),
]
# The trie, nodes in insertion order:
#   0:10 -> 1:11 -> 2:12 -> 3:21 -> 4:22      (tree 0, tree 3; node 2 also tree 2's label)
#               \-> 5:13 -> 6:21              (tree 1)


def test_pack_trie_layout_of_tokens_parents_depths_positions() -> None:
    row = pack_trie(5, TREES)
    assert row.prefix_len == 5
    assert row.token_ids == [10, 11, 12, 21, 22, 13, 21]
    assert row.parents == [ROOT, 0, 1, 2, 3, 1, 5]
    assert row.depths == [0, 1, 2, 3, 4, 2, 3]
    # Position id = prefix length + depth, so siblings share a position.
    assert row.positions == [5, 6, 7, 8, 9, 7, 8]
    assert row.max_depth == 4
    # Parents come before their children.
    assert all(parent < node for node, parent in enumerate(row.parents))


def test_pack_trie_targets_point_at_predictor_nodes_and_tokens() -> None:
    row = pack_trie(5, TREES)
    assert len(row.targets) == 4
    # A 1-token label is predicted at the suffix's last node.
    assert row.targets[0][0] == [(2, 20)]
    # A 3-token label: the suffix's last node predicts its first token, then its own nodes.
    assert row.targets[0][1] == [(2, 21), (3, 22), (4, 23)]
    assert row.targets[1] == [[(5, 20)], [(5, 21), (6, 24)]]
    # Tree 2's label [12, 21] runs through tree 0's suffix node 12.
    assert row.targets[2] == [[(1, 12), (2, 21)], [(1, 30)]]
    # A duplicate tree gets exactly the same targets.
    assert row.targets[3] == row.targets[0]
    assert row.keep_positions == [1, 2, 3, 4, 5, 6]


def test_pack_trie_ends_and_node_sets() -> None:
    row = pack_trie(5, TREES)
    assert row.ends == [2, 5, 1, 2]
    assert row.suffix_nodes == [[0, 1, 2], [0, 1, 5], [0, 1], [0, 1, 2]]
    assert row.tree_nodes == [[0, 1, 2, 3, 4], [0, 1, 5, 6], [0, 1, 2], [0, 1, 2, 3, 4]]


def test_pack_trie_targets_match_unpacked_sequence() -> None:
    """Every target (node, token) is the next token of the unpacked sequence at that place."""
    prefix_len = 3
    row = pack_trie(prefix_len, TREES)
    for t, (suffix, labels) in enumerate(TREES):
        for k, label in enumerate(labels):
            full = [None] * prefix_len + list(suffix) + list(label)
            for j, (node, token) in enumerate(row.targets[t][k]):
                # The predictor sits at absolute position prefix+len(suffix)-1+j ...
                assert row.positions[node] == prefix_len + len(suffix) - 1 + j
                # ... and the token it predicts is the next token of the full sequence.
                assert full[row.positions[node] + 1] == token
                # The predictor's own token is the full sequence's token at that position.
                assert full[row.positions[node]] == row.token_ids[node]


def test_single_token_labels_add_no_nodes() -> None:
    row = pack_trie(0, [([7, 8], [[1], [2], [3]])])
    assert row.token_ids == [7, 8]
    assert row.targets == [[[(1, 1)], [(1, 2)], [(1, 3)]]]
    assert trie_size([([7, 8], [[1], [2], [3]])]) == 2


def test_shared_label_starts_are_computed_once() -> None:
    # "CANNOT_ASSESS"-like labels sharing their first tokens: [5, 6, 7] and [5, 6, 8] share 5, 6.
    row = pack_trie(0, [([1], [[5, 6, 7], [5, 6, 8], [9]])])
    assert row.token_ids == [1, 5, 6]
    assert row.targets[0] == [[(0, 5), (1, 6), (2, 7)], [(0, 5), (1, 6), (2, 8)], [(0, 9)]]


def test_trie_size_counts_shared_nodes_once() -> None:
    assert trie_size(TREES) == 7
    assert trie_size(TREES[:1]) == 5  # trunk 3 + label continuation 2
    assert trie_size([TREES[0], TREES[0]]) == 5
    assert trie_size([([30], [[40, 41], [42]])]) == 2
    # Without any shared start the trie is the sum of the trees.
    assert trie_size([([1, 2], [[3]]), ([4], [[5, 6]])]) == 2 + 2
    assert len(pack_trie(5, TREES).token_ids) == trie_size(TREES)
    assert trie_size([]) == 0


def test_generation_trees_without_labels() -> None:
    row = pack_trie(2, [([1, 2, 3], []), ([1, 2], []), ([1, 4], [])])
    assert row.token_ids == [1, 2, 3, 4]
    assert row.ends == [2, 1, 3]
    assert row.suffix_nodes == [[0, 1, 2], [0, 1], [0, 3]]
    assert row.targets == [[], [], []]
    assert row.keep_positions == []


def test_pack_trie_rejects_empty_suffix() -> None:
    with pytest.raises(ValueError, match="tree 1: empty suffix"):
        pack_trie(4, [([1], [[2]]), ([], [[2]])])
    with pytest.raises(ValueError, match="tree 1: empty suffix"):
        chunk_trie([([1], [[2]]), ([], [[2]])], 10)


def test_pack_trie_rejects_empty_label() -> None:
    with pytest.raises(ValueError, match="tree 0: label 1 has no tokens"):
        pack_trie(4, [([1], [[2], []])])
    with pytest.raises(ValueError, match="tree 0: label 1 has no tokens"):
        trie_size([([1], [[2], []])])


def test_pack_trie_empty_input_is_an_empty_row() -> None:
    row = pack_trie(3, [])
    assert row.token_ids == [] and row.targets == [] and row.keep_positions == []
    assert row.max_depth == -1
    assert ancestor_table(row) == []


# ---------------------------------------------------------------------------- attention


def test_may_attend_ancestors_and_self_yes() -> None:
    row = pack_trie(5, TREES)
    for key in (0, 1, 2, 3, 4):
        assert may_attend(row, 4, key)  # deepest node of tree 0's label sees its whole path
    for key in (0, 1, 5, 6):
        assert may_attend(row, 6, key)
    assert may_attend(row, 0, 0)


def test_may_attend_other_branch_no() -> None:
    row = pack_trie(5, TREES)
    assert not may_attend(row, 5, 2)  # siblings (same depth, same parent)
    assert not may_attend(row, 2, 5)
    assert not may_attend(row, 6, 3)  # cousins at the same depth
    assert not may_attend(row, 6, 2)
    assert not may_attend(row, 4, 5)  # another branch, shallower
    assert not may_attend(row, 6, 4)


def test_may_attend_descendants_no() -> None:
    row = pack_trie(5, TREES)
    assert not may_attend(row, 0, 1)
    assert not may_attend(row, 1, 5)
    assert not may_attend(row, 2, 3)
    assert not may_attend(row, 3, 4)


def test_ancestor_table_of_example() -> None:
    row = pack_trie(5, TREES)
    assert ancestor_table(row) == [
        [0, -1, -1, -1, -1],
        [0, 1, -1, -1, -1],
        [0, 1, 2, -1, -1],
        [0, 1, 2, 3, -1],
        [0, 1, 2, 3, 4],
        [0, 1, 5, -1, -1],
        [0, 1, 5, 6, -1],
    ]


# Small token alphabets make shared starts, duplicates and suffixes that start other suffixes
# common.
TOKENS = st.integers(0, 3)
TREE_LISTS = st.lists(
    st.tuples(
        st.lists(TOKENS, min_size=1, max_size=5),
        st.lists(st.lists(TOKENS, min_size=1, max_size=4), min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=6,
)


@given(TREE_LISTS, st.integers(0, 20))
def test_may_attend_reproduces_each_unpacked_causal_sequence(trees, prefix_len) -> None:  # type: ignore[no-untyped-def]
    """For every target predictor, the visible nodes are exactly the unpacked causal context."""
    row = pack_trie(prefix_len, trees)
    for t, (suffix, labels) in enumerate(trees):
        for k, label in enumerate(labels):
            expected = list(suffix) + list(label[:-1])
            for j, (query, token) in enumerate(row.targets[t][k]):
                visible = sorted(
                    (key for key in range(len(row.token_ids)) if may_attend(row, query, key)),
                    key=lambda i: row.positions[i],
                )
                assert [row.token_ids[key] for key in visible] == expected[: len(suffix) + j]
                assert [row.positions[key] for key in visible] == list(
                    range(prefix_len, prefix_len + len(suffix) + j)
                )
                assert token == label[j]


@given(TREE_LISTS)
def test_trie_is_maximally_shared_and_consistent(trees) -> None:  # type: ignore[no-untyped-def]
    row = pack_trie(0, trees)
    # One node per distinct token path start: nothing computed twice, nothing missing.
    starts = set()
    for suffix, labels in trees:
        for path in [list(suffix)] + [[*suffix, *label[:-1]] for label in labels]:
            starts.update(tuple(path[: d + 1]) for d in range(len(path)))
    assert len(row.token_ids) == len(starts) == trie_size(trees)
    keys = list(zip(row.parents, row.token_ids))
    assert len(set(keys)) == len(keys)
    for node, parent in enumerate(row.parents):
        assert row.depths[node] == (0 if parent == ROOT else row.depths[parent] + 1)
    # The suffix path spells the suffix; identical suffixes end on the same node.
    for t, (suffix, _) in enumerate(trees):
        assert [row.token_ids[n] for n in row.suffix_nodes[t]] == list(suffix)
        assert row.ends[t] == row.suffix_nodes[t][-1]
        for u, (other, _) in enumerate(trees):
            assert (row.ends[t] == row.ends[u]) == (list(suffix) == list(other))


@given(TREE_LISTS)
def test_ancestor_table_rule_equals_may_attend(trees) -> None:  # type: ignore[no-untyped-def]
    """The vectorisable rule allowed[q, k] = A[q, depth[k]] == k is the reference rule."""
    row = pack_trie(0, trees)
    table = ancestor_table(row)
    n = len(row.token_ids)
    for q in range(n):
        for k in range(n):
            assert (table[q][row.depths[k]] == k) == may_attend(row, q, k)


# ---------------------------------------------------------------------------- accounting


def test_shares_of_example() -> None:
    row = pack_trie(5, TREES)
    # Node users: 0, 1 -> 4 trees; 2 -> trees 0, 2, 3; 3, 4 -> trees 0, 3; 5, 6 -> tree 1.
    expected = [1 / 4 + 1 / 4 + 1 / 3 + 1 / 2 + 1 / 2, 1 / 4 + 1 / 4 + 1 + 1, 1 / 4 + 1 / 4 + 1 / 3]
    assert node_shares(row) == pytest.approx([*expected, expected[0]])
    # Suffix nodes 0, 1 (4 suffixes), 2 (trees 0 and 3), 5 (tree 1): exact shares 1, 1.5, 0.5, 1;
    # the one leftover token goes to the earlier of the two ties.
    assert prompt_shares(row) == [1, 2, 0, 1]


@given(TREE_LISTS)
def test_shares_add_up_to_computed_nodes(trees) -> None:  # type: ignore[no-untyped-def]
    row = pack_trie(0, trees)
    assert sum(node_shares(row)) == pytest.approx(len(row.token_ids))
    shares = prompt_shares(row)
    assert sum(shares) == len({n for nodes in row.suffix_nodes for n in nodes})
    for share, (suffix, _) in zip(shares, trees):
        assert 0 <= share <= len(suffix)


def test_prompt_shares_without_sharing_are_the_suffix_lengths() -> None:
    row = pack_trie(0, [([1, 2], [[3]]), ([4, 5, 6], [[7]])])
    assert prompt_shares(row) == [2, 3]
    assert node_shares(row) == [2.0, 3.0]


# ---------------------------------------------------------------------------- chunking


def test_chunk_trie_counts_shared_nodes_once() -> None:
    # The four trees hold 5 + 4 + 3 + 5 = 17 nodes on their own but 7 as one trie.
    assert chunk_trie(TREES, 7) == [[0, 1, 2, 3]]
    # Budget 6: tree 1 would add 2 nodes to tree 0's 5; a new chunk holds tree 1 (4 nodes) and
    # tree 2 (adds node 12), but tree 3 would add 2 more.
    assert chunk_trie(TREES, 6) == [[0], [1, 2], [3]]
    # A duplicate costs nothing.
    assert chunk_trie([TREES[0], TREES[0], TREES[0]], 5) == [[0, 1, 2]]


def test_chunk_trie_oversize_tree_alone() -> None:
    assert chunk_trie(TREES, 1) == [[0], [1], [2], [3]]
    assert chunk_trie([([1, 2, 3], [[4]])], 2) == [[0]]
    assert chunk_trie([], 5) == []


@given(TREE_LISTS, st.integers(1, 25))
def test_chunk_trie_properties(trees, budget) -> None:  # type: ignore[no-untyped-def]
    chunks = chunk_trie(trees, budget)
    assert chunks == chunk_trie(trees, budget)  # deterministic
    assert [i for chunk in chunks for i in chunk] == list(range(len(trees)))  # input order
    for chunk in chunks:
        assert chunk
        assert trie_size([trees[i] for i in chunk]) <= budget or len(chunk) == 1
    # Greedy: the next chunk's first tree did not fit in the previous chunk's trie.
    for before, after in pairwise(chunks):
        assert trie_size([trees[i] for i in [*before, after[0]]]) > budget


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
    for before, after in pairwise(chunks):
        assert sum(sizes[i] for i in before) + sizes[after[0]] > budget
