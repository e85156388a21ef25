"""Validation helpers for datasets and submission files: every problem names its place.

``ProblemCollector`` gathers problems as ``"<file>: <where>: <message>"`` lines and raises one
:class:`~autorubric_local.core.errors.InputError` listing them (at most 20), so a malformed file is
refused whole, before any work, with every bad item and field named.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autorubric_local.core.checks import (
    check_json_object,
    closest_field,
    read_input_text,
    unknown_field,
)
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionVerdict

_MAX_REPORTED = 20
_NO_RUBRIC = "the item has no rubric and the dataset has no global rubric"
_BINARY_VERDICTS = "'MET', 'UNMET' or 'CANNOT_ASSESS'"


# ---- Small helpers -------------------------------------------------------------------------------


def json_type_name(value: object) -> str:
    """Name a decoded JSON value's type as JSON does: ``object``, ``array``, ``string``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _check_optional_str(field_name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise InputError(
            f"field {field_name!r}: expected a string or null, got {json_type_name(value)}"
        )


def _criterion_label(criterion: Criterion, index: int) -> str:
    return criterion.name if criterion.name else f"C{index + 1}"


class ProblemCollector:
    """Collects located problems, then raises them together as one InputError."""

    def __init__(self, source: str | None) -> None:
        self._source = source
        self._lines: list[str] = []

    def add(self, where: str, message: str) -> None:
        self._lines.append(f"{where}: {message}" if where else message)

    def raise_if_any(self) -> None:
        if not self._lines:
            return
        prefix = f"{self._source}: " if self._source else ""
        shown = [prefix + line for line in self._lines[:_MAX_REPORTED]]
        hidden = len(self._lines) - len(shown)
        if hidden:
            shown.append(f"{prefix}... and {hidden} more problem(s)")
        raise InputError("\n".join(shown))


def parse_ground_truth(values: Sequence[object], rubric: Rubric) -> list[CriterionVerdict | str]:
    """Validate ground-truth values against a rubric and convert binary strings to verdicts.

    Parameters
    ----------
    values : sequence of CriterionVerdict or str, length ``len(rubric)``
        One value per criterion, in rubric order.
    rubric : Rubric
        The rubric the values label.

    Returns
    -------
    list of CriterionVerdict or str
        :class:`CriterionVerdict` for binary criteria, the option label (as written) for
        multi-choice criteria.

    Raises
    ------
    InputError
        Wrong length, a non-verdict for a binary criterion, or a label that is not an option;
        the message names ``field 'ground_truth'`` and the position.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InputError(
            f"field 'ground_truth': expected a list or null, got {json_type_name(values)}"
        )
    criteria = list(rubric.rubric)
    if len(values) != len(criteria):
        raise InputError(
            f"field 'ground_truth': has {len(values)} value(s) but the rubric has "
            f"{len(criteria)} criteria"
        )
    return [parse_ground_truth_value(value, criterion, j)
            for j, (value, criterion) in enumerate(zip(values, criteria, strict=True))]


def parse_ground_truth_value(value: object, criterion: Criterion, index: int,
                             where: str | None = None) -> CriterionVerdict | str:
    """Validate one ground-truth value for ``criterion`` (position ``index`` in its rubric).

    Returns a :class:`CriterionVerdict` for a binary criterion, the option label (as written)
    for a multi-choice one. ``where`` prefixes the message (default ``field
    'ground_truth'[index]``).

    Raises
    ------
    InputError
        A non-string, a non-verdict for a binary criterion, or a label that is not an option.
    """
    where = where if where is not None else f"field 'ground_truth'[{index}]"
    label = _criterion_label(criterion, index)
    text = value.value if isinstance(value, CriterionVerdict) else value
    if not isinstance(text, str):
        kind = "an option label" if criterion.is_multi_choice else f"one of {_BINARY_VERDICTS}"
        raise InputError(
            f"{where}: expected {kind} for criterion {label!r}, got {json_type_name(value)}"
        )
    if criterion.is_multi_choice:
        try:
            criterion.find_option_by_label(text)
        except ValueError:
            options = ", ".join(repr(o.label) for o in criterion.options or [])
            raise InputError(
                f"{where}: label {text!r} not an option of criterion {label!r} "
                f"(options: {options})"
            ) from None
        return text
    try:
        return CriterionVerdict(text)
    except ValueError:
        raise InputError(
            f"{where}: verdict {text!r} not valid for binary criterion {label!r} "
            f"(expected {_BINARY_VERDICTS})"
        ) from None


def _parse_rubric(raw: object) -> Rubric:
    """Build a Rubric from its JSON form; errors are prefixed with ``field 'rubric'``."""
    if not isinstance(raw, (list, dict)):
        raise InputError(
            f"field 'rubric': expected an array of criteria or an object, got {json_type_name(raw)}"
        )
    try:
        return Rubric.from_dict(raw)
    except ValueError as e:  # InputError and pydantic's ValidationError are ValueErrors
        raise InputError(f"field 'rubric': {e}") from None


def _located(source: str | None, message: str) -> str:
    return f"{source}: {message}" if source else message


def _duplicate_id(item_id: str, first_use: str) -> str:
    return f"field 'id': duplicate id {item_id!r} (first used by {first_use})"


def read_text_file(path: Path) -> str:
    """Read a UTF-8 text file (at most 64 MiB); failures become an InputError naming the path.

    See :func:`autorubric_local.core.checks.read_input_text`.
    """
    return read_input_text(path)


def require_field(raw: dict[Any, Any], name: str, allowed: Sequence[str]) -> None:
    """Refuse ``raw`` without ``name``; point at an unknown key that looks like a misspelling.

    Raises
    ------
    InputError
        "field 'submission': missing", followed, when some unknown key is close to the name,
        by "; unknown field 'submision' (did you mean 'submission'?)".
    """
    if name in raw:
        return
    message = f"field {name!r}: missing"
    misspelt = next((key for key in raw if key not in allowed and closest_field(key, [name])), None)
    if misspelt is not None:
        message += f"; {unknown_field(misspelt, [name])}"
    raise InputError(message)


def optional_metadata(value: object) -> dict[str, Any] | None:
    """``None``, or ``value`` checked to be a JSON-able mapping (the ``metadata`` field).

    Raises
    ------
    InputError
        "field 'metadata': ..." naming what is not JSON-able.
    """
    return None if value is None else check_json_object(value)
