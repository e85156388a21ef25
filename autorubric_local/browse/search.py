"""Full-text search over submissions and explanations (SQLite FTS5, through sqlite-utils).

The indexes are *rebuilt when browsing starts*, not kept by triggers: grading then pays nothing
per judgment (a trigger would add an index write to every committed row of every run), and
the indexes are current as of the moment ``autorubric-local browse`` started. Rows committed
later (a run still grading) are browsable at once but found by search only after a restart.
"""

from __future__ import annotations

import sqlite_utils

from autorubric_local.store.transaction import write_transaction

SEARCHED_COLUMNS: dict[str, tuple[str, ...]] = {
    "items": ("submission",),
    "judgments": ("explanation",),
}
"""Table -> the columns its full-text index covers (``<table>_fts``, Porter stemming)."""

TOKENIZE = "porter"


def index_text(db: sqlite_utils.Database) -> dict[str, int]:
    """Create the full-text indexes of :data:`SEARCHED_COLUMNS` where missing, rebuild them
    where present, one write transaction per table (a writer grading into the same file waits
    for one table at a time); return table -> rows indexed.

    About 20 s for 10^5 items and 10^6 judgments with 30-word explanations on 2 CPU cores,
    within the 30 s a grading writer waits for the lock (``store.transaction``).

    Raises
    ------
    sqlite3.OperationalError
        ``database is locked`` when another writer holds the lock past the busy timeout.
    """
    indexed = {}
    for name, columns in SEARCHED_COLUMNS.items():
        with write_transaction(db):
            table = db.table(name)
            existed = db[f"{name}_fts"].exists()
            table.enable_fts(list(columns), tokenize=TOKENIZE, replace=True)
            if existed:
                table.rebuild_fts()
            indexed[name] = table.count
    return indexed
