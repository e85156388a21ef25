"""The human labels a report compares the judge with: which source, and reading them.

A run's labels are either the dataset's own ground truth (stored with each item, source
``dataset``) or human labels imported by ``estimate --labels`` / ``metrics --labels`` (the
``labels`` table, one source per labels file: its resolved path). :func:`choose_labels` picks
one source as ``metrics`` does, plus the stored labels ``metrics`` reads only when told:

1. the source asked for (``report --label-source SRC``; ``dataset`` names the dataset's own);
2. else the dataset's ground truth, when any item has it (``metrics`` without ``--labels``);
3. else the run's stored labels: its one source, or the latest imported of several (the report
   names it and the others, so the choice is never silent).

:func:`page_labels` reads the chosen labels of one page of items, and :func:`relabelled` gives
the run's streamed dataset with that source as its ground truth, so the agreement figures come
from :func:`~autorubric_local.metrics.compute_metrics` whatever the source. As ``metrics
--labels`` does, an item counts there only when every criterion of it is labelled (the metrics
compare whole items); partly labelled items are counted apart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, overload

from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.data.item import DataItem
from autorubric_local.estimates.api import DATASET_SOURCE
from autorubric_local.store import Store

__all__ = ["DATASET_SOURCE", "LabelChoice", "choose_labels", "page_labels", "relabelled"]

_BATCH = 500
"""Item ids bound in one query (SQLite's limit on bound parameters)."""


@dataclass(frozen=True)
class LabelChoice:
    """The label source a report uses.

    Attributes
    ----------
    source : str
        :data:`DATASET_SOURCE` or a stored source (a labels file's resolved path).
    others : tuple of str
        The run's other label sources, in the order :func:`choose_labels` lists them.
    how : {"given", "dataset", "only", "latest"}
        Why this source: asked for, the dataset's ground truth, the run's only stored source, or
        the latest imported of several.
    """

    source: str
    others: tuple[str, ...] = ()
    how: Literal["given", "dataset", "only", "latest"] = "given"

    def describe(self) -> str:
        """The source in words, for the page (which source, why, and the others)."""
        text = ("the dataset's ground truth" if self.source == DATASET_SOURCE
                else f"human labels imported from {self.source}")
        if self.how == "latest":
            text += " (the latest imported of this run's label sources)"
        if self.others:
            text += f"; other sources: {', '.join(self.others)} (choose one with --label-source)"
        return text


def choose_labels(store: Store, row: Mapping[str, Any], label_source: str | None = None) -> LabelChoice | None:
    """The label source of run ``row`` (a ``runs`` row) the report compares with (module
    docstring); None when the run has no labels and none was asked for.

    ``label_source`` is matched as given, then as a path resolved from the current folder.

    Raises
    ------
    InputError
        ``label_source`` is not one of the run's sources (the message lists them).
    """
    has_dataset = store.db.execute(
        "select 1 from items where run_id = ? and ground_truth_json is not null limit 1", [row["id"]]
    ).fetchone() is not None
    stored = [s for s in store.label_sources(row["id"]) if s != DATASET_SOURCE]
    available = [DATASET_SOURCE] * has_dataset + stored
    if label_source is not None:
        if label_source not in available and str(Path(label_source).resolve()) in stored:
            label_source = str(Path(label_source).resolve())
        if label_source not in available:
            raise InputError(f"run {row['name']!r} has no labels from {label_source!r} "
                             f"(sources: {', '.join(available) or 'none'})")
        return LabelChoice(label_source, tuple(s for s in available if s != label_source), "given")
    if has_dataset:
        return LabelChoice(DATASET_SOURCE, tuple(stored), "dataset")
    if stored:
        return LabelChoice(stored[-1], tuple(stored[:-1]), "only" if len(stored) == 1 else "latest")
    return None


def page_labels(store: Store, row: Mapping[str, Any], source: str,
                items: Sequence[Mapping[str, Any]]) -> dict[str, list[str | None]]:
    """``{item_id: [label or None per criterion index]}`` of ``source`` for ``items`` (``items``
    rows of one page; an item without a label is left out). Labels are text: ``MET``,
    ``UNMET``, ``CANNOT_ASSESS`` or an option label."""
    if source == DATASET_SOURCE:
        out = {}
        for item in items:
            truth = json.loads(item["ground_truth_json"]) if item.get("ground_truth_json") else None
            if truth is not None:
                out[item["item_id"]] = [None if value is None else str(value) for value in truth]
        return out
    found: dict[str, dict[int, str]] = {}
    ids = [item["item_id"] for item in items]
    for start in range(0, len(ids), _BATCH):
        batch = ids[start:start + _BATCH]
        for item_id, index, label in store.db.execute(
                f"select item_id, criterion_index, label from labels where run_id = ? and source = ? "
                f"and item_id in ({', '.join('?' * len(batch))})", [row["id"], source, *batch]):
            found.setdefault(item_id, {})[int(index)] = label
    return {item_id: [given.get(k) for k in range(max(given) + 1)] for item_id, given in found.items()}


def relabelled(store: Store, row: Mapping[str, Any], source: str, dataset: RubricDataset) -> RubricDataset:
    """``dataset`` (the run's, as :func:`~autorubric_local.runner.results.graded_run` gives it)
    with the ground truth of ``source``: itself for :data:`DATASET_SOURCE`; else a dataset whose
    items (:class:`LabelledItems`) carry the stored labels of every item labelled on every
    criterion, and no ground truth otherwise."""
    if source == DATASET_SOURCE:
        return dataset
    items = dataset.items
    position_of = getattr(items, "position_of", None)
    labels: dict[int, dict[int, str]] = {}
    for item_index, index, label in store.db.execute(
            "select i.item_index, l.criterion_index, l.label from labels l join items i "
            "on i.run_id = l.run_id and i.item_id = l.item_id where l.run_id = ? and l.source = ?",
            [row["id"], source]):
        position = position_of(item_index) if position_of is not None else int(item_index)
        labels.setdefault(position, {})[int(index)] = label
    return RubricDataset(prompt=dataset.prompt, rubric=dataset.rubric,
                         items=LabelledItems(items, labels, dataset.rubric),  # type: ignore[arg-type]
                         name=dataset.name, reference_submission=dataset.reference_submission,
                         metadata=dataset.metadata)


@dataclass
class LabelledItems(Sequence[DataItem]):
    """The items of a dataset with the ground truth of a stored label source, read when used.

    ``labels`` maps an item's position to ``{criterion index: label}``. An item labelled on every
    criterion of its rubric gets those labels as its ground truth; any other item none, and one
    labelled on some criteria only is counted in ``partial`` (its position) when read.
    ``checked_against`` is that of ``items``, so a :class:`RubricDataset` of them does not read
    them whole.
    """

    items: Sequence[DataItem]
    labels: Mapping[int, Mapping[int, str]]
    rubric: Rubric | None
    partial: set[int] = field(default_factory=set)

    @property
    def checked_against(self) -> Any:
        return getattr(self.items, "checked_against", None)

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> DataItem: ...

    @overload
    def __getitem__(self, index: slice) -> list[DataItem]: ...

    def __getitem__(self, index: int | slice) -> DataItem | list[DataItem]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        position = range(len(self))[index]  # IndexError as a list gives it
        item = self.items[position]
        given = self.labels.get(position)
        if not given:
            return replace(item, ground_truth=None)
        rubric = item.rubric or self.rubric
        values = [given.get(k) for k in range(len(rubric) if rubric is not None else 0)]
        if values and all(v is not None for v in values):
            return replace(item, ground_truth=values)
        self.partial.add(position)
        return replace(item, ground_truth=None)

    def __iter__(self) -> Iterator[DataItem]:
        return (self[position] for position in range(len(self)))

    def complete(self) -> int:
        """How many labelled items carry ground truth (reads the labelled items once; fills
        ``partial``)."""
        return sum(self[position].ground_truth is not None for position in sorted(self.labels))
