"""Pure layout of label scoring as packed token trees (no model, no torch).

Every suffix of a shared prefix is laid out as a small tree: its trunk (the suffix tokens)
followed by one branch per label (the label tokens except the last, which is only predicted).
Many trees are packed into one row; an attention rule (:func:`may_attend`) lets each token see
the prefix, its own trunk, and earlier tokens of its own branch, so one forward pass over the
packed row, on top of the prefix's key/value cache, gives the same log-probabilities as scoring
every ``prefix + suffix + label`` sequence on its own.

Position ids restart per tree at the prefix length, so rotary/absolute positions match the
unpacked sequences exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TRUNK = 0


@dataclass(frozen=True)
class PackedRow:
    """One packed row of trees over a prefix of ``prefix_len`` tokens.

    Attributes
    ----------
    token_ids, positions, groups, branches, orders : list of int, length n_tokens
        Token id, absolute position id, tree index within the row, branch (0 = trunk,
        k = label k-1), and order within the tree (attention is causal in it).
    targets : list (per tree) of list (per label) of list of (row_index, token_id)
        For label ``k`` of tree ``t``: the row positions whose next-token distribution
        predicts each label token, with the token they must predict.
    """

    prefix_len: int
    token_ids: list[int]
    positions: list[int]
    groups: list[int]
    branches: list[int]
    orders: list[int]
    targets: list[list[list[tuple[int, int]]]]

    @property
    def keep_positions(self) -> list[int]:
        """Sorted row positions whose logits are needed."""
        return sorted({pos for tree in self.targets for label in tree for pos, _ in label})


def tree_size(suffix_ids: Sequence[int], label_ids: Sequence[Sequence[int]]) -> int:
    """Number of row tokens one tree occupies: the trunk plus every label but its last token."""
    return len(suffix_ids) + sum(len(label) - 1 for label in label_ids)


def pack_trees(
    prefix_len: int,
    trees: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]],
) -> PackedRow:
    """Pack ``(suffix_ids, label_ids)`` trees into one row after a prefix of ``prefix_len`` tokens.

    Raises
    ------
    ValueError
        If a suffix or a label is empty (a label must have at least one token to predict).
    """
    token_ids: list[int] = []
    positions: list[int] = []
    groups: list[int] = []
    branches: list[int] = []
    orders: list[int] = []
    targets: list[list[list[tuple[int, int]]]] = []
    for group, (suffix_ids, label_ids) in enumerate(trees):
        if not suffix_ids:
            raise ValueError(f"tree {group}: empty suffix")
        for offset, token in enumerate(suffix_ids):
            token_ids.append(token)
            positions.append(prefix_len + offset)
            groups.append(group)
            branches.append(TRUNK)
            orders.append(offset)
        last_trunk = len(token_ids) - 1
        tree_targets: list[list[tuple[int, int]]] = []
        for branch, label in enumerate(label_ids, start=1):
            if not label:
                raise ValueError(f"tree {group}: label {branch - 1} has no tokens")
            predictors = [last_trunk]
            for offset, token in enumerate(label[:-1]):
                token_ids.append(token)
                positions.append(prefix_len + len(suffix_ids) + offset)
                groups.append(group)
                branches.append(branch)
                orders.append(len(suffix_ids) + offset)
                predictors.append(len(token_ids) - 1)
            tree_targets.append(list(zip(predictors, label)))
        targets.append(tree_targets)
    return PackedRow(prefix_len, token_ids, positions, groups, branches, orders, targets)


def may_attend(row: PackedRow, query: int, key: int) -> bool:
    """Whether row token ``query`` may attend to row token ``key`` (the prefix is always visible).

    The reference rule; the backend evaluates the same predicate vectorised.
    """
    return (
        row.groups[query] == row.groups[key]
        and (row.branches[key] == TRUNK or row.branches[key] == row.branches[query])
        and row.orders[key] <= row.orders[query]
    )


def chunk_trees(sizes: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Split tree indices, in order, into chunks whose total size stays within ``max_tokens``.

    A tree larger than ``max_tokens`` gets a chunk of its own.
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
