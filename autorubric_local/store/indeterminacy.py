"""Rating-indeterminacy analyses: one ``indeterminacy_analyses`` row per analysis and its
figures in ``indeterminacy_values`` (tables in :mod:`.schema`, migration 10). This module
stores and reads rows; it does not interpret the report JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlite_utils

from autorubric_local.store.provenance import utc_now
from autorubric_local.store.transaction import write_transaction


class IndeterminacyTables:
    """Indeterminacy rows (part of :class:`autorubric_local.store.Store`)."""

    db: sqlite_utils.Database

    def save_indeterminacy(self, *, run_ids: Sequence[str], sources: Sequence[str], settings: Mapping[str, Any],
                           report_json: str, values: Sequence[Mapping[str, Any]]) -> int:
        """Store one analysis and its value rows in one transaction; return the analysis id."""
        with write_transaction(self.db):
            table = self.db["indeterminacy_analyses"].insert({
                "analysed_utc": utc_now(),
                "run_ids_json": json.dumps(list(run_ids)),
                "sources_json": json.dumps(list(sources)),
                "settings_json": json.dumps(dict(settings), sort_keys=True),
                "report_json": report_json,
            })
            analysis_id = int(table.last_pk)  # type: ignore[arg-type]
            self.db["indeterminacy_values"].insert_all(({**row, "analysis_id": analysis_id} for row in values),
                                                       batch_size=1000)
        return analysis_id

    def indeterminacy_analyses(self) -> list[dict[str, Any]]:
        """Every analysis row, newest first."""
        return list(self.db["indeterminacy_analyses"].rows_where(order_by="id desc"))

    def indeterminacy_values(self, analysis_id: int) -> list[dict[str, Any]]:
        """The value rows of one analysis, in insertion order."""
        return list(self.db["indeterminacy_values"].rows_where("analysis_id = ?", [analysis_id], order_by="rowid"))
