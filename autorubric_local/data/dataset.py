"""Evaluation datasets: submissions with optional ground truth, tied to a prompt and a rubric.

:class:`DataItem` is one submission to grade; :class:`RubricDataset` is a list of them plus the
prompt, rubric and reference submission they share. Both follow AutoRubric's ``DataItem`` and
``RubricDataset`` (same fields, same JSON), with two additions on the item: an optional ``id``
and the per-item ``prompt`` (AutoRubric's name for the per-item query).

JSON format (AutoRubric's; a file written by AutoRubric loads unchanged)::

    {
      "name": "essay-eval",                      # optional
      "prompt": "Explain ...",                   # optional when every item has its own prompt
      "rubric": [{"name": ..., "weight": ..., "requirement": ...}, ...] | null,
      "reference_submission": "...",             # optional
      "items": [
        {"submission": "...", "description": "...", "ground_truth": ["MET", "4", ...] | null,
         "rubric": [...],                        # optional, replaces the global rubric
         "reference_submission": "...",          # optional, overrides the global one
         "prompt": "...",                        # optional, overrides the global prompt
         "id": "...",                            # optional, autorubric-local only; unique
         "metadata": {...}}                      # optional, autorubric-local only
      ],
      "metadata": {...}                          # optional, autorubric-local only
    }

``"rubric"`` must be present at the top level (``null`` when every item has its own rubric).
Unknown keys are refused, so a misspelt key is an error rather than silently ignored; the
message names the closest known field ("unknown field 'groundtruth' (did you mean
'ground_truth'?)"). Extra data belongs under ``metadata``: any JSON-able object, kept as is and
written back, never shown to the judge. An empty ``submission`` is graded like any other text.

A ``.json`` file is read a value at a time (:mod:`autorubric_local.data.json_file`): no limit on
its size, 64 MiB an item; its items are held once built, its text and parse tree are not. Text
that is not UTF-8 and JSON nested deeper than 64 levels (counted from the file's top level) are
refused, as are ``.jsonl`` files over 64 MiB (:mod:`autorubric_local.core.checks`).

JSONL format (autorubric-local only): the first non-blank line is a header object with the
top-level keys above except ``items``; every following non-blank line is one item object.
Lines are split on ``"\n"`` only, so strings may hold U+2028, U+0085 and the like.
:meth:`RubricDataset.from_file` and :meth:`RubricDataset.to_file` use it for ``.jsonl`` files.

Ground truth holds one value per criterion of the item's effective rubric, in rubric order:
a :class:`CriterionVerdict` (or its string ``"MET"``, ``"UNMET"``, ``"CANNOT_ASSESS"``) for a
binary criterion, an option label for a multi-choice one (matched as
:meth:`Criterion.find_option_by_label` does: case-insensitive, surrounding spaces ignored; the
label is kept as written). Binary strings are converted to :class:`CriterionVerdict`.

Every dataset is validated in full when it is built or loaded. Problems raise one
:class:`~autorubric_local.core.errors.InputError` with one line per problem, each naming the file
(when loaded from one), the item (0-based index, as ``dataset[i]``; JSONL adds the line number)
and the field, e.g. ``q1.json: item 12: field 'ground_truth'[3]: label 'Maybe' not an option
of criterion 'clarity' (options: 'Clear', 'Unclear')``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorubric_local.core.checks import jsonl_lines, parse_json, unknown_field
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import CannotAssessStrategy, CriterionVerdict
from autorubric_local.data.item import (
    DataItem,
    _check_items,
    _checked_item,
    _item_from_dict,
    item_to_dict,
    rubric_to_json,
)
from autorubric_local.data.json_file import JsonDataset, read_json_dataset
from autorubric_local.data.split import split_indices
from autorubric_local.data.validation import (
    _NO_RUBRIC,
    ProblemCollector,
    _check_optional_str,
    _duplicate_id,
    _located,
    _parse_rubric,
    json_type_name,
    optional_metadata,
    parse_ground_truth,
    read_text_file,
)

__all__ = [
    "DataItem",
    "ProblemCollector",
    "RubricDataset",
    "json_type_name",
    "parse_ground_truth",
    "read_text_file",
    "rubric_to_json",
]

_UNCHECKED = object()
"""``checked_against`` of an item sequence that checked nothing (see ``RubricDataset.__post_init__``)."""

DATASET_FIELDS: tuple[str, ...] = (
    "name", "prompt", "rubric", "reference_submission", "items", "metadata"
)
"""Keys allowed at the top level of a dataset JSON object."""

# ---- RubricDataset -------------------------------------------------------------------------------


@dataclass
class RubricDataset:
    """Items to grade, with the prompt, rubric and reference submission they share.

    Main methods (AutoRubric's ``RubricDataset``, README "Dataset Support"). Each raises
    :class:`~autorubric_local.core.errors.InputError` (a ``ValueError``) for bad input, with
    one line per problem naming the file, item (0-based) and field.

    - :meth:`from_file` (``.json`` or ``.jsonl``), :meth:`from_json`, :meth:`from_jsonl`,
      :meth:`from_dict`: load and validate in full. ``InputError``: missing file, not UTF-8,
      invalid or too deeply nested JSON (over 64 levels), an item over 64 MiB (a ``.jsonl``
      file over 64 MiB), unknown fields (with the closest known name), a missing top-level
      ``"rubric"``, ground truth that does not fit the item's rubric, duplicate item ids.
    - :meth:`to_file`, :meth:`to_json`, :meth:`to_jsonl`, :meth:`to_dict`: AutoRubric's
      format (``to_file`` picks JSONL for a ``.jsonl`` suffix; ``OSError`` when the file
      cannot be written).
    - :meth:`add_item`: validate and append one item. ``InputError``: no rubric for the
      item, ground truth that does not fit it, or a duplicate id.
    - ``len(dataset)``, ``dataset[i]`` (``IndexError`` out of range), iteration;
      :meth:`get_item_rubric` (``InputError`` when neither the item nor the dataset has a
      rubric), :meth:`get_item_prompt`, :meth:`get_item_reference_submission`: the item's
      own value, else the dataset's.
    - :meth:`split_train_test` / :meth:`train_test_indices`: a seeded, by default
      stratified split. ``InputError``: ``n_train`` not an integer with
      ``0 < n_train < len(dataset)``.
    - :meth:`compute_weighted_score`: score verdicts with a rubric
      (:meth:`Rubric.compute_score <autorubric_local.core.rubric.Rubric.compute_score>`).
      ``InputError``: no rubric, the wrong number of verdicts or an unknown label.
    - :meth:`with_items`: the same header with other items (validated again).

    Attributes
    ----------
    prompt : str or None, default None
        The question the submissions answer; ``None`` when items carry their own prompts (or
        are graded without one).
    rubric : Rubric or None, default None
        Global rubric; ``None`` only when every item has its own rubric.
    items : list of DataItem
        The items, validated on construction (see the module docstring). A ``.jsonl`` file
        loaded for grading gives a :class:`~autorubric_local.data.jsonl_items.JsonlItems`
        instead, a sequence that reads each item from the file when used.
    name : str or None
        Optional dataset name, e.g. ``"essay-grading-v1"``.
    reference_submission : str or None
        Global exemplar answer; an item's own reference takes precedence.
    metadata : dict or None
        Free-form JSON-able data about the dataset (autorubric-local extension).

    Raises
    ------
    InputError
        On construction: ``prompt``, ``name`` or ``reference_submission`` not a string or
        ``None``, ``metadata`` not a JSON-able dict, ``rubric`` not a :class:`Rubric`
        (each raised as found); or items that do not validate (not a ``DataItem``, no rubric,
        ground truth that does not fit, duplicate id), all of them in one error.

    Examples
    --------
    ::

        dataset = RubricDataset(prompt="Explain photosynthesis", rubric=rubric)  # 2 criteria
        dataset.add_item("Plants turn light into sugar.", ground_truth=["MET", "UNMET"])
        dataset.compute_weighted_score(dataset[0].ground_truth)
    """

    prompt: str | None = None
    rubric: Rubric | None = None
    items: list[DataItem] = field(default_factory=list)
    name: str | None = None
    reference_submission: str | None = None
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in ("prompt", "name", "reference_submission"):
            _check_optional_str(name, getattr(self, name))
        self.metadata = optional_metadata(self.metadata)
        if self.rubric is not None and not isinstance(self.rubric, Rubric):
            raise InputError(
                f"field 'rubric': expected a Rubric or None, got {type(self.rubric).__name__}"
            )
        if not isinstance(self.items, list) and getattr(self.items, "checked_against", _UNCHECKED) is self.rubric:
            # a sequence read when used (JsonlItems, a stored run's items) that checks each item
            # against this rubric as it reads it: not read whole here
            return
        problems = ProblemCollector(None)
        items = list(self.items)
        where = [f"item {i}" for i in range(len(items))]
        checked = _check_items(items, self.rubric, where, problems)
        problems.raise_if_any()
        self.items = checked

    # ---- items ----------------------------------------------------------------------------

    def add_item(
        self,
        submission: str,
        description: str = "",
        ground_truth: list[CriterionVerdict | str] | None = None,
        rubric: Rubric | None = None,
        reference_submission: str | None = None,
        prompt: str | None = None,
        id: str | None = None,
        metadata: dict[str, Any] | None = None,
        ground_truth_reasons: list[str | None] | None = None,
    ) -> DataItem:
        """Validate a new item against its effective rubric, append it and return it
        (``ground_truth_reasons``: AutoRubric's, see :class:`DataItem`).

        Raises
        ------
        InputError
            No rubric for the item, ground truth that does not fit it, or a duplicate id.
        """
        where = f"item {len(self.items)}"
        try:
            item = _checked_item(
                DataItem(
                    submission=submission,
                    description=description,
                    ground_truth=ground_truth,
                    rubric=rubric,
                    reference_submission=reference_submission,
                    prompt=prompt,
                    ground_truth_reasons=ground_truth_reasons,
                    id=id,
                    metadata=metadata,
                ),
                self.rubric,
            )
        except InputError as e:
            raise InputError(f"{where}: {e}") from None
        if not isinstance(self.items, list):
            self.items = list(self.items)  # items read from a file when used: held from now on
        if item.id is not None:
            for i, other in enumerate(self.items):
                if other.id == item.id:
                    raise InputError(f"{where}: {_duplicate_id(item.id, f'item {i}')}")
        self.items.append(item)
        return item

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[DataItem]:
        return iter(self.items)

    def __getitem__(self, idx: int) -> DataItem:
        return self.items[idx]

    def get_item_rubric(self, idx: int) -> Rubric:
        """The item's own rubric if it has one, else the global rubric.

        Raises
        ------
        InputError
            Neither exists (only possible if ``items`` was modified directly).
        """
        item = self.items[idx]
        if item.rubric is not None:
            return item.rubric
        if self.rubric is not None:
            return self.rubric
        raise InputError(f"item {idx}: field 'rubric': {_NO_RUBRIC}")

    def get_item_reference_submission(self, idx: int) -> str | None:
        """The item's reference submission if set, else the global one (possibly ``None``)."""
        item = self.items[idx]
        if item.reference_submission is not None:
            return item.reference_submission
        return self.reference_submission

    def get_item_prompt(self, idx: int) -> str | None:
        """The item's prompt if set, else the global prompt (possibly ``None``)."""
        item = self.items[idx]
        return item.prompt if item.prompt is not None else self.prompt

    def get_item_query(self, idx: int) -> str | None:
        """The query to grade item ``idx`` against: same as :meth:`get_item_prompt`."""
        return self.get_item_prompt(idx)

    # ---- splitting ------------------------------------------------------------------------

    def split_train_test(
        self, n_train: int, stratify: bool = True, seed: int | None = None
    ) -> tuple[RubricDataset, RubricDataset]:
        """Split into a training set of ``n_train`` items and a test set of the rest.

        Parameters
        ----------
        n_train : int, 0 < n_train < len(self)
        stratify : bool, default True
            Keep each ground-truth signature in the same proportion in both parts (largest
            remainder; :func:`autorubric_local.data.split.split_indices`).
        seed : int, optional
            Seed of the draw; the same seed gives the same split.

        Returns
        -------
        (RubricDataset, RubricDataset)
            Train and test, each keeping the items' original order and the dataset's prompt,
            rubric, name and reference submission. The original dataset is unchanged.

        Raises
        ------
        InputError
            ``n_train`` not an integer in range.
        """
        train_indices, test_indices = self.train_test_indices(n_train, stratify=stratify, seed=seed)
        return (self.with_items([self.items[i] for i in train_indices]),
                self.with_items([self.items[i] for i in test_indices]))

    def train_test_indices(
        self, n_train: int, stratify: bool = True, seed: int | None = None
    ) -> tuple[list[int], list[int]]:
        """The split of :meth:`split_train_test` as item positions: ``(train, test)``, each
        ascending, together ``range(len(self))``. Same arguments, same split, same errors."""
        signatures = [
            None if item.ground_truth is None
            else tuple(v.value if isinstance(v, CriterionVerdict) else v for v in item.ground_truth)
            for item in self.items
        ]
        chosen = set(split_indices(signatures, n_train, stratify=stratify, seed=seed))
        return sorted(chosen), [i for i in range(len(self.items)) if i not in chosen]

    def with_items(self, items: list[DataItem]) -> RubricDataset:
        """A new dataset with this one's header (name, prompt, rubric, reference, metadata) and
        ``items``."""
        return RubricDataset(
            prompt=self.prompt,
            rubric=self.rubric,
            items=items,
            name=self.name,
            reference_submission=self.reference_submission,
            metadata=self.metadata,
        )

    # ---- scoring --------------------------------------------------------------------------

    def compute_weighted_score(
        self,
        verdicts: list[CriterionVerdict | str],
        normalize: bool = True,
        cannot_assess_strategy: CannotAssessStrategy = CannotAssessStrategy.SKIP,
        partial_credit: float = 0.5,
        *,
        rubric: Rubric | None = None,
    ) -> float:
        """Score a list of verdicts/labels with ``rubric`` (default: the global rubric).

        Delegates to :meth:`Rubric.compute_score`; see it for the formula and the handling
        of CANNOT_ASSESS / NA under each strategy. For an item with its own rubric pass
        ``rubric=dataset.get_item_rubric(i)``.

        Raises
        ------
        InputError
            No rubric given and no global rubric.
        """
        effective = rubric if rubric is not None else self.rubric
        if effective is None:
            raise InputError(
                "cannot compute a score: no rubric given and the dataset has no global rubric"
            )
        return effective.compute_score(
            verdicts,
            normalize=normalize,
            cannot_assess_strategy=cannot_assess_strategy,
            partial_credit=partial_credit,
        )

    # ---- serialisation --------------------------------------------------------------------

    def _header_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.name is not None:
            data["name"] = self.name
        if self.prompt is not None:
            data["prompt"] = self.prompt
        data["rubric"] = None if self.rubric is None else rubric_to_json(self.rubric)
        if self.reference_submission is not None:
            data["reference_submission"] = self.reference_submission
        if self.metadata is not None:
            data["metadata"] = self.metadata
        return data

    def to_dict(self) -> dict[str, Any]:
        """The dataset as a JSON-ready dict in AutoRubric's format (plus item ids when set)."""
        data = self._header_dict()
        data["items"] = [item_to_dict(item) for item in self.items]
        return data

    def to_json(self, indent: int | None = 2) -> str:
        """Serialise to a JSON string (AutoRubric's format)."""
        return json.dumps(self.to_dict(), indent=indent)

    def to_jsonl(self) -> str:
        """Serialise to JSONL: a header line, then one line per item; ends with a newline."""
        lines = [json.dumps(self._header_dict())]
        lines += [json.dumps(item_to_dict(item)) for item in self.items]
        return "\n".join(lines) + "\n"

    def to_file(self, path: str | Path) -> None:
        """Write to ``path``: JSONL if it ends in ``.jsonl``, else indented JSON."""
        path = Path(path)
        # JSON without a final newline, as AutoRubric writes it, so its files round-trip exactly.
        text = self.to_jsonl() if path.suffix.lower() == ".jsonl" else self.to_json()
        path.write_text(text, encoding="utf-8")

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        source: str | None = None,
        rubric: Rubric | None = None,
    ) -> RubricDataset:
        """Build and validate a dataset from its decoded JSON object.

        Parameters
        ----------
        data : mapping
            The top-level object (see the module docstring).
        source : str, optional
            File name to put at the start of error messages.
        rubric : Rubric, optional
            Replaces the data's global rubric (items with their own rubric keep theirs). The
            data's own rubric is still validated.
        """
        if not isinstance(data, Mapping):
            kind = json_type_name(data)
            raise InputError(
                _located(source, f"expected a JSON object with 'rubric' and 'items', got {kind}")
            )
        raw_items = data.get("items", [])
        if not isinstance(raw_items, list):
            kind = json_type_name(raw_items)
            raise InputError(_located(source, f"field 'items': expected an array, got {kind}"))
        header = {key: value for key, value in data.items() if key != "items"}
        where = [f"item {i}" for i in range(len(raw_items))]
        return cls._build(header, raw_items, where, source, rubric, allowed=DATASET_FIELDS)

    @classmethod
    def from_json(
        cls, json_string: str, *, source: str | None = None, rubric: Rubric | None = None
    ) -> RubricDataset:
        """Parse a JSON string (AutoRubric's format); see :meth:`from_dict` for the options.

        Raises
        ------
        InputError
            Invalid JSON (or nested deeper than 64 levels), or any problem :meth:`from_dict`
            finds.
        """
        try:
            data = parse_json(json_string)
        except InputError as e:
            raise InputError(_located(source, f"invalid JSON: {e}")) from None
        return cls.from_dict(data, source=source, rubric=rubric)

    @classmethod
    def from_jsonl(
        cls, text: str, *, source: str | None = None, rubric: Rubric | None = None
    ) -> RubricDataset:
        """Parse JSONL: a header object line, then one item per line; blank lines are skipped.

        Lines are split on ``"\n"`` only (JSON strings may hold U+2028 and the like).

        Raises
        ------
        InputError
            A line that is not JSON (or is nested too deep), no header, or any problem
            :meth:`from_dict` finds; each names the line.
        """
        rows: list[tuple[str, Any]] = []
        for number, line in jsonl_lines(text):
            try:
                value = parse_json(line)
            except InputError as e:
                raise InputError(_located(source, f"line {number}: invalid JSON: {e}")) from None
            where = f"line {number}" if not rows else f"line {number} (item {len(rows) - 1})"
            rows.append((where, value))
        return cls.from_jsonl_rows(rows, source=source, rubric=rubric)

    @classmethod
    def from_jsonl_rows(
        cls, rows: Sequence[tuple[str, Any]], *, source: str | None = None, rubric: Rubric | None = None
    ) -> RubricDataset:
        """Build a dataset from the parsed lines of its JSONL form: ``rows`` pairs each line's
        location for messages (e.g. ``"line 4 (item 2)"``) with its JSON value, header first.

        Raises
        ------
        InputError
            No header, or any problem :meth:`from_dict` finds; each names the row's location.
        """
        if not rows:
            raise InputError(_located(source, "empty file: expected a header line with 'rubric'"))
        header_where, header = rows[0]
        if not isinstance(header, dict):
            kind = json_type_name(header)
            raise InputError(_located(source, f"{header_where}: expected a header object, got {kind}"))
        return cls._build(
            header,
            [row for _, row in rows[1:]],
            [where for where, _ in rows[1:]],
            source,
            rubric,
            allowed=tuple(key for key in DATASET_FIELDS if key != "items"),
            header_where=header_where,
        )

    @classmethod
    def from_file(cls, path: str | Path, *, rubric: Rubric | None = None) -> RubricDataset:
        """Load a ``.json`` (AutoRubric's format) or ``.jsonl`` dataset file.

        A ``.json`` file is read a value at a time, with no size limit
        (:func:`~autorubric_local.data.json_file.read_json_dataset`).

        Raises
        ------
        InputError
            Every problem, starting with the path: missing, a directory, not UTF-8, invalid or
            too deeply nested JSON, an item over 64 MiB (a ``.jsonl`` file over 64 MiB), unknown
            or invalid fields.
        """
        path = Path(path)
        if path.suffix.lower() == ".jsonl":
            return cls.from_jsonl(read_text_file(path), source=str(path), rubric=rubric)
        return cls.from_json_dataset(read_json_dataset(path), source=str(path), rubric=rubric)

    @classmethod
    def from_json_dataset(cls, data: JsonDataset, *, source: str, rubric: Rubric | None = None) -> RubricDataset:
        """:meth:`from_dict` for a file read a value at a time: same checks, same messages."""
        if data.top != "object":
            raise InputError(_located(source, f"expected a JSON object with 'rubric' and 'items', got {data.top}"))
        if "items" in data.header:
            kind = json_type_name(data.header["items"])
            raise InputError(_located(source, f"field 'items': expected an array, got {kind}"))
        items = data.items or []
        return cls._build(data.header, items, [f"item {i}" for i in range(len(items))], source, rubric,
                          allowed=DATASET_FIELDS, built=True)

    @classmethod
    def _build(
        cls,
        header: Mapping[str, Any],
        raw_items: Sequence[object],
        where: Sequence[str],
        source: str | None,
        rubric_override: Rubric | None,
        *,
        allowed: tuple[str, ...],
        header_where: str = "",
        built: bool = False,
    ) -> RubricDataset:
        """Validate header and items together, then construct; all problems raised at once.
        With ``built``, ``raw_items`` are already built (a DataItem, or the InputError of one)."""
        problems = ProblemCollector(source)
        for key in header:
            if key not in allowed:
                problems.add(header_where, unknown_field(key, allowed))
        if "rubric" not in header and rubric_override is None:
            problems.add(
                header_where,
                "field 'rubric': missing (use null when every item carries its own rubric)",
            )
        for key in ("name", "prompt", "reference_submission"):
            try:
                _check_optional_str(key, header.get(key))
            except InputError as e:
                problems.add(header_where, str(e))
        try:
            optional_metadata(header.get("metadata"))
        except InputError as e:
            problems.add(header_where, str(e))
        own_rubric: Rubric | None = None
        if header.get("rubric") is not None:
            try:
                own_rubric = _parse_rubric(header["rubric"])
            except InputError as e:
                problems.add(header_where, str(e))
        problems.raise_if_any()  # items cannot be checked without a sound header
        global_rubric = rubric_override if rubric_override is not None else own_rubric

        items: list[DataItem] = []
        item_where: list[str] = []
        for raw, location in zip(raw_items, where, strict=True):
            try:
                if isinstance(raw, InputError) and built:
                    raise raw
                items.append(raw if built else _item_from_dict(raw))
                item_where.append(location)
            except InputError as e:
                problems.add(location, str(e))
        checked = _check_items(items, global_rubric, item_where, problems)
        problems.raise_if_any()
        return cls(
            prompt=header.get("prompt"),
            rubric=global_rubric,
            items=checked,
            name=header.get("name"),
            reference_submission=header.get("reference_submission"),
            metadata=header.get("metadata"),
        )
