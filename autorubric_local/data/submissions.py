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
is returned. JSONL is split on ``"\n"`` only; files over 64 MiB, not UTF-8, or nested deeper
than 64 levels are refused (:mod:`autorubric_local.core.checks`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from autorubric_local.core.checks import check_keys, jsonl_lines, parse_json
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import (
    DataItem,
    ProblemCollector,
    RubricDataset,
    json_type_name,
    read_text_file,
)
from autorubric_local.data.validation import require_field

__all__ = ["SUBMISSION_FIELDS", "load_grading_data"]

SUBMISSION_FIELDS: tuple[str, ...] = ("id", "submission", "query", "reference_submission", "metadata")
"""Fields allowed in one submission object."""


def load_grading_data(path: str | Path, rubric: Rubric | None = None) -> RubricDataset:
    """Load submissions or an AutoRubric dataset from ``path`` for grading.

    Parameters
    ----------
    path : str or Path
        A ``.jsonl`` / ``.json`` file in one of the layouts of the module docstring.
    rubric : Rubric or None
        Rubric to grade with. Required for submissions files; for a dataset file it replaces
        the file's global rubric (per-item rubrics are kept).

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
    text = read_text_file(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _load_jsonl(text, source, rubric)
    try:
        data = parse_json(text)
    except InputError as e:
        if suffix == ".json":
            raise InputError(f"{source}: invalid JSON: {e}") from None
        return _load_jsonl(text, source, rubric)
    if isinstance(data, list):
        rows = [(f"item {i}", row) for i, row in enumerate(data)]
        return _load_submissions(rows, source, rubric)
    if isinstance(data, dict) and "items" in data:
        dataset = RubricDataset.from_dict(data, source=source, rubric=rubric)
        return _with_ids(dataset, [f"item {i}" for i in range(len(dataset))], source)
    if isinstance(data, dict) and suffix != ".json":
        return _load_jsonl(text, source, rubric)  # a one-line JSONL file
    raise InputError(
        f"{source}: expected a JSON array of submissions or a dataset object with 'items', "
        f"got {json_type_name(data)}"
        + (" without 'items'" if isinstance(data, dict) else "")
    )


def _load_jsonl(text: str, source: str, rubric: Rubric | None) -> RubricDataset:
    rows: list[tuple[str, Any]] = []
    for number, line in jsonl_lines(text):
        try:
            rows.append((f"line {number}", parse_json(line)))
        except InputError as e:
            raise InputError(f"{source}: line {number}: invalid JSON: {e}") from None
    if rows:
        first = rows[0][1]
        if isinstance(first, dict) and "rubric" in first and "submission" not in first:
            dataset = RubricDataset.from_jsonl(text, source=source, rubric=rubric)
            return _with_ids(dataset, [where for where, _ in rows[1:]], source)
    return _load_submissions(rows, source, rubric)


def _load_submissions(
    rows: list[tuple[str, Any]], source: str, rubric: Rubric | None
) -> RubricDataset:
    """Build a dataset from submission objects; ``rows`` pairs each with its location."""
    if not rows:
        raise InputError(f"{source}: no submissions found")
    if rubric is None:
        raise InputError(
            f"{source}: no rubric: a submissions file carries no rubric, so one must be given"
        )
    problems = ProblemCollector(source)
    items: list[DataItem] = []
    for index, (where, row) in enumerate(rows):
        try:
            items.append(_parse_submission(row, index))
        except InputError as e:
            problems.add(where, str(e))
    problems.raise_if_any()
    _check_unique_ids(items, [where for where, _ in rows], problems)
    problems.raise_if_any()
    return RubricDataset(prompt=None, rubric=rubric, items=items)


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
