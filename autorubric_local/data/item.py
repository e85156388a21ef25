"""One submission to grade (:class:`DataItem`) and its JSON form in a dataset file.

The format is AutoRubric's (see :mod:`.dataset`); ``id``, the per-item ``prompt`` and
``metadata`` are autorubric-local's additions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from autorubric_local.core.checks import check_keys
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import CriterionVerdict
from autorubric_local.data.validation import (
    _NO_RUBRIC,
    ProblemCollector,
    _check_optional_str,
    _duplicate_id,
    _parse_rubric,
    json_type_name,
    optional_metadata,
    parse_ground_truth,
    require_field,
)

__all__ = ["ITEM_FIELDS", "DataItem", "UnreadableItem", "item_to_dict", "rubric_to_json"]

ITEM_FIELDS: tuple[str, ...] = (
    "id", "submission", "description", "ground_truth", "rubric", "reference_submission", "prompt",
    "ground_truth_reasons", "metadata",
)
"""Keys allowed in an item object."""


@dataclass(frozen=True)
class DataItem:
    """One submission to grade, optionally with ground truth.

    Attributes
    ----------
    submission : str
        The text to grade (structured data, e.g. a dialogue, as a JSON-encoded string).
    description : str
        Short human note about the item (e.g. "Excellent - all criteria met"); not graded.
    ground_truth : list of CriterionVerdict or str, or None
        One value per criterion of the item's effective rubric (see the module docstring).
        Checked against ``rubric`` here when the item has its own rubric, otherwise when the
        item joins a :class:`RubricDataset`.
    rubric : Rubric or None
        Per-item rubric; replaces the dataset's rubric entirely for this item.
    reference_submission : str or None
        Exemplar answer shown to the judge as calibration; overrides the dataset's.
    prompt : str or None
        Per-item prompt (the ``query`` passed to grading); overrides the dataset's.
    ground_truth_reasons : list of (str or None), or None
        AutoRubric's written reasons for the ground truth, one per criterion, aligned with
        ``ground_truth`` (which must then be set); a None entry has no reason. A few-shot
        example drawn from the item shows its criterion's reason under
        ``FewShotConfig(include_reason=True)``. Never shown to a judge grading the item.
    id : str or None
        Caller's identifier for the item (autorubric-local extension); unique in a dataset.
    metadata : dict or None
        Free-form JSON-able data about the item (autorubric-local extension): source,
        annotator, extra columns. Kept and written back; never shown to the judge.

    An empty ``submission`` is valid and is graded like any other text.
    Items are immutable: derive variants with :func:`dataclasses.replace`.

    Raises
    ------
    InputError
        A field of the wrong type, ``metadata`` that is not a JSON-able mapping, or ground
        truth that does not fit the item's own rubric; the message names the field.
    """

    submission: str
    description: str = ""
    ground_truth: list[CriterionVerdict | str] | None = None
    rubric: Rubric | None = None
    reference_submission: str | None = None
    prompt: str | None = None
    ground_truth_reasons: list[str | None] | None = None
    id: str | None = None
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self._check_fields()
        self._check_reasons()

    def _check_reasons(self) -> None:
        reasons = self.ground_truth_reasons
        if reasons is None:
            return
        if isinstance(reasons, (str, bytes)) or not isinstance(reasons, Sequence):
            raise InputError(f"field 'ground_truth_reasons': expected a list or null, got {json_type_name(reasons)}")
        if self.ground_truth is None:
            raise InputError("field 'ground_truth_reasons': needs ground_truth, which is null")
        if len(reasons) != len(self.ground_truth):
            raise InputError(f"field 'ground_truth_reasons': {len(reasons)} values for {len(self.ground_truth)} "
                             "ground truth values (one reason, or null, per criterion)")
        for index, reason in enumerate(reasons):
            if reason is not None and not isinstance(reason, str):
                raise InputError(f"field 'ground_truth_reasons'[{index}]: expected a string or null, "
                                 f"got {json_type_name(reason)}")
        object.__setattr__(self, "ground_truth_reasons", list(reasons))

    def _check_fields(self) -> None:
        if not isinstance(self.submission, str):
            raise InputError(
                f"field 'submission': expected a string, got {json_type_name(self.submission)}"
            )
        if not isinstance(self.description, str):
            raise InputError(
                f"field 'description': expected a string, got {json_type_name(self.description)}"
            )
        for name in ("reference_submission", "prompt", "id"):
            _check_optional_str(name, getattr(self, name))
        if self.rubric is not None and not isinstance(self.rubric, Rubric):
            raise InputError(
                f"field 'rubric': expected a Rubric or None, got {type(self.rubric).__name__}"
            )
        object.__setattr__(self, "metadata", optional_metadata(self.metadata))
        if self.ground_truth is None:
            return
        if self.rubric is not None:
            parsed = parse_ground_truth(self.ground_truth, self.rubric)
            object.__setattr__(self, "ground_truth", parsed)
            return
        values = self.ground_truth
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise InputError(
                f"field 'ground_truth': expected a list or null, got {json_type_name(values)}"
            )
        # Values are checked against the effective rubric when the item joins a dataset.
        object.__setattr__(self, "ground_truth", list(values))


@dataclass(frozen=True)
class UnreadableItem(DataItem):
    """The place of a JSONL line that could not be read as an item: not UTF-8, not valid JSON
    or not valid Unicode (a lone surrogate), or longer than the line limit.

    It keeps the line's position, so the other items keep their indexes and ``item-<i>`` ids,
    and a run records ``error`` as this item's failure without calling a judge
    (:func:`~autorubric_local.data.submissions.load_grading_data` with ``keep_unreadable``).
    ``submission`` is empty and never graded.

    Attributes
    ----------
    error : str
        What was wrong, naming the file and line, e.g.
        ``"subs.jsonl: line 3: invalid JSON: text at ['submission'] is not valid Unicode ..."``.
    line : int
        The 1-based line number in the file.
    """

    error: str = ""
    line: int = 0


def rubric_to_json(rubric: Rubric) -> list[dict[str, Any]]:
    """A rubric as AutoRubric writes it inside a dataset: a list of criterion objects.

    Keys come in AutoRubric's order (``name``, ``weight``, ``requirement``, then for
    multi-choice ``scale_type``, ``options`` with ``label``/``value``/``na``), so a dataset
    file AutoRubric wrote is written back byte for byte; ``aggregation`` and ``metadata``
    follow when set.
    """
    criteria: list[dict[str, Any]] = []
    for criterion in rubric.rubric:
        data: dict[str, Any] = {
            "name": criterion.name,
            "weight": criterion.weight,
            "requirement": criterion.requirement,
        }
        if criterion.options is not None:
            data["scale_type"] = criterion.scale_type
            data["options"] = [
                {"label": option.label, "value": option.value, "na": option.na}
                for option in criterion.options
            ]
        if criterion.aggregation is not None:
            data["aggregation"] = criterion.aggregation
        if criterion.metadata is not None:
            data["metadata"] = criterion.metadata
        criteria.append(data)
    return criteria


def item_to_dict(item: DataItem) -> dict[str, Any]:
    """An item as its JSON object in a dataset file (``None`` extensions left out)."""
    data: dict[str, Any] = {}
    if item.id is not None:
        data["id"] = item.id
    data["submission"] = item.submission
    data["description"] = item.description
    if item.ground_truth is None:
        data["ground_truth"] = None
    else:
        data["ground_truth"] = [
            v.value if isinstance(v, CriterionVerdict) else v for v in item.ground_truth
        ]
    if item.rubric is not None:
        data["rubric"] = rubric_to_json(item.rubric)
    if item.reference_submission is not None:
        data["reference_submission"] = item.reference_submission
    if item.prompt is not None:
        data["prompt"] = item.prompt
    if item.ground_truth_reasons is not None:
        data["ground_truth_reasons"] = list(item.ground_truth_reasons)
    if item.metadata is not None:
        data["metadata"] = item.metadata
    return data


def _item_from_dict(raw: object) -> DataItem:
    """Build a DataItem from its JSON object; errors name the field but not the item."""
    if not isinstance(raw, dict):
        raise InputError(f"expected a JSON object, got {json_type_name(raw)}")
    require_field(raw, "submission", ITEM_FIELDS)
    check_keys(raw, ITEM_FIELDS)
    item_rubric = None if raw.get("rubric") is None else _parse_rubric(raw["rubric"])
    description = raw.get("description")
    return DataItem(
        submission=raw["submission"],
        description="" if description is None else description,
        ground_truth=raw.get("ground_truth"),
        rubric=item_rubric,
        reference_submission=raw.get("reference_submission"),
        prompt=raw.get("prompt"),
        ground_truth_reasons=raw.get("ground_truth_reasons"),
        id=raw.get("id"),
        metadata=raw.get("metadata"),
    )


def _checked_item(item: object, rubric: Rubric | None) -> DataItem:
    """Check an item against its effective rubric; return it with ground truth normalised."""
    if not isinstance(item, DataItem):
        raise InputError(f"expected a DataItem, got {type(item).__name__}")
    if isinstance(item, UnreadableItem):
        return item  # never graded: it needs no rubric
    effective = item.rubric if item.rubric is not None else rubric
    if effective is None:
        raise InputError(f"field 'rubric': {_NO_RUBRIC}")
    if item.ground_truth is None or item.rubric is not None:
        return item  # an item's own rubric already checked its ground truth
    # Always rebuild: "MET" == CriterionVerdict.MET, so comparing cannot tell if anything changed.
    return replace(item, ground_truth=parse_ground_truth(item.ground_truth, effective))


def _check_items(
    items: Sequence[object],
    rubric: Rubric | None,
    where: Sequence[str],
    problems: ProblemCollector,
) -> list[DataItem]:
    """Check every item (effective rubric, ground truth, unique ids), collecting problems."""
    checked: list[DataItem] = []
    first_use: dict[str, str] = {}
    for item, location in zip(items, where, strict=True):
        try:
            good = _checked_item(item, rubric)
        except InputError as e:
            problems.add(location, str(e))
            continue
        if good.id is not None:
            if good.id in first_use:
                problems.add(location, _duplicate_id(good.id, first_use[good.id]))
                continue
            first_use[good.id] = location
        checked.append(good)
    return checked
