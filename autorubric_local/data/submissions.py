"""Load the data the CLI grades: a submissions file or an AutoRubric dataset, as a RubricDataset.

:func:`load_grading_data` accepts four layouts:

(a) **JSONL of submissions**, one object per line (blank lines skipped)::

        {"id": "s1", "submission": "NMC cells reach ...", "query": "Compare NMC and LFP ..."}

    Fields: ``submission`` (required string; an empty one is graded like any other text),
    ``id`` (string or integer, unique), ``query`` (the question, passed to grading as the
    item's prompt), ``reference_submission`` (exemplar answer), ``metadata`` (any JSON
    object, kept with the item and never shown to the judge: put extra columns there) and
    ``ground_truth`` (human labels: null, or one entry per criterion of ``rubric`` in its
    order, each ``MET``/``UNMET``/``CANNOT_ASSESS`` or an option label, checked as a
    dataset's by :func:`~autorubric_local.data.validation.parse_ground_truth`; stored with the
    run, so ``metrics`` and ``calibrate`` read them). Any other field is an error naming the
    closest known one, so typos are caught. A submissions file carries no rubric: ``rubric``
    must be given.
(b) **a JSON array** of such objects (a ``.json`` file's are kept as their places in the file,
    as for JSONL).
(c) **an AutoRubric dataset** (:class:`~autorubric_local.data.dataset.RubricDataset` JSON, an object
    with ``items``; or its JSONL form, whose first line is a header with ``rubric``). Its own
    global rubric is used when ``rubric`` is None. When both exist the explicit ``rubric``
    replaces the file's global rubric; items with their own per-item rubric keep it.

(d) **a table**: a ``.csv`` or ``.parquet`` file with a row per submission, its columns mapped
    to the fields above by :class:`~autorubric_local.data.tables.Columns` (other columns become
    ``metadata``; :mod:`~autorubric_local.data.tables`).

The layout is chosen by the suffix: ``.csv`` and ``.parquet`` are tables; ``.jsonl`` is line-based ((a), or (c)'s JSONL form when the
first object has ``rubric`` and no ``submission``); ``.json`` is one JSON value ((b) for an
array, (c) for an object); any other suffix is read as one JSON value if it parses as one,
else as JSONL.

Items without an ``id`` get ``item-<i>``, where ``i`` is the item's 0-based position, equal to
its index in the returned dataset. Duplicate ids are an error.

Every problem is an :class:`~autorubric_local.core.errors.InputError` whose lines name the file, the
line (JSONL, 1-based) or item (JSON, 0-based) and the field, e.g.
``subs.jsonl: line 3: field 'submission': missing``. The whole file is checked before anything
is returned. JSONL is read line by line, split on ``"\n"`` only, with no limit on the file's
size and 64 MiB a line (:func:`~autorubric_local.core.checks.read_jsonl_lines`). A ``.json``
file is read a value at a time (:func:`~autorubric_local.core.json_stream.stream_json`), with no
limit on its size and 64 MiB an item; a file of another suffix is read whole (at most 64 MiB).
Text that is not UTF-8 and JSON nested deeper than 64 levels (counted from the file's top
level) are refused (:mod:`autorubric_local.core.checks`). The items of a ``.jsonl`` file and of
a ``.json`` array are not held in memory: each is kept as its place in the file and read again
when used (:class:`~autorubric_local.data.jsonl_items.JsonlItems`), so a file of any size loads
in a few dozen bytes an item; a ``.json`` dataset object's items are held once built
(:func:`~autorubric_local.data.json_file.read_json_dataset`), its text is not. With ``keep_unreadable`` a JSONL line that
cannot be read becomes an :class:`~autorubric_local.data.item.UnreadableItem` instead (the
item's failure, not the file's).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from autorubric_local.core.checks import JsonlLine, check_keys, jsonl_lines, parse_json, read_jsonl_spans
from autorubric_local.core.json_stream import stream_json
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import (
    DataItem,
    ProblemCollector,
    RubricDataset,
    json_type_name,
    read_text_file,
)
from autorubric_local.data.item import UnreadableItem, _item_from_dict
from autorubric_local.data.json_file import read_json_dataset
from autorubric_local.data.jsonl_items import JsonlItems
from autorubric_local.data.tables import TABLE_SUFFIXES, Columns, is_table, table_rows
from autorubric_local.data.dataset import _checked_item
from autorubric_local.data.validation import _duplicate_id, require_field

__all__ = ["SUBMISSION_FIELDS", "load_grading_data"]

SUBMISSION_FIELDS: tuple[str, ...] = ("id", "submission", "query", "reference_submission", "metadata",
                                      "ground_truth")
"""Fields allowed in one submission object."""


def load_grading_data(
    path: str | Path, rubric: Rubric | None = None, *, limit: int | None = None, keep_unreadable: bool = False,
    columns: Columns | None = None,
) -> RubricDataset:
    """Load submissions or an AutoRubric dataset from ``path`` for grading.

    Parameters
    ----------
    path : str or Path
        A ``.jsonl`` / ``.json`` file in one of the layouts of the module docstring, a ``.csv``
        or ``.parquet`` table, or ``hf:OWNER/NAME[:SPLIT]``, a Hugging Face dataset in the local
        cache read as a table (:mod:`~autorubric_local.data.hub`; the ``[hf]`` extra).
    rubric : Rubric or None
        Rubric to grade with. Required for submissions files; for a dataset file it replaces
        the file's global rubric (per-item rubrics are kept).
    limit : int or None
        Load only the first ``limit`` items (a JSONL file, or a ``.json`` array, is read no
        further; a ``.json`` dataset object is read whole, its later items unchecked).
    columns : Columns or None
        For a table (:mod:`~autorubric_local.data.tables`: ``.csv``, ``.parquet``, ``hf:``): which
        column holds each field (default: the fields' own names; other columns become the
        item's ``metadata``). Refused for other files.
    keep_unreadable : bool
        For a JSONL file: a line that is not UTF-8, not valid JSON or not valid Unicode, or
        longer than :data:`~autorubric_local.core.checks.MAX_LINE_BYTES`, becomes an
        :class:`~autorubric_local.data.item.UnreadableItem` holding its place and its error (a
        run records it as that item's failure) instead of refusing the file. A file with no
        readable item, or whose dataset header cannot be read, is still refused.

    Returns
    -------
    RubricDataset
        Every item has an ``id``; ``dataset.get_item_query(i)`` gives the item's query.

    Raises
    ------
    InputError
        Unreadable file, invalid JSON, a bad or unknown field, duplicate ids, no submissions,
        or no rubric for some item. Each line of the message names the file, line/item and field.
    """
    if is_table(path):
        source = str(path)
        reading = _ItemReading(source, rubric, keep_unreadable=False, path=None, unit="row")
        for where, value in table_rows(path, columns or Columns(), limit):
            reading.add_item(value, where)
        return reading.dataset()
    path = Path(path)
    source = str(path)
    suffix = path.suffix.lower()
    if columns is not None:
        raise InputError(f"{source}: column names apply to a table ({' or '.join(TABLE_SUFFIXES)} file), "
                         f"not a {suffix or 'suffix-less'} file")
    if suffix == ".jsonl":
        return _load_jsonl(read_jsonl_spans(path), source, rubric, limit, keep_unreadable, path)
    if suffix == ".json":
        return _load_json(path, source, rubric, limit)
    text = read_text_file(path)
    try:
        data = parse_json(text)
    except InputError as e:
        if suffix == ".json":
            raise InputError(f"{source}: invalid JSON: {e}") from None
        return _load_jsonl(_text_lines(text), source, rubric, limit, keep_unreadable)
    if isinstance(data, list):
        reading = _ItemReading(source, rubric, keep_unreadable=False, path=None)
        for i, row in enumerate(data[:limit]):
            reading.add_item(row, f"item {i}")
        return reading.dataset()
    if isinstance(data, dict) and "items" in data:
        dataset = RubricDataset.from_dict(data, source=source, rubric=rubric)
        if limit is not None:
            dataset = dataset.with_items(dataset.items[:limit])
        return _with_ids(dataset, [f"item {i}" for i in range(len(dataset))], source)
    if isinstance(data, dict) and suffix != ".json":
        return _load_jsonl(_text_lines(text), source, rubric, limit, keep_unreadable)  # a one-line JSONL file
    raise InputError(
        f"{source}: expected a JSON array of submissions or a dataset object with 'items', "
        f"got {json_type_name(data)}"
        + (" without 'items'" if isinstance(data, dict) else "")
    )


def _load_json(path: Path, source: str, rubric: Rubric | None, limit: int | None) -> RubricDataset:
    """A ``.json`` file read a value at a time: an array of submissions, each kept as its place
    in the file; or a dataset object, its items held once built. Problems are reported with the
    messages, and in the order, of parsing the whole file before checking it."""
    events = stream_json(path)
    kind, first = next(events)
    if kind == "array":
        reading = _ItemReading(source, rubric, keep_unreadable=False, path=path, unit="item")
        for _, element in events:
            if limit is not None and reading.count >= limit:
                events.close()
                break
            position = reading.count
            reading.add_item(element.value, f"item {position}", JsonlLine(position, "", element.offset, element.raw))
        return reading.dataset()
    data = read_json_dataset(path, limit=limit, events=itertools.chain([(kind, first)], events))
    if data.top == "object" and (data.items is not None or "items" in data.header):
        dataset = RubricDataset.from_json_dataset(data, source=source, rubric=rubric)
        return _with_ids(dataset, [f"item {i}" for i in range(len(dataset))], source)
    raise InputError(
        f"{source}: expected a JSON array of submissions or a dataset object with 'items', "
        f"got {data.top}" + (" without 'items'" if data.top == "object" else "")
    )


def _load_jsonl(
    lines: Iterable[JsonlLine],
    source: str,
    rubric: Rubric | None,
    limit: int | None,
    keep_unreadable: bool,
    path: Path | None = None,
) -> RubricDataset:
    """Items from JSONL lines, read and checked one at a time: submissions, or the dataset form
    when the first line is a header (an object with ``rubric`` and no ``submission``).

    With ``path`` (lines read from that file) only each item's place in the file is kept and
    the dataset's items are a :class:`~autorubric_local.data.jsonl_items.JsonlItems`, parsed
    again when read; without it (lines from text) they are a list. Problems are reported with
    the messages, and in the order, of reading the whole file before checking it: a line that
    cannot be read (unless ``keep_unreadable``); then no readable line; then the header; then
    every item's fields; then ids used twice."""
    reading = _ItemReading(source, rubric, keep_unreadable, path)
    for line in lines:
        problem, value = _parse_line(line.text)
        if reading.expects_header and problem is None and _is_header(value):
            reading.read_header(line.number, value)
            continue
        if limit is not None and reading.count >= limit:
            break
        if problem is not None:
            reading.add_unreadable(line.number, problem)
        else:
            reading.add_item(value, f"line {line.number}" + (f" (item {reading.count})" if reading.has_header else ""),
                             line)
    return reading.dataset()


class _ItemReading:
    """The items of a submissions or dataset file read so far, one at a time (:func:`_load_jsonl`,
    or a JSON array of submissions): the header, the items (or where each is in the file), and
    the problems found, by kind (see :func:`_load_jsonl` for the order they are reported in)."""

    def __init__(
        self, source: str, rubric: Rubric | None, keep_unreadable: bool, path: Path | None, unit: str = "line"
    ) -> None:
        self.source = source
        self.unit = unit  # what a place in the file is called (JsonlItems)
        self.rubric = rubric
        self.keep_unreadable = keep_unreadable
        self.path = path
        self.header: RubricDataset | None = None  # the header's dataset, without items
        self.header_problem: InputError | None = None
        self.has_header = False
        self.count = 0
        self.readable = 0
        self.unreadable: list[UnreadableItem] = []
        self.items: JsonlItems | list[DataItem] | None = None  # the items, once the first is read
        self.field_problems: list[tuple[str, str]] = []  # an item's fields (from_dict's check)
        self.rubric_problems: list[tuple[str, str]] = []  # against the effective rubric; ids (dataset form)
        self.id_problems: list[tuple[str, str]] = []  # ids used twice once every item has one
        self.first_use: dict[str, str] = {}
        self.first_own_id: dict[str, str] = {}

    @property
    def expects_header(self) -> bool:
        return self.count == 0 and not self.has_header

    def read_header(self, number: int, value: dict[str, Any]) -> None:
        self.has_header = True
        try:
            self.header = RubricDataset.from_jsonl_rows([(f"line {number}", value)], source=self.source,
                                                        rubric=self.rubric)
        except InputError as e:  # reported after the lines, as when the file was read whole
            self.header_problem = e

    def add_unreadable(self, number: int, problem: str) -> None:
        if not self.keep_unreadable:
            raise InputError(f"{self.source}: line {number}: {problem}")
        item = UnreadableItem(submission="", error=f"{self.source}: line {number}: {problem}", line=number,
                              id=f"item-{self.count}")
        self.unreadable.append(item)
        self._note_id(item.id, f"line {number}")
        items = self._sink()
        if isinstance(items, JsonlItems):
            items.add_unreadable(item)
        else:
            items.append(item)
        self.count += 1

    def add_item(self, value: Any, where: str, line: JsonlLine | None = None) -> None:
        """Check the next item, from ``line`` of the file (or from a JSON array: no line)."""
        position = self.count
        self.count += 1
        self.readable += 1
        item = self._checked(value, position, where)
        if item is None:
            return  # its problem is reported: no dataset is made
        self._note_id(item.id, where)
        items = self._sink()
        if isinstance(items, JsonlItems):
            assert line is not None
            items.add_line(line.number, line.offset, line.raw)
        else:
            items.append(item)

    def _sink(self) -> JsonlItems | list[DataItem]:
        """Where items go: their places in the file (lines read from a file), else a list. Made
        at the first item, when whether the file has a header is known."""
        if self.items is None:
            if self.path is None:
                self.items = []
            elif self.header is None:
                self.items = JsonlItems(self.path, self.source, functools.partial(_read_submission, self.rubric),
                                        self.rubric, self.unit)
            else:
                self.items = JsonlItems(self.path, self.source,
                                        functools.partial(_read_dataset_item, self.header.rubric), self.header.rubric)
        return self.items

    def _checked(self, value: Any, position: int, where: str) -> DataItem | None:
        """The item, or None with its problem recorded."""
        if not self.has_header:
            try:
                return _read_submission(self.rubric, value, position)
            except InputError as e:
                self.field_problems.append((where, str(e)))
                return None
        if self.header is None:
            return None  # the header is refused: its items cannot be checked
        try:
            item = _item_from_dict(value)
        except InputError as e:
            self.field_problems.append((where, str(e)))
            return None
        try:
            item = _checked_item(item, self.header.rubric)
        except InputError as e:
            self.rubric_problems.append((where, str(e)))
            return None
        if item.id is not None:
            if item.id in self.first_own_id:
                self.rubric_problems.append((where, _duplicate_id(item.id, self.first_own_id[item.id])))
                return None
            self.first_own_id[item.id] = where
        return item if item.id is not None else replace(item, id=f"item-{position}")

    def _note_id(self, item_id: str | None, where: str) -> None:
        assert item_id is not None
        first = self.first_use.get(item_id)
        if first is not None:
            self.id_problems.append((where, f"field 'id': duplicate id {item_id!r} (first used by {first})"))
        else:
            self.first_use[item_id] = where

    def dataset(self) -> RubricDataset:
        """The dataset read, or every problem found (InputError)."""
        if self.unreadable and not self.readable:
            shown = "; ".join(item.error for item in self.unreadable[:3])
            raise InputError(f"{self.source}: no line could be read as an item ({len(self.unreadable)} unreadable): "
                             f"{shown}")
        if not self.has_header:
            if not self.readable:
                raise InputError(f"{self.source}: no submissions found")
            if self.rubric is None:
                raise InputError(f"{self.source}: no rubric: a submissions file carries no rubric, so one must be given")
        elif self.header_problem is not None:
            raise self.header_problem
        _raise_problems(self.source, self.field_problems + self.rubric_problems)
        _raise_problems(self.source, self.id_problems)
        items = self._sink()
        if self.header is None:
            return RubricDataset(prompt=None, rubric=self.rubric, items=items)
        return self.header.with_items(items)


def _text_lines(text: str) -> Iterator[JsonlLine]:
    """The lines of JSONL text (:func:`~autorubric_local.core.checks.jsonl_lines`), which have no place in a file."""
    return (JsonlLine(number, line, -1, b"") for number, line in jsonl_lines(text))


def _read_dataset_item(rubric: Rubric | None, value: Any, position: int) -> DataItem:
    """An item of a dataset's JSONL form, as :class:`_ItemReading` checked it."""
    item = _checked_item(_item_from_dict(value), rubric)
    return item if item.id is not None else replace(item, id=f"item-{position}")


def _raise_problems(source: str, problems: Sequence[tuple[str, str]]) -> None:
    collector = ProblemCollector(source)
    for where, message in problems:
        collector.add(where, message)
    collector.raise_if_any()


def _parse_line(line: str | InputError) -> tuple[str | None, Any]:
    """``(problem, None)`` for a line that cannot be read, else ``(None, its JSON value)``."""
    if isinstance(line, InputError):
        return str(line), None
    try:
        return None, parse_json(line)
    except InputError as e:
        return f"invalid JSON: {e}", None


def _is_header(value: object) -> bool:
    return isinstance(value, dict) and "rubric" in value and "submission" not in value


def _read_submission(rubric: Rubric | None, value: Any, position: int) -> DataItem:
    """A submission with its ground truth checked against ``rubric`` and normalised (verdicts
    for binary criteria), as a dataset item's is; without a rubric the file is refused later
    (a submissions file carries none), so the ground truth is left unchecked."""
    item = _parse_submission(value, position)
    if item.ground_truth is None or rubric is None:
        return item
    return _checked_item(item, rubric)


def _parse_submission(row: object, index: int) -> DataItem:
    if not isinstance(row, dict):
        raise InputError(f"expected a JSON object, got {json_type_name(row)}")
    require_field(row, "submission", SUBMISSION_FIELDS)
    check_keys(row, SUBMISSION_FIELDS)
    submission = row["submission"]
    if not isinstance(submission, str):
        raise InputError(f"field 'submission': expected a string, got {json_type_name(submission)}")
    for key in ("query", "reference_submission"):
        value = row.get(key)
        if value is not None and not isinstance(value, str):
            kind = json_type_name(value)
            raise InputError(f"field {key!r}: expected a string or null, got {kind}")
        if isinstance(value, str) and not value.strip():
            raise InputError(f"field {key!r}: empty (leave the field out instead)")
    return DataItem(
        submission=submission,
        prompt=row.get("query"),
        reference_submission=row.get("reference_submission"),
        id=_parse_id(row.get("id"), index),
        metadata=row.get("metadata"),
        ground_truth=row.get("ground_truth"),
    )


def _parse_id(value: object, index: int) -> str:
    if value is None:
        return f"item-{index}"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"field 'id': expected a string or integer, got {json_type_name(value)}")
    if not value.strip():
        raise InputError("field 'id': empty")
    return value


def _check_unique_ids(items: list[DataItem], where: list[str], problems: ProblemCollector) -> None:
    first_use: dict[str, str] = {}
    for item, location in zip(items, where, strict=True):
        assert item.id is not None
        if item.id in first_use:
            first = first_use[item.id]
            problems.add(location, f"field 'id': duplicate id {item.id!r} (first used by {first})")
        else:
            first_use[item.id] = location


def _with_ids(dataset: RubricDataset, where: list[str], source: str) -> RubricDataset:
    """Give items without an id ``item-<i>``; refuse a clash with an id from the file."""
    items = [
        item if item.id is not None else replace(item, id=f"item-{i}")
        for i, item in enumerate(dataset.items)
    ]
    problems = ProblemCollector(source)
    _check_unique_ids(items, where, problems)
    problems.raise_if_any()
    return dataset.with_items(items)
