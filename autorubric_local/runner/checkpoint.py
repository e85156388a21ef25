"""Checkpoint planning: validate a dataset, key and hash its items, and decide whether a stored
run may be resumed.

A run's content hash (``sha256:v1:<hex>``) is the SHA-256 of the canonical JSON (sorted keys,
no whitespace) of ``{"scheme", "items": [item hashes], "grader": grader description}``. An
item's hash covers what the judge sees and what its row is keyed by: its key, submission,
effective query, effective reference submission and effective rubric. Ground truth,
description and the dataset's name are left out on purpose: they never change a verdict, so
correcting a label does not block a resume (the stored labels are refreshed instead).

The grader description is ``grader.describe()`` (every setting that changes verdicts) plus the
scoring settings (CANNOT_ASSESS strategy, normalisation, length penalty), which change the stored
scores.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from autorubric_local.core.errors import InputError
from autorubric_local.core.penalty import ThinkingOutputDict, normalize_to_grade_input
from autorubric_local.core.text import storable, unicode_problem, utf8
from autorubric_local.data.dataset import (
    DataItem,
    RubricDataset,
    item_to_dict,
    rubric_to_json,
)
from autorubric_local.data.item import UnreadableItem
from autorubric_local.data.jsonl_items import JsonlItems
from autorubric_local.data.validation import ProblemCollector
from autorubric_local.graders.planning import GradeItem

HASH_SCHEME = "sha256:v1"


@dataclass(frozen=True)
class PlannedItem:
    """One dataset item, ready to grade and to store.

    Attributes
    ----------
    index : int
        Position in the dataset.
    key : str
        Row key: the item's id, or ``item-<index>``.
    item : DataItem
    grade_item : GradeItem
        What the grader judges (the output part of a thinking/output submission).
    graded_input : ThinkingOutputDict
        The parsed submission (for the length penalty).
    item_hash : str
        ``sha256:v1:<hex>`` of the item's judged content (module docstring).
    """

    index: int
    key: str
    item: DataItem
    grade_item: GradeItem
    graded_input: ThinkingOutputDict
    item_hash: str

    def row(self) -> dict[str, Any]:
        """The planned item row for :meth:`Store.plan_items <autorubric_local.store.Store.plan_items>`."""
        item_json = _item_json(self.item)
        return {
            "item_id": self.key,
            "item_index": self.index,
            "submission": storable(self.grade_item.submission),
            "query": storable(self.grade_item.query),
            "reference_submission": storable(self.grade_item.reference_submission),
            "item_json": json.dumps(item_json),
            "ground_truth_json": None if self.item.ground_truth is None else json.dumps(ground_truth_json(self.item)),
            "item_hash": self.item_hash,
        }


class PlannedRows(Sequence[dict[str, Any]]):
    """The :meth:`PlannedItem.row` of each planned item, made when read: a run's planned rows
    go to SQLite a batch at a time instead of all being built first (each holds the item's
    text twice)."""

    def __init__(self, planned: Sequence[PlannedItem]) -> None:
        self.planned = planned

    def __len__(self) -> int:
        return len(self.planned)

    def __getitem__(self, index: int) -> dict[str, Any]:  # type: ignore[override]
        return self.planned[index].row()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (entry.row() for entry in self.planned)


def canonical_hash(value: Any) -> str:
    """``sha256:v1:<hex>`` of the canonical JSON of ``value``."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{HASH_SCHEME}:{hashlib.sha256(utf8(text)).hexdigest()}"


def ground_truth_json(item: DataItem) -> list[str] | None:
    """The item's ground truth as JSON values (verdict names, option labels)."""
    return item_to_dict(item)["ground_truth"]


def _item_json(item: DataItem) -> dict[str, Any]:
    """The item as a dataset file holds it, without ground truth (stored in its own column)."""
    return {key: value for key, value in item_to_dict(item).items() if key != "ground_truth"}


class PlannedItems(Sequence[PlannedItem]):
    """A dataset's planned items.

    For a dataset whose items are read from a file when used
    (:class:`~autorubric_local.data.jsonl_items.JsonlItems`) each planned item is built again
    from its dataset item when read, and only its dataset index, key, item hash and judgment
    count are held (about 200 bytes an item): a run of 10^5 items keeps in memory only the
    items of the chunk it grades. For a dataset held in memory the planned items are kept as
    planned (``entries``), so an item replaced in the list afterwards cannot change them.
    Indexing gives a :class:`PlannedItem` (a slice, or :meth:`subset`, another ``PlannedItems``).

    Attributes
    ----------
    dataset : RubricDataset
    indexes : list of int
        Each planned item's index in ``dataset``.
    keys : list of str
        Each planned item's row key.
    item_hashes : list of str
        Each planned item's ``sha256:v1:<hex>`` hash.
    judgments : list of int or None
        Each planned item's number of judgments, when :func:`plan_dataset` was given a count.
    entries : list of PlannedItem or None
        The planned items themselves, for a dataset held in memory; None when they are built
        again when read.
    """

    def __init__(
        self,
        dataset: RubricDataset,
        indexes: list[int],
        keys: list[str],
        item_hashes: list[str],
        judgments: list[int] | None,
        entries: list[PlannedItem] | None = None,
    ) -> None:
        self.dataset = dataset
        self.indexes = indexes
        self.keys = keys
        self.item_hashes = item_hashes
        self.judgments = judgments
        self.entries = entries

    def __len__(self) -> int:
        return len(self.indexes)

    @overload
    def __getitem__(self, position: int) -> PlannedItem: ...

    @overload
    def __getitem__(self, position: slice) -> PlannedItems: ...

    def __getitem__(self, position: int | slice) -> PlannedItem | PlannedItems:
        if isinstance(position, slice):
            return self.subset(range(len(self))[position])
        position = range(len(self))[position]  # IndexError as a list gives it
        if self.entries is not None:
            return self.entries[position]
        index = self.indexes[position]
        entry = _plan_item(self.dataset, index, self.dataset.items[index], self.item_hashes[position])
        if entry.key != self.keys[position]:  # the file's digests make this our bug, never the data's
            raise AssertionError(f"item {index}: planned as {self.keys[position]!r}, read again as {entry.key!r}")
        return entry

    def __iter__(self) -> Iterator[PlannedItem]:
        return (self[position] for position in range(len(self)))

    def subset(self, positions: Sequence[int]) -> PlannedItems:
        """The planned items at ``positions``, in that order (lazy too)."""
        return PlannedItems(
            self.dataset,
            [self.indexes[p] for p in positions],
            [self.keys[p] for p in positions],
            [self.item_hashes[p] for p in positions],
            None if self.judgments is None else [self.judgments[p] for p in positions],
            None if self.entries is None else [self.entries[p] for p in positions],
        )


def plan_dataset(
    dataset: RubricDataset, judgment_count: Callable[[GradeItem], int] | None = None
) -> PlannedItems:
    """Check every item and plan it; refuse a malformed dataset before any work.

    Each item is planned once here, to check it and to compute its key, hash and (with
    ``judgment_count``, e.g. ``grader.judgment_count``) its number of judgments; when the
    dataset's items are read from a file when used it is then let go, and the returned
    :class:`PlannedItems` builds it again when read.

    Raises
    ------
    InputError
        One line per problem, naming the item index and field (no rubric, an empty rubric,
        a submission that is not a string, two items with the same key).
    """
    if not isinstance(dataset, RubricDataset):
        raise InputError(f"dataset: expected a RubricDataset, got {type(dataset).__name__}")
    problems = ProblemCollector(dataset.name and f"dataset {dataset.name!r}")
    indexes: list[int] = []
    keys: list[str] = []
    hashes: list[str] = []
    judgments: list[int] | None = None if judgment_count is None else []
    entries: list[PlannedItem] | None = None if isinstance(dataset.items, JsonlItems) else []
    first_use: dict[str, int] = {}
    for index, item in enumerate(dataset.items):
        try:
            entry = _plan_item(dataset, index, item)
        except InputError as exc:
            problems.add(f"item {index}", str(exc))
            continue
        if entry.key in first_use:
            problems.add(f"item {index}", f"field 'id': key {entry.key!r} already used by item {first_use[entry.key]}")
            continue
        first_use[entry.key] = index
        indexes.append(index)
        keys.append(entry.key)
        hashes.append(entry.item_hash)
        if judgments is not None and judgment_count is not None:
            judgments.append(judgment_count(entry.grade_item))
        if entries is not None:
            entries.append(entry)
    problems.raise_if_any()
    return PlannedItems(dataset, indexes, keys, hashes, judgments, entries)


def _plan_item(dataset: RubricDataset, index: int, item: object, item_hash: str | None = None) -> PlannedItem:
    """Plan one item; ``item_hash`` is its hash when already known (it is computed otherwise)."""
    if not isinstance(item, DataItem):
        raise InputError(f"expected a DataItem, got {type(item).__name__}")
    if not isinstance(item.submission, str):
        raise InputError(f"field 'submission': expected a string, got {type(item.submission).__name__}")
    rubric = item.rubric if item.rubric is not None else dataset.rubric
    unreadable = isinstance(item, UnreadableItem)
    if rubric is None and not unreadable:
        raise InputError("field 'rubric': the item has no rubric and the dataset has no global rubric")
    if rubric is not None and not rubric.rubric:
        raise InputError("field 'rubric': no criteria")
    key = item.id if item.id is not None else f"item-{index}"
    problem = unicode_problem(key)
    if problem is not None:  # the id keys the item's rows: it must be storable text
        raise InputError(f"field 'id': {problem}")
    graded_input = normalize_to_grade_input(item.submission)
    grade_item = GradeItem(
        submission=graded_input.get("output", ""),
        rubric=() if rubric is None else tuple(rubric.rubric),
        query=item.prompt if item.prompt is not None else dataset.prompt,  # get_item_query, without reading again
        reference_submission=(item.reference_submission if item.reference_submission is not None
                              else dataset.reference_submission),  # get_item_reference_submission
        item_id=key,
    )
    if item_hash is not None:
        return PlannedItem(index, key, item, grade_item, graded_input, item_hash)
    content = {
        "key": key,
        "submission": item.submission,
        "query": grade_item.query,
        "reference_submission": grade_item.reference_submission,
        "rubric": None if rubric is None else rubric_to_json(rubric),
    }
    if unreadable:  # what could not be read is part of the content: a fixed line is a changed item
        content["unreadable"] = item.error
    return PlannedItem(index, key, item, grade_item, graded_input, canonical_hash(content))


def content_hash(item_hashes: Sequence[str], description: Mapping[str, Any]) -> str:
    """The run's content hash (module docstring), from its planned items' hashes
    (:attr:`PlannedItems.item_hashes`)."""
    return canonical_hash(
        {"scheme": "autorubric-local/run", "items": list(item_hashes), "grader": dict(description)}
    )


# ---- resume -------------------------------------------------------------------------------------


def adopt_stored_seed(grader: Any, stored_description: Mapping[str, Any]) -> None:
    """Use the stored run's seed when the grader's own seed was generated, not given."""
    if getattr(grader, "seed_given", True) or "seed" not in stored_description:
        return
    grader.seed = stored_description["seed"]


def check_resumable(
    run: Mapping[str, Any],
    expected_hash: str,
    description: Mapping[str, Any],
    planned: Sequence[PlannedItem],
    stored_items: Sequence[Mapping[str, Any]],
    where: str,
) -> None:
    """Refuse to resume ``run`` when its content hash differs; say what changed.

    Raises
    ------
    InputError
        Names the changed grader settings and/or items, and how to start a new run instead.
    """
    if run.get("content_hash") == expected_hash:
        return
    reasons: list[str] = []
    if run.get("content_hash") is None:
        reasons.append("it was not recorded by the runner (no content hash)")
    else:
        reasons += _grader_changes(json.loads(run.get("grader_json") or "{}"), description)
        reasons += _item_changes(planned, stored_items)
    if not reasons:
        reasons.append("its content hash differs")
    raise InputError(
        f"{where}: run {run['name']!r} ({run['id']}) cannot be resumed: "
        + "; ".join(reasons)
        + ". Give a new run name (--run / experiment_name) or start a new run (--no-resume / resume=False)."
    )


def _grader_changes(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    changed = sorted(key for key in set(stored) | set(current) if stored.get(key) != current.get(key))
    if not changed:
        return []
    details = ", ".join(f"{key} ({_short(stored.get(key))} -> {_short(current.get(key))})" for key in changed[:5])
    return [f"grader settings changed: {details}"]


def _item_changes(planned: Sequence[PlannedItem], stored_items: Sequence[Mapping[str, Any]]) -> list[str]:
    reasons: list[str] = []
    if len(planned) != len(stored_items):
        reasons.append(f"the dataset has {len(planned)} items, the run has {len(stored_items)}")
    stored = {row["item_index"]: row for row in stored_items}
    for entry in planned:
        row = stored.get(entry.index)
        if row is not None and (row["item_id"] != entry.key or row.get("item_hash") != entry.item_hash):
            reasons.append(
                f"item {entry.index} ({entry.key!r}) changed (key, submission, rubric, prompt or reference)"
            )
            break
    return reasons


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
