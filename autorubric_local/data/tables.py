"""Submissions kept as tables: CSV and Parquet files, and cached Hugging Face datasets
(``hf:OWNER/NAME[:SPLIT]``, :mod:`~autorubric_local.data.hub`), read for grading (issue 54), and the
reading of any table (:func:`read_table`, :func:`check_columns`) that ``compare``'s tables of
responses (:mod:`autorubric_local.comparisons.data`) share.

A table of model outputs (what ``export --format parquet`` writes, and what most evaluation
pipelines keep) is read row by row into the same submissions
:func:`~autorubric_local.data.submissions.load_grading_data` reads from JSONL. A
:class:`Columns` says which column holds each field: by default the fields' own names
(``id``, ``submission``, ``query``, ``reference_submission``); every other column goes to the
item's ``metadata`` (kept with the item, never shown to the judge). CSV is read with Python's
``csv`` module (UTF-8, a header row; every value is text); Parquet with pyarrow, a record batch
at a time, so ``limit`` stops reading early and a file of any size is streamed.

Problems name the file, the row (1-based, the header not counted) and the column, e.g.
``outputs.csv: row 3: column 'answer': empty``; the whole file is checked before anything is
returned, as for JSONL.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import InputError
from autorubric_local.data.hub import hub_rows, is_hub_source

__all__ = ["TABLE_SUFFIXES", "Columns", "check_columns", "is_empty", "is_table", "read_table", "table_rows"]

TABLE_SUFFIXES = (".csv", ".parquet")
"""Suffixes read as tables (case-insensitive)."""

def is_table(source: str | Path) -> bool:
    """Whether ``source`` is read as a table: a file with a suffix of :data:`TABLE_SUFFIXES`, or a
    cached Hugging Face dataset (``hf:OWNER/NAME[:SPLIT]``, :func:`~.hub.is_hub_source`)."""
    return Path(source).suffix.lower() in TABLE_SUFFIXES or is_hub_source(source)


PARQUET_BATCH_ROWS = 1024
"""Rows read a record batch at a time from a Parquet file."""


@dataclass(frozen=True)
class Columns:
    """Which column of a table holds each submission field.

    Attributes
    ----------
    submission : str, default "submission"
        The text to grade (required: a row whose cell is empty or null is an error).
    id : str or None, default "id"
        The item's id; without the column, items get ``item-<i>``.
    query : str or None, default "query"
        The question, passed to grading as the item's prompt (optional column).
    reference : str or None, default "reference_submission"
        An exemplar answer (optional column).
    """

    submission: str = "submission"
    id: str | None = "id"
    query: str | None = "query"
    reference: str | None = "reference_submission"

    def fields(self) -> dict[str, str | None]:
        """Submission field -> column name (None: not taken from the table)."""
        return {"id": self.id, "submission": self.submission, "query": self.query,
                "reference_submission": self.reference}


def table_rows(path: Path | str, columns: Columns, limit: int | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, submission object)`` for each row of the table ``path`` (:func:`read_table`), in
    order, at most ``limit``: the object has the fields :class:`Columns` maps (a field whose
    cell is empty or null is left out, except ``submission``) and ``metadata``, the row's other
    columns (null cells left out; Parquet values as pyarrow gives them in Python).

    Raises
    ------
    InputError
        The file cannot be read as that format, or lacks the ``submission`` column (or a
        column :class:`Columns` names that is not a default), or a row's submission is empty
        or null, or a cell of a mapped column is not text or a whole number (an id). The
        message names the file, row and column.
    """
    source = str(path)
    header, rows = read_table(path)
    mapped = columns.fields()
    defaults = Columns().fields()
    check_columns(source, header, {field: column for field, column in mapped.items() if column is not None and
                                   (field == "submission" or column != defaults[field])})
    taken = {column for column in mapped.values() if column is not None}
    for number, row in enumerate(rows, start=1):
        if limit is not None and number > limit:
            return
        yield f"row {number}", _submission(source, number, row, mapped, taken)


def _submission(source: str, number: int, row: dict[str, Any], mapped: dict[str, str | None],
                taken: set[str]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for field, column in mapped.items():
        if column is None or column not in row:
            continue
        cell = row[column]
        if is_empty(cell):
            if field == "submission":
                raise InputError(f"{source}: row {number}: column {column!r}: empty (the text to grade)")
            continue
        if isinstance(cell, bool) or not isinstance(cell, (str, int)) or (field != "id" and not isinstance(cell, str)):
            raise InputError(f"{source}: row {number}: column {column!r}: expected text, got "
                             f"{type(cell).__name__} {cell!r}"[:300])
        value[field] = str(cell) if field == "id" else cell
    metadata = {column: cell for column, cell in row.items() if column not in taken and not is_empty(cell)}
    if metadata:
        value["metadata"] = metadata
    return value


def is_empty(cell: Any) -> bool:
    """Whether a table cell holds nothing: null, ``""`` (CSV's empty cell) or NaN."""
    return cell is None or cell == "" or (isinstance(cell, float) and math.isnan(cell))


def read_table(path: Path | str) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """The header of the CSV or Parquet file ``path`` (or the cached Hugging Face dataset it
    names, :func:`~.hub.hub_rows`) and its rows (column -> cell), read lazily.

    CSV cells are text (``""`` when empty); Parquet cells are what pyarrow gives in Python
    (``None`` when null), a dataset's what ``datasets`` gives. Blank CSV lines are skipped.

    Raises
    ------
    InputError
        Another suffix, a file that cannot be read as its format, a CSV header naming a column
        twice; while iterating, a CSV row with more or fewer cells than the header, or a file
        unreadable further on (the message names the file and the row or line); a dataset
        :func:`~.hub.hub_rows` refuses.
    """
    if is_hub_source(path):
        return hub_rows(path)
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _csv_rows(path)
    if suffix == ".parquet":
        return _parquet_rows(path)
    raise InputError(f"{path}: not a table (expected {' or '.join(TABLE_SUFFIXES)})")


def check_columns(source: str, header: list[str], needed: Mapping[str, str]) -> None:
    """Refuse a table whose ``header`` lacks a column of ``needed`` (field -> column name).

    Raises
    ------
    InputError
        ``outputs.csv: no column 'answer' (for the submission; the columns: 'id', 'text')``, for
        the first one missing.
    """
    for field, column in needed.items():
        if column not in header:
            known = ", ".join(repr(c) for c in header) or "none"
            raise InputError(f"{source}: no column {column!r} (for the {field}; the columns: {known})")


def _csv_rows(path: Path) -> tuple[list[str], Iterator[dict[str, Any]]]:
    source = str(path)
    handle = path.open("r", encoding="utf-8", newline="")
    reader = csv.reader(handle)
    try:
        header = next(reader, None)
    except (csv.Error, UnicodeDecodeError) as exc:
        handle.close()
        raise InputError(f"{source}: line 1: not a CSV header row: {exc}") from None
    if header is None:
        handle.close()
        raise InputError(f"{source}: empty file (expected a header row)")
    duplicated = sorted({c for c in header if header.count(c) > 1})
    if duplicated:
        handle.close()
        raise InputError(f"{source}: line 1: column names used twice: {', '.join(map(repr, duplicated))}")

    def rows() -> Iterator[dict[str, Any]]:
        with handle:
            number = 0
            try:
                for cells in reader:
                    if not cells:
                        continue  # a blank line
                    number += 1
                    if len(cells) != len(header):
                        raise InputError(f"{source}: row {number} (line {reader.line_num}): {len(cells)} cells, "
                                         f"the header has {len(header)}")
                    yield dict(zip(header, cells, strict=True))
            except (csv.Error, UnicodeDecodeError) as exc:
                raise InputError(f"{source}: line {reader.line_num}: {exc}") from None

    return header, rows()


def _parquet_rows(path: Path) -> tuple[list[str], Iterator[dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = str(path)
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{source}: cannot be read as Parquet: {exc}") from None
    header = list(parquet.schema_arrow.names)

    def rows() -> Iterator[dict[str, Any]]:
        try:
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
                yield from batch.to_pylist()
        except pa.ArrowException as exc:
            raise InputError(f"{source}: cannot be read as Parquet: {exc}") from None

    return header, rows()
