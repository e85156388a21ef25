"""Human labels of a run's items and label selections (tables of migration 14 in :mod:`.schema`).

Labels are kept per *source* (``dataset`` for the run's own ground truth, else the resolved
path of the labels file they came from), so one graded run can be estimated with several
label sets without grading again. A selection records, for every item of the run, the
inclusion probability it was drawn with and whether it was drawn, before any label exists. A
selection of a comparison's comparisons (migration 15) records the same per comparison (prompt
and pair of systems), with the side each response is shown on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlite_utils

from autorubric_local.store.provenance import utc_now
from autorubric_local.store.transaction import write_transaction

LabelRow = tuple[str, int, str | None, str]
"""``(item_id, criterion_index, criterion_name, label)``: one stored label."""


class LabelTables:
    """Label and label-selection rows (part of :class:`autorubric_local.store.Store`)."""

    db: sqlite_utils.Database

    def replace_labels(self, run_id: str, source: str, rows: Sequence[LabelRow]) -> int:
        """Store ``rows`` as the labels of ``source`` for ``run_id``, replacing that source's
        earlier rows, in one transaction; return how many were stored."""
        now = utc_now()
        with write_transaction(self.db):
            self.db.execute("delete from labels where run_id = ? and source = ?", [run_id, source])
            self.db["labels"].insert_all(
                ({"run_id": run_id, "source": source, "item_id": item_id, "criterion_index": index,
                  "criterion_name": name, "label": label, "imported_utc": now}
                 for item_id, index, name, label in rows),
                batch_size=1000,
            )
        return len(rows)

    def label_rows(self, run_id: str, source: str) -> list[LabelRow]:
        """The stored labels of ``source`` for ``run_id``, by item and criterion index."""
        return [
            (r["item_id"], r["criterion_index"], r["criterion_name"], r["label"])
            for r in self.db.query(
                "select item_id, criterion_index, criterion_name, label from labels "
                "where run_id = ? and source = ? order by item_id, criterion_index", [run_id, source])
        ]

    def label_sources(self, run_id: str) -> list[str]:
        """The label sources stored for ``run_id``, in the order they were first imported."""
        return [r["source"] for r in self.db.query(
            "select source, min(imported_utc) as first from labels where run_id = ? "
            "group by source order by first, source", [run_id])]

    def save_selection(self, run_id: str, *, target: str, budget: float, seed: int | None, mix: float,
                       settings: Mapping[str, Any], items: Sequence[tuple[str, float, bool]]) -> int:
        """Store one selection (``items``: ``(item_id, inclusion_probability, drawn)`` for every
        item of the run) in one transaction; return its id."""
        with write_transaction(self.db):
            table = self.db["label_selections"].insert({
                "run_id": run_id, "selected_utc": utc_now(), "target": target, "budget": budget,
                "seed": seed, "mix": mix, "settings_json": json.dumps(dict(settings), sort_keys=True),
            })
            selection_id = int(table.last_pk)  # type: ignore[arg-type]
            self.db["label_selection_items"].insert_all(
                ({"selection_id": selection_id, "item_id": item_id, "inclusion_probability": pi,
                  "drawn": int(drawn)} for item_id, pi, drawn in items),
                batch_size=1000,
            )
        return selection_id

    def selection(self, run_id: str, selection_id: int | None = None) -> dict[str, Any] | None:
        """A selection of ``run_id`` (default its latest) with its ``items``
        (``{item_id: (inclusion_probability, drawn)}``), or ``None`` when it has none."""
        where, params = "run_id = ?", [run_id]
        if selection_id is not None:
            where, params = "run_id = ? and id = ?", [run_id, selection_id]
        rows = list(self.db["label_selections"].rows_where(where, params, order_by="id desc", limit=1))
        if not rows:
            return None
        row = dict(rows[0])
        row["items"] = {
            r["item_id"]: (r["inclusion_probability"], bool(r["drawn"]))
            for r in self.db["label_selection_items"].rows_where("selection_id = ?", [row["id"]])
        }
        return row

    def save_comparison_selection(self, sweep_id: str, *, judge_id: str, question: str, budget: float,
                                  seed: int | None, mix: float, settings: Mapping[str, Any],
                                  items: Sequence[Mapping[str, Any]]) -> int:
        """Store one selection of a comparison's comparisons in one transaction; return its id.

        ``items``: one mapping per judged comparison with ``item_id``, ``prompt_id``, ``system_a``,
        ``system_b``, ``inclusion_probability``, ``drawn`` and ``shown_left`` (migration 15)."""
        with write_transaction(self.db):
            table = self.db["comparison_selections"].insert({
                "sweep_id": sweep_id, "selected_utc": utc_now(), "judge_id": judge_id, "question": question,
                "budget": budget, "seed": seed, "mix": mix, "settings_json": json.dumps(dict(settings), sort_keys=True),
            })
            selection_id = int(table.last_pk)  # type: ignore[arg-type]
            self.db["comparison_selection_items"].insert_all(
                ({"selection_id": selection_id, "item_id": r["item_id"], "prompt_id": r["prompt_id"],
                  "system_a": r["system_a"], "system_b": r["system_b"],
                  "inclusion_probability": float(r["inclusion_probability"]), "drawn": int(bool(r["drawn"])),
                  "shown_left": r["shown_left"]} for r in items),
                batch_size=1000,
            )
        return selection_id

    def comparison_selection(self, sweep_id: str, selection_id: int | None = None) -> dict[str, Any] | None:
        """A selection of the comparison ``sweep_id`` (default its latest) with its ``items``
        (a list of row dicts in stored order), or ``None`` when it has none (or a database
        older than migration 15)."""
        if not self.db["comparison_selections"].exists():
            return None
        where, params = "sweep_id = ?", [sweep_id]
        if selection_id is not None:
            where, params = "sweep_id = ? and id = ?", [sweep_id, selection_id]
        rows = list(self.db["comparison_selections"].rows_where(where, params, order_by="id desc", limit=1))
        if not rows:
            return None
        row = dict(rows[0])
        row["items"] = [dict(r) for r in self.db["comparison_selection_items"].rows_where(
            "selection_id = ?", [row["id"]], order_by="rowid")]
        return row
