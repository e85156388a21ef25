"""Human labels for a graded run: read from a labels file, checked against the run.

Accepted files (the format is told by the content):

- **JSONL**, one object per line in AutoRubric's item shape: ``{"id": ITEM_ID, "ground_truth":
  [...]}`` with one entry per criterion in rubric order (``MET``/``UNMET``/``CANNOT_ASSESS`` or an
  option label; ``null`` leaves that criterion unlabelled). Other fields are ignored, so the
  file ``autorubric-local label select`` writes can be filled in and read back.
- A **Label Studio export** of the tasks :mod:`.label_studio` writes: ``JSON`` (a list of tasks
  with ``annotations``; the latest annotation that was not cancelled counts) or ``JSON-MIN`` (a
  list of flat objects: ``item_id`` and one key per criterion, ``c0``, ``c1``, ...).

An item the run does not hold is skipped (a full labels file serves a ``grade --limit`` run):
its line or task is checked for JSON, an id and its fields, not its labels (its rubric is not
known), and :func:`read_labels` returns the skipped ids, which :func:`skipped_message` turns into
one line. A file none of whose ids is an item of the run is refused.

Every problem names the file and the line (JSONL) or task (JSON), and the field; nothing is
returned when any label is wrong (an unknown criterion, a label that is not an option, a wrong
number of entries, an item labelled twice).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.data.validation import parse_ground_truth_value

LabelList = list[CriterionVerdict | str | None]

FROM_NAME_PREFIX = "c"
"""Label Studio ``from_name`` of criterion ``i`` is ``c<i>`` (:mod:`.label_studio`)."""

SKIPPED_EXAMPLES = 3
"""How many skipped ids :func:`skipped_message` names."""


class LabelsSkippedWarning(UserWarning):
    """A labels file labels items that are not in the run; they were skipped (the message,
    from :func:`skipped_message`, says how many and names a few). The CLI prints it as one
    ``warning:`` line."""


class PartlyLabelledWarning(UserWarning):
    """Items only partly labelled were left out of an analysis that compares whole items (the
    message says how many). The CLI prints it as one ``note:`` line."""


@dataclass(frozen=True)
class FileLabels:
    """The labels a file gives a run's items, and the ids it labels that the run does not hold.

    Attributes
    ----------
    labels : dict of item id to list of CriterionVerdict, str or None
        One entry per criterion (rubric order); items of the run the file does not mention are
        absent.
    skipped : tuple of str
        Ids the file labels that are no item of the run, in file order.
    """

    labels: dict[str, LabelList]
    skipped: tuple[str, ...] = ()


def skipped_message(path: str | Path, skipped: Sequence[str], run: str) -> str | None:
    """One line saying how many labelled items of ``path`` are not in ``run`` and were skipped,
    naming the first :data:`SKIPPED_EXAMPLES`; None when none were."""
    if not skipped:
        return None
    shown = ", ".join(repr(i) for i in skipped[:SKIPPED_EXAMPLES])
    more = ", ..." if len(skipped) > SKIPPED_EXAMPLES else ""
    return f"{path}: {len(skipped)} labelled item(s) not in run {run!r} skipped (e.g. {shown}{more})"


def _item_id(value: object, where: str, field: str) -> str:
    """A label's item id: a string, or an integer as a submissions file's (``3`` is ``"3"``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: field {field!r}: expected an item id (a string or integer), got {value!r}")
    return value


def _none_matched(path: Path, skipped: Sequence[str], rubrics: Mapping[str, Sequence[Criterion]]) -> InputError:
    shown = ", ".join(repr(i) for i in skipped[:SKIPPED_EXAMPLES])
    run_ids = ", ".join(repr(i) for i in list(rubrics)[:SKIPPED_EXAMPLES])
    return InputError(f"{path}: none of its {len(skipped)} labelled item(s) is an item of the run (file: {shown}"
                      f"{', ...' if len(skipped) > SKIPPED_EXAMPLES else ''}; run: {run_ids}"
                      f"{', ...' if len(rubrics) > SKIPPED_EXAMPLES else ''}): is it the labels of another run?")


def _check_entries(values: object, criteria: Sequence[Criterion], where: str) -> LabelList:
    if not isinstance(values, list):
        raise InputError(f"{where}: field 'ground_truth': expected a list, got {type(values).__name__}")
    if len(values) != len(criteria):
        raise InputError(f"{where}: field 'ground_truth': has {len(values)} value(s) but the item's rubric has "
                         f"{len(criteria)} criteria")
    return [None if value is None else
            parse_ground_truth_value(value, criterion, j, where=f"{where}: field 'ground_truth'[{j}]")
            for j, (value, criterion) in enumerate(zip(values, criteria, strict=True))]


class _Found:
    """The labels read so far, the ids skipped and where each id was first seen."""

    def __init__(self) -> None:
        self.labels: dict[str, LabelList] = {}
        self.skipped: list[str] = []
        self.first: dict[str, str] = {}

    def seen(self, item_id: str, where: str, place: str) -> None:
        """Note that ``item_id`` is labelled at ``place`` (``where`` names the file too)."""
        if item_id in self.first:
            raise InputError(f"{where}: item {item_id!r} is labelled twice in the file "
                             f"(first at {self.first[item_id]})")
        self.first[item_id] = place


def _read_jsonl(path: Path, text: str, rubrics: Mapping[str, Sequence[Criterion]]) -> _Found:
    found = _Found()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: invalid JSON: {e.msg}") from None
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected an object with 'id' and 'ground_truth'")
        for field in ("id", "ground_truth"):
            if field not in row:
                raise InputError(f"{where}: missing field {field!r}")
        item_id = _item_id(row["id"], where, "id")
        found.seen(item_id, where, f"line {number}")
        criteria = rubrics.get(item_id)
        if criteria is None:
            if not isinstance(row["ground_truth"], list):
                raise InputError(f"{where}: field 'ground_truth': expected a list, got "
                                 f"{type(row['ground_truth']).__name__}")
            found.skipped.append(item_id)
            continue
        found.labels[item_id] = _check_entries(row["ground_truth"], criteria, where)
    return found


def _choice(value: object, where: str) -> object:
    """The one choice of a Label Studio value (``"MET"``, ``{"choices": ["MET"]}`` or ``["MET"]``)."""
    if isinstance(value, dict):
        value = value.get("choices")
    if isinstance(value, list):
        if len(value) != 1:
            raise InputError(f"{where}: expected one choice, got {len(value)}")
        value = value[0]
    return value


def _criterion_index(name: object, criteria: Sequence[Criterion], where: str) -> int:
    text = str(name)
    if text.startswith(FROM_NAME_PREFIX) and text[len(FROM_NAME_PREFIX):].isdigit():
        index = int(text[len(FROM_NAME_PREFIX):])
        if index < len(criteria):
            return index
    raise InputError(f"{where}: unknown criterion {text!r} (this item's criteria are "
                     f"{FROM_NAME_PREFIX}0..{FROM_NAME_PREFIX}{len(criteria) - 1})")


def _task_labels(task: Mapping[str, Any], criteria: Sequence[Criterion], where: str) -> LabelList:
    """Labels of one Label Studio task, full JSON (``annotations``) or JSON-MIN (flat)."""
    choices: dict[int, object] = {}
    if "annotations" in task:
        given = task.get("annotations") or []
        if not isinstance(given, list) or not all(isinstance(a, dict) for a in given):
            raise InputError(f"{where}: field 'annotations': expected a list of objects")
        annotations = [a for a in given if not a.get("was_cancelled")]
        if not annotations:
            return [None] * len(criteria)
        latest = max(enumerate(annotations), key=lambda ka: (str(ka[1].get("updated_at") or ka[1].get("created_at") or ""),
                                                             ka[0]))[1]
        results = latest.get("result") or []
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise InputError(f"{where}: field 'result': expected a list of objects")
        for result in results:
            if result.get("type") != "choices":
                continue
            index = _criterion_index(result.get("from_name"), criteria, where)
            choices[index] = _choice(result.get("value"), f"{where}: {result.get('from_name')}")
    else:
        for key, value in task.items():
            if key.startswith(FROM_NAME_PREFIX) and key[len(FROM_NAME_PREFIX):].isdigit():
                index = _criterion_index(key, criteria, where)
                choices[index] = _choice(value, f"{where}: {key}")
    return [None if choices.get(j) is None else
            parse_ground_truth_value(choices[j], criterion, j, where=f"{where}: {FROM_NAME_PREFIX}{j}")
            for j, criterion in enumerate(criteria)]


def _read_label_studio(path: Path, tasks: object, rubrics: Mapping[str, Sequence[Criterion]]) -> _Found:
    if not isinstance(tasks, list):
        raise InputError(f"{path}: a Label Studio export is a JSON list of tasks")
    found = _Found()
    for number, task in enumerate(tasks, start=1):
        where = f"{path}: task {number}"
        if not isinstance(task, dict):
            raise InputError(f"{where}: expected an object")
        data = task.get("data") if isinstance(task.get("data"), dict) else task
        if "item_id" not in data:
            raise InputError(f"{where}: missing field 'item_id'")
        item_id = _item_id(data["item_id"], where, "item_id")
        found.seen(item_id, where, f"task {number}")
        criteria = rubrics.get(item_id)
        if criteria is None:
            found.skipped.append(item_id)
            continue
        found.labels[item_id] = _task_labels(task, criteria, where)
    return found


def read_labels(path: str | Path, rubrics: Mapping[str, Sequence[Criterion]]) -> FileLabels:
    """Read and check the labels in ``path`` against the run's items.

    Parameters
    ----------
    path : str or Path
        A JSONL labels file or a Label Studio JSON / JSON-MIN export (module docstring).
    rubrics : mapping of item id to its criteria (rubric order)
        The run's items.

    Returns
    -------
    FileLabels
        The labels of the run's items the file names, and the ids it labels that are no item
        of the run (skipped: module docstring).

    Raises
    ------
    InputError
        An unreadable file, any wrong label (the message names the file, line or task and
        field), or a file that labels items but none of the run's.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read the labels file: {e}") from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            tasks = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: invalid JSON at line {e.lineno}: {e.msg}") from None
        found = _read_label_studio(path, tasks, rubrics)
    else:
        found = _read_jsonl(path, text, rubrics)
    if found.skipped and not found.labels:
        raise _none_matched(path, found.skipped, rubrics)
    return FileLabels(found.labels, tuple(found.skipped))
