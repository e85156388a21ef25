"""Writing a stored run's rows (:mod:`.inspection`) to CSV, JSON Lines or Parquet a page at a
time, so an export of a 10^5-item run holds one page of rows, never the whole run.

Each writer takes the columns up front (the header, or Parquet's schema) and an iterable of
pages (lists of row dicts); a column a row lacks is written empty (CSV), ``null`` (JSON Lines)
or null (Parquet). Values are written as SQLite returned them: CSV writes ``None`` as an empty
field and numbers by ``str`` (an integer column stays integral), JSON Lines writes one
``json.dumps`` object a line (non-ASCII text as itself).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

__all__ = ["arrow_schema", "write_csv", "write_jsonl", "write_parquet"]

Page = Sequence[Mapping[str, Any]]


def write_csv(out: IO[str], columns: Sequence[str], pages: Iterable[Page]) -> int:
    """Write a header of ``columns`` and then every row of ``pages`` to ``out``; returns the
    number of rows written."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    count = 0
    for page in pages:
        writer.writerows([["" if row.get(c) is None else row.get(c) for c in columns] for row in page])
        count += len(page)
    return count


def write_jsonl(out: IO[str], columns: Sequence[str], pages: Iterable[Page]) -> int:
    """Write each row of ``pages`` to ``out`` as one JSON object (keys ``columns``, in order) a
    line; returns the number of rows written."""
    count = 0
    for page in pages:
        out.write("".join(json.dumps({c: row.get(c) for c in columns}, ensure_ascii=False) + "\n" for row in page))
        count += len(page)
    return count


def arrow_schema(types: Mapping[str, str]) -> Any:
    """A ``pyarrow.Schema`` from SQLite storage classes: ``types`` maps each column, in order, to
    the classes its values have (``typeof()``'s names, e.g. ``"integer"``, ``"null,real"``).
    A column with text is a string column, else one with reals float64, else one with
    integers int64; a column of nulls only is a string column."""
    import pyarrow as pa

    def arrow_type(classes: str) -> Any:
        seen = set(classes.split(","))
        if "text" in seen or "blob" in seen or not seen - {"null", ""}:
            return pa.string()
        return pa.float64() if "real" in seen else pa.int64()

    return pa.schema([(column, arrow_type(classes)) for column, classes in types.items()])


def write_parquet(path: Path, schema: Any, pages: Iterable[Page]) -> int:
    """Write every row of ``pages`` to a Parquet file at ``path`` with ``schema`` (from
    :func:`arrow_schema`), one row group a page; returns the number of rows written. A value
    in a string column that is not text is written as its ``str``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    strings = {field.name for field in schema if pa.types.is_string(field.type)}
    count = 0
    with pq.ParquetWriter(path, schema) as writer:
        for page in pages:
            columns = {name: [_as_text(row.get(name)) if name in strings else row.get(name) for row in page]
                       for name in schema.names}
            writer.write_table(pa.Table.from_pydict(columns, schema=schema))
            count += len(page)
    return count


def _as_text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else str(value)
