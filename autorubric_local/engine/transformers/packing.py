"""Pure layout of label scoring as a packed token trie (no model, no torch).

A *tree* is one request's work after the shared prefix: its suffix tokens followed by one
continuation per label (the label tokens except the last, which is only predicted). Every tree
of a packed chunk is inserted, in input order, into one token trie: a node is a token reached by
a given token path from the prefix, so suffixes that start alike (the rotations of one
multi-choice criterion, duplicate suffixes, a suffix that is the start of another) and labels
that start alike share nodes, and each node is computed once. The row holds the trie's nodes in
insertion order (a parent always before its children).

Attention (:func:`may_attend`): a node sees the prefix cache and its ancestors in the trie,
itself included, which is exactly the causal context of every ``prefix + suffix + label``
sequence running through it. Its position id is ``prefix_len + depth``, so rotary/absolute
positions match the unpacked sequences. One forward pass over the row, on top of the prefix's
key/value cache, therefore gives the same log-probabilities as scoring every sequence alone:
label token ``j`` of a tree is predicted at the node of the token before it on that tree's path
(the suffix's last node for ``j = 0``).

Accounting (:func:`prompt_shares`, :func:`node_shares`): a node shared by several trees is
split evenly among them, so per-request token counts add up to the nodes really computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ROOT = -1
"""Parent of the depth-0 nodes: the prefix (always visible, not a row token)."""

Tree = tuple[Sequence[int], Sequence[Sequence[int]]]
"""``(suffix_ids, label_ids)``: one request's suffix and its labels' token ids."""


@dataclass(frozen=True)
class PackedRow:
    """One packed token trie over a prefix of ``prefix_len`` tokens.

    Attributes
    ----------
    token_ids, positions, parents, depths : list of int, length n_nodes
        Per node: token id, absolute position id (``prefix_len + depth``), parent node
        (:data:`ROOT` for depth 0) and depth below the prefix.
    targets : list (per tree) of list (per label) of list of (node, token_id)
        For label ``k`` of tree ``t``: the nodes whose next-token distribution predicts each
        label token, with the token they must predict.
    ends : list of int, length n_trees
        Node of each tree's last suffix token.
    suffix_nodes : list (per tree) of list of int
        The nodes of each tree's suffix path, root first.
    tree_nodes : list (per tree) of list of int
        Every node each tree's paths run through (suffix and label continuations), sorted.
    """

    prefix_len: int
    token_ids: list[int]
    positions: list[int]
    parents: list[int]
    depths: list[int]
    targets: list[list[list[tuple[int, int]]]]
    ends: list[int]
    suffix_nodes: list[list[int]]
    tree_nodes: list[list[int]]

    @property
    def keep_positions(self) -> list[int]:
        """Sorted row positions (nodes) whose logits are needed."""
        return sorted({pos for tree in self.targets for label in tree for pos, _ in label})

    @property
    def max_depth(self) -> int:
        """Deepest node's depth (-1 for an empty row)."""
        return max(self.depths, default=-1)


class _Trie:
    """Token trie under construction: nodes keyed by ``(parent, token)``."""

    def __init__(self) -> None:
        self.children: dict[tuple[int, int], int] = {}
        self.token_ids: list[int] = []
        self.parents: list[int] = []
        self.depths: list[int] = []

    def __len__(self) -> int:
        return len(self.token_ids)

    def new_nodes(self, tree: Tree) -> int:
        """Nodes that inserting ``tree`` would add (nodes it already shares are not counted)."""
        added: dict[tuple[int, int], int] = {}

        def walk(path: Sequence[int], parent: int) -> int:
            for token in path:
                key = (parent, token)
                node = self.children.get(key, added.get(key))
                if node is None:
                    node = added[key] = -2 - len(added)  # provisional id, distinct from ROOT
                parent = node
            return parent

        suffix_ids, label_ids = tree
        end = walk(suffix_ids, ROOT)
        for label in label_ids:
            walk(label[:-1], end)
        return len(added)

    def insert(self, path: Sequence[int], parent: int = ROOT, start_depth: int = 0) -> list[int]:
        """Insert one token path below ``parent`` (the root by default, else a node of depth
        ``start_depth - 1``); its nodes, first to last."""
        nodes: list[int] = []
        for depth, token in enumerate(path, start_depth):
            key = (parent, token)
            node = self.children.get(key)
            if node is None:
                node = self.children[key] = len(self.token_ids)
                self.token_ids.append(token)
                self.parents.append(parent)
                self.depths.append(depth)
            nodes.append(node)
            parent = node
        return nodes


def _insert_tree(trie: _Trie, tree: Tree) -> tuple[list[int], list[list[int]]]:
    """Insert one tree's token paths (its suffix, then suffix + each label but its last token);
    the suffix's nodes and each label continuation's nodes. The suffix is walked once: label
    continuations start at its last node."""
    suffix_ids, label_ids = tree
    suffix_path = trie.insert(suffix_ids)
    end, depth = suffix_path[-1], len(suffix_ids)
    return suffix_path, [trie.insert(label[:-1], end, depth) for label in label_ids]


def _check(index: int, tree: Tree) -> None:
    suffix_ids, label_ids = tree
    if not suffix_ids:
        raise ValueError(f"tree {index}: empty suffix")
    for k, label in enumerate(label_ids):
        if not label:
            raise ValueError(f"tree {index}: label {k} has no tokens")


def pack_trie(prefix_len: int, trees: Sequence[Tree]) -> PackedRow:
    """Pack ``(suffix_ids, label_ids)`` trees into one token trie after ``prefix_len`` tokens.

    Trees are inserted in input order, so the layout is deterministic. A tree with no labels
    (generation) contributes only its suffix path.

    Raises
    ------
    ValueError
        If a suffix or a label is empty (a label must have at least one token to predict).
    """
    trie = _Trie()
    targets: list[list[list[tuple[int, int]]]] = []
    ends: list[int] = []
    suffix_nodes: list[list[int]] = []
    tree_nodes: list[list[int]] = []
    for index, tree in enumerate(trees):
        _check(index, tree)
        suffix_path, continuations = _insert_tree(trie, tree)
        used = set(suffix_path)
        tree_targets: list[list[tuple[int, int]]] = []
        for label, continuation in zip(tree[1], continuations, strict=True):
            used.update(continuation)
            # Label token j is predicted at the path's node of depth len(suffix) - 1 + j.
            predictors = [suffix_path[-1], *continuation]
            tree_targets.append(list(zip(predictors, label, strict=True)))
        targets.append(tree_targets)
        ends.append(suffix_path[-1])
        suffix_nodes.append(suffix_path)
        tree_nodes.append(sorted(used))
    positions = [prefix_len + depth for depth in trie.depths]
    return PackedRow(
        prefix_len,
        trie.token_ids,
        positions,
        trie.parents,
        trie.depths,
        targets,
        ends,
        suffix_nodes,
        tree_nodes,
    )


def trie_size(trees: Sequence[Tree]) -> int:
    """Number of nodes (row tokens) the trie of ``trees`` has: shared starts counted once."""
    trie = _Trie()
    for index, tree in enumerate(trees):
        _check(index, tree)
        _insert_tree(trie, tree)
    return len(trie)


def chunk_trie(trees: Sequence[Tree], max_tokens: int) -> list[list[int]]:
    """Split tree indices, in order, into chunks whose trie has at most ``max_tokens`` nodes.

    Greedy: each tree joins the current chunk if the nodes it adds there (those it does not
    share with earlier trees of the chunk) keep the trie within the budget, else it starts a
    new chunk. A tree whose own trie is over the budget gets a chunk of its own.

    When the trees' own sizes add up to at most ``max_tokens`` (the usual case: one item's
    criteria), the greedy pass would keep them all in one chunk (a tree never adds more nodes than
    it has), so that chunk is returned without building the trie.
    """
    for index, tree in enumerate(trees):
        _check(index, tree)
    if trees and sum(len(suffix) + sum(len(label) - 1 for label in labels)
                     for suffix, labels in trees) <= max_tokens:
        return [list(range(len(trees)))]
    return _greedy_chunks(trees, max_tokens)


def _greedy_chunks(trees: Sequence[Tree], max_tokens: int) -> list[list[int]]:
    """:func:`chunk_trie`'s greedy pass, trie built (trees already checked)."""
    chunks: list[list[int]] = []
    current: list[int] = []
    trie = _Trie()
    for index, tree in enumerate(trees):
        if current and len(trie) + trie.new_nodes(tree) > max_tokens:
            chunks.append(current)
            current, trie = [], _Trie()
        current.append(index)
        _insert_tree(trie, tree)
    if current:
        chunks.append(current)
    return chunks


def may_attend(row: PackedRow, query: int, key: int) -> bool:
    """Whether row node ``query`` may attend to row node ``key`` (the prefix is always visible).

    True when ``key`` is ``query`` or one of its ancestors. The reference rule; the backend
    evaluates the same predicate vectorised through an ancestor-at-depth table.
    """
    node = query
    while node != ROOT and row.depths[node] >= row.depths[key]:
        if node == key:
            return True
        node = row.parents[node]
    return False


def ancestor_table(row: PackedRow) -> list[list[int]]:
    """``A[n][d]``: the ancestor of node ``n`` at depth ``d`` (``n`` itself at its depth), or -1
    below ``n``'s depth; shape (n_nodes, max_depth + 1). Reference for the vectorised mask."""
    table = [[-1] * (row.max_depth + 1) for _ in row.token_ids]
    for node, (parent, depth) in enumerate(zip(row.parents, row.depths, strict=True)):
        if parent != ROOT:
            table[node][:depth] = table[parent][:depth]
        table[node][depth] = node
    return table


def node_shares(row: PackedRow) -> list[float]:
    """Each tree's share of the row's nodes: every node split evenly among the trees using it.

    Sums to ``len(row.token_ids)``; the backend apportions a chunk's wall time by it.
    """
    users = [0] * len(row.token_ids)
    for nodes in row.tree_nodes:
        for node in nodes:
            users[node] += 1
    return [sum(1 / users[node] for node in nodes) for nodes in row.tree_nodes]


def prompt_shares(row: PackedRow) -> list[int]:
    """Suffix tokens each tree had computed: its share of the suffix nodes, in whole tokens.

    Each node lying on some tree's suffix path is split evenly among the trees whose suffix
    runs through it, then rounded by largest remainders (ties to the earlier tree), so the
    shares add up to the number of distinct suffix nodes and none exceeds its suffix length.
    Nodes used only by label continuations are not prompt tokens and are left out.
    """
    users = [0] * len(row.token_ids)
    for nodes in row.suffix_nodes:
        for node in nodes:
            users[node] += 1
    exact = [sum(1 / users[node] for node in nodes) for nodes in row.suffix_nodes]
    total = sum(1 for count in users if count)
    # Guard float error: a share within 1e-9 of an integer is that integer.
    whole = [int(share + 1e-9) for share in exact]
    remainders = sorted(range(len(exact)), key=lambda t: (-(exact[t] - whole[t]), t))
    for t in remainders[: total - sum(whole)]:
        whole[t] += 1
    return whole


def chunk_trees(sizes: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Split item indices, in order, into chunks whose total size stays within ``max_tokens``.

    Used where nothing is shared (generation budgets). An item larger than ``max_tokens``
    gets a chunk of its own.
    """
    chunks: list[list[int]] = []
    current: list[int] = []
    used = 0
    for index, size in enumerate(sizes):
        if current and used + size > max_tokens:
            chunks.append(current)
            current, used = [], 0
        current.append(index)
        used += size
    if current:
        chunks.append(current)
    return chunks
