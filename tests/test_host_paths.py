"""Host-side shortcuts of issue 33 checked against the slower paths they replace: chunking that
skips the trie, and judgment rows written without sqlite-utils' per-value work."""

from __future__ import annotations

import pytest
import sqlite_utils
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from autorubric_local.engine.transformers.packing import _greedy_chunks, chunk_trie
from autorubric_local.store.runs import _replace_rows

TOKENS = st.integers(0, 6)
TREE_LISTS = st.lists(
    st.tuples(
        st.lists(TOKENS, min_size=1, max_size=5),
        st.lists(st.lists(TOKENS, min_size=1, max_size=4), min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=6,
)


@given(TREE_LISTS, st.integers(1, 120))
def test_chunk_trie_shortcut_equals_the_greedy_pass(trees, budget) -> None:  # type: ignore[no-untyped-def]
    """Trees whose own sizes fit the budget skip the trie: the same chunks as building it."""
    assert chunk_trie(trees, budget) == _greedy_chunks(trees, budget)


def test_chunk_trie_shortcut_still_checks_every_tree() -> None:
    with pytest.raises(ValueError, match="tree 1: label 0 has no tokens"):
        chunk_trie([([1], [[2]]), ([1], [[]])], 100)


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**62), 2**62), st.floats(allow_nan=False), st.text(max_size=8),
    st.lists(st.integers(0, 3), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=2),
)
ROWS = st.lists(
    st.fixed_dictionaries({"item_id": st.sampled_from(["a", "b", "c"]), "k": st.integers(0, 2)},
                          optional={"x": VALUES, "y": VALUES, "run_id": st.sampled_from(["r", "other"])}),
    max_size=8,
)


def _table(db: sqlite_utils.Database) -> None:
    db.execute("create table t (run_id text, item_id text, k integer, x, y, primary key (run_id, item_id, k))")


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROWS, ROWS)
def test_replace_rows_writes_what_insert_all_replace_writes(first, second) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = sqlite_utils.Database(memory=True), sqlite_utils.Database(memory=True)
    _table(ours)
    _table(theirs)
    for batch in (first, second):
        _replace_rows(ours, "t", "r", batch)
        if batch:
            theirs["t"].insert_all([{"run_id": "r", **row} for row in batch], replace=True)
    query = "select run_id, item_id, k, x, y, typeof(x), typeof(y) from t order by run_id, item_id, k"
    assert ours.execute(query).fetchall() == theirs.execute(query).fetchall()
