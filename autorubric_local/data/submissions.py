"""Load the data the CLI grades: a submissions file or an AutoRubric dataset, as a RubricDataset.

:func:`load_grading_data` accepts three layouts:

(a) **JSONL of submissions**, one object per line (blank lines skipped)::

        {"id": "s1", "submission": "NMC cells reach ...", "query": "Compare NMC and LFP ..."}

    Fields: ``submission`` (required string; an empty one is graded like any other text),
    ``id`` (string or integer, unique), ``query`` (the question, passed to grading as the
    item's prompt), ``reference_submission`` (exemplar answer) and ``metadata`` (any JSON
    object, kept with the item and never shown to the judge: put extra columns there). Any
    other field is an error naming the closest known one, so typos are caught. A submissions
    file carries no rubric: ``rubric`` must be given.
(b) **a JSON array** of such objects.
(c) **an AutoRubric dataset** (:class:`~autorubric_local.data.dataset.RubricDataset` JSON, an object
    with ``items``; or its JSONL form, whose first line is a header with ``rubric``). Its own
    global rubric is used when ``rubric`` is None. When both exist the explicit ``rubric``
    replaces the file's global rubric; items with their own per-item rubric keep it.

The layout is chosen by the suffix: ``.jsonl`` is line-based ((a), or (c)'s JSONL form when the
first object has ``rubric`` and no ``submission``); ``.json`` is one JSON value ((b) for an
array, (c) for an object); any other suffix is read as one JSON value if it parses as one,
else as JSONL.

Items without an ``id`` get ``item-<i>``, where ``i`` is the item's 0-based position, equal to
its index in the returned dataset. Duplicate ids are an error.

Every problem is an :class:`~autorubric_local.core.errors.InputError` whose lines name the file, the
line (JSONL, 1-based) or item (JSON, 0-based) and the field, e.g.
``subs.jsonl: line 3: field 'submission': missing``. The whole file is checked before anything
is returned. JSONL is read line by line, split on ``"\n"`` only, with no limit on the file's
size and 64 MiB a line (:func:`~autorubric_local.core.checks.read_jsonl_lines`); a JSON file
over 64 MiB (it is parsed whole), text that is not UTF-8, and JSON nested deeper than 64 levels
are refused (:mod:`autorubric_local.core.checks`). With ``keep_unreadable`` a JSONL line that
cannot be read becomes an :class:`~autorubric_local.data.item.UnreadableItem` instead (the
item's failure, not the file's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from autorubric_local.core.checks import check_keys, jsonl_lines, parse_json, read_jsonl_lines
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import (
    DataItem,
    ProblemCollector,
    RubricDataset,
    json_type_name,
    read_text_file,
)
from autorubric_local.data.item import UnreadableItem
from autorubric_local.data.validation import require_field

__all__ = ["SUBMISSION_FIELDS", "load_grading_data"]

SUBMISSION_FIELDS: tuple[str, ...] = ("id", "submission", "query", "reference_submission", "metadata")
"""Fields allowed in one submission object."""


def load_grading_data(
    path: str | Path, rubric: Rubric | None = None, *, limit: int | None = None, keep_unreadable: bool = False
) -> RubricDataset:
    """Load submissions or an AutoRubric dataset from ``path`` for grading.

    Parameters
    ----------
    path : str or Path
        A ``.jsonl`` / ``.json`` file in one of the layouts of the module docstring.
    rubric : Rubric or None
        Rubric to grade with. Required for submissions files; for a dataset file it replaces
        the file's global rubric (per-item rubrics are kept).
    limit : int or None
        Load only the first ``limit`` items (a JSONL file is read no further).
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
    path = Path(path)
    source = str(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _load_jsonl(read_jsonl_lines(path), source, rubric, limit, keep_unreadable)
    text = read_text_file(path)
    try:
        data = parse_json(text)
    except InputError as e:
        if suffix == ".json":
            raise InputError(f"{source}: invalid JSON: {e}") from None
        return _load_jsonl(jsonl_lines(text), source, rubric, limit, keep_unreadable)
    if isinstance(data, list):
        rows = [(i, f"item {i}", row) for i, row in enumerate(data[:limit])]
        return _load_submissions(rows, {}, source, rubric)
    if isinstance(data, dict) and "items" in data:
        dataset = RubricDataset.from_dict(data, source=source, rubric=rubric)
        if limit is not None:
            dataset = dataset.with_items(dataset.items[:limit])
        return _with_ids(dataset, [f"item {i}" for i in range(len(dataset))], source)
    if isinstance(data, dict) and suffix != ".json":
        return _load_jsonl(jsonl_lines(text), source, rubric, limit, keep_unreadable)  # a one-line JSONL file
    raise InputError(
        f"{source}: expected a JSON array of submissions or a dataset object with 'items', "
        f"got {json_type_name(data)}"
        + (" without 'items'" if isinstance(data, dict) else "")
    )


def _load_jsonl(
    lines: Iterable[tuple[int, str | InputError]],
    source: str,
    rubric: Rubric | None,
    limit: int | None,
    keep_unreadable: bool,
) -> RubricDataset:
    """Items from JSONL lines (read one at a time): submissions, or the dataset form when the
    first line is a header (an object with ``rubric`` and no ``submission``)."""
    header: tuple[str, Any] | None = None
    rows: list[tuple[int, str, Any]] = []  # (item position, location, JSON value)
    unreadable: dict[int, UnreadableItem] = {}
    for number, line in lines:
        problem, value = _parse_line(line)
        if not rows and not unreadable and header is None and problem is None and _is_header(value):
            header = (f"line {number}", value)
            continue
        position = len(rows) + len(unreadable)
        if limit is not None and position >= limit:
            break
        if problem is None:
            rows.append((position, f"line {number}" if header is None else f"line {number} (item {position})", value))
        elif keep_unreadable:
            unreadable[position] = UnreadableItem(submission="", error=f"{source}: line {number}: {problem}",
                                                  line=number)
        else:
            raise InputError(f"{source}: line {number}: {problem}")
    if unreadable and not rows:
        shown = "; ".join(item.error for item in list(unreadable.values())[:3])
        raise InputError(f"{source}: no line could be read as an item ({len(unreadable)} unreadable): {shown}")
    if header is None:
        return _load_submissions(rows, unreadable, source, rubric)
    dataset = RubricDataset.from_jsonl_rows([header] + [(where, value) for _, where, value in rows],
                                            source=source, rubric=rubric)
    readable = iter(dataset.items)
    items = [unreadable[i] if i in unreadable else next(readable) for i in range(len(rows) + len(unreadable))]
    return _with_ids(dataset.with_items(items), _locations(rows, unreadable), source)


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


def _locations(rows: Sequence[tuple[int, str, Any]], unreadable: Mapping[int, UnreadableItem]) -> list[str]:
    """Each item's location for messages, in item order."""
    where = {position: location for position, location, _ in rows}
    where.update({position: f"line {item.line}" for position, item in unreadable.items()})
    return [where[i] for i in range(len(where))]


def _load_submissions(
    rows: Sequence[tuple[int, str, Any]], unreadable: Mapping[int, UnreadableItem], source: str, rubric: Rubric | None
) -> RubricDataset:
    """Build a dataset from submission objects; ``rows`` gives each one's item position and
    location, ``unreadable`` the placeholders of lines that could not be read."""
    if not rows:
        raise InputError(f"{source}: no submissions found")
    if rubric is None:
        raise InputError(
            f"{source}: no rubric: a submissions file carries no rubric, so one must be given"
        )
    problems = ProblemCollector(source)
    items: dict[int, DataItem] = {
        position: replace(item, id=f"item-{position}") for position, item in unreadable.items()
    }
    for position, where, row in rows:
        try:
            items[position] = _parse_submission(row, position)
        except InputError as e:
            problems.add(where, str(e))
    problems.raise_if_any()
    ordered = [items[i] for i in range(len(items))]
    _check_unique_ids(ordered, _locations(rows, unreadable), problems)
    problems.raise_if_any()
    return RubricDataset(prompt=None, rubric=rubric, items=ordered)


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
    for item, location in zip(items, where):
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
