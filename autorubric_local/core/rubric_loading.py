"""Rubric data to criteria: the accepted shapes, strict field checks, and text parsing.

:class:`~autorubric_local.core.rubric.Rubric`'s loaders delegate here. The shapes and the
messages ("Invalid rubric format. ...", "No criteria found", "Invalid criterion at
index i:") follow AutoRubric's API reference ("Core Grading", ``Rubric``). Extensions,
all raised as :class:`~autorubric_local.core.errors.InputError`:

- unknown keys at the top, in a section or in a criterion or option are refused, naming the
  closest known field ("unknown field 'weigth' (did you mean 'weight'?)");
- the criterion's name is given beside its index: "Invalid criterion at index 3 ('clarity'):";
- more than :data:`~autorubric_local.core.checks.MAX_CRITERIA` criteria are refused before
  any criterion is built (and, for YAML, before the file is loaded);
- text nested deeper than :data:`~autorubric_local.core.checks.MAX_DEPTH` is refused.

Field rules (finite weights, known aggregation strategies, non-empty labels, real booleans)
live on :class:`~autorubric_local.core.types.Criterion` and
:class:`~autorubric_local.core.types.CriterionOption`, so the API and the loaders agree.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from autorubric_local.core import checks
from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionOption

__all__ = ["criteria_from_data", "parse_rubric_text"]

_TOP_KEYS = ("rubric", "sections")
_SECTION_KEYS = ("name", "criteria")
_CRITERION_FIELDS = tuple(Criterion.model_fields)
_OPTION_FIELDS = tuple(CriterionOption.model_fields)
_MAX_LINES = 20


def parse_rubric_text(text: str, extension: str, what: str) -> Any:
    """Parse rubric text as JSON (``extension == ".json"``) or YAML.

    ``what`` completes AutoRubric's message: "Failed to parse YAML <what>: ...".

    Raises
    ------
    InputError
        A syntax error, nesting deeper than the limit, or (YAML) more criteria than the
        limit, found while reading the event stream.
    """
    if extension == ".json":
        try:
            return checks.parse_json(text)
        except InputError as e:
            raise InputError(f"Failed to parse JSON {what}: {e}") from None
    # Mappings in lists are criteria or sections; twice the limit leaves room for sections,
    # and the exact count is checked before any criterion is built.
    guard = (2 * checks.MAX_CRITERIA, _too_many("more than " + str(checks.MAX_CRITERIA)))
    try:
        return checks.parse_yaml(text, list_entries=guard)
    except InputError as e:
        if str(e) == guard[1]:
            raise
        raise InputError(f"Failed to parse YAML {what}: {e}") from None


def _too_many(count: str) -> str:
    return f"too many criteria: {count} (the limit is {checks.MAX_CRITERIA})"


def _raise_missing_key(data: dict[Any, Any], expected: tuple[str, ...]) -> None:
    """AutoRubric's message for a dict without 'sections'/'rubric', plus the closest key when one
    of ``data``'s keys looks like a misspelling of an ``expected`` one."""
    message = "Invalid rubric format. Dict must contain either 'sections' or 'rubric' key"
    misspelt = next((key for key in data if checks.closest_field(key, expected)), None)
    if misspelt is not None:
        message += f"; {checks.unknown_field(misspelt, expected)}"
    raise InputError(message)


def _unwrap(data: Any) -> Any:
    """The list of sections/criteria inside the accepted dict shapes."""
    if not isinstance(data, dict):
        return data
    if "rubric" not in data and "sections" not in data:
        _raise_missing_key(data, _TOP_KEYS)
    checks.check_keys(data, _TOP_KEYS, "Invalid rubric format.")
    if "rubric" in data and "sections" in data:
        raise InputError("Invalid rubric format. Give either 'rubric' or 'sections', not both")
    if "rubric" in data:
        data = data["rubric"]
        if not isinstance(data, dict):
            return data
        if "sections" not in data:
            _raise_missing_key(data, ("sections",))
        checks.check_keys(data, ("sections",), "Invalid rubric format.")
    sections = data["sections"]
    if not isinstance(sections, list):
        raise InputError(
            "Invalid rubric format. Expected 'sections' to be a list, "
            f"got {type(sections).__name__}"
        )
    return sections


def _flatten(data: list[Any]) -> list[tuple[Any, bool]]:
    """``(criterion data, at top level)`` of every criterion, sections flattened in order."""
    flat: list[tuple[Any, bool]] = []
    for idx, item in enumerate(data):
        if not isinstance(item, dict):
            raise InputError(
                f"Invalid item at index {idx}: expected a dictionary, got {type(item).__name__}"
            )
        if "criteria" not in item:
            flat.append((item, True))
            continue
        checks.check_keys(item, _SECTION_KEYS, f"Invalid section at index {idx}:")
        section = item["criteria"]
        if not isinstance(section, list):
            raise InputError(
                f"Invalid section at index {idx}: 'criteria' must be a list, "
                f"got {type(section).__name__}"
            )
        flat.extend((entry, False) for entry in section)
        if len(flat) > checks.MAX_CRITERIA:
            break
    return flat


def _error_line(error: Any, top_level: bool) -> str:
    """One "field: message" line of a criterion's validation error; unknown fields get the
    closest known name."""
    loc = [str(part) for part in error["loc"]]
    if error["type"] != "extra_forbidden":
        return f"{'.'.join(loc)}: {error['msg']}"
    *parent, key = error["loc"]
    if parent:
        allowed = _OPTION_FIELDS
    else:
        allowed = (*_CRITERION_FIELDS, "criteria") if top_level else _CRITERION_FIELDS
    message = checks.unknown_field(key, allowed)
    return f"{'.'.join(str(part) for part in parent)}: {message}" if parent else message


def criteria_from_data(data: Any) -> list[Criterion]:
    """Build criteria from parsed rubric data (shapes in ``Rubric.validate_and_create_criteria``).

    Raises
    ------
    InputError
        A format error (AutoRubric's messages, plus unknown keys and the criteria limit), or
        "Invalid criterion at index i ('name'):" and one "field: message" line per problem.
    """
    data = _unwrap(data)
    if not isinstance(data, list):
        raise InputError(f"Invalid rubric format. Expected a list, got {type(data).__name__}")
    if not data:
        raise InputError("No criteria found")
    if len(data) > checks.MAX_CRITERIA:
        raise InputError(_too_many(str(len(data))))
    flat = _flatten(data)
    if len(flat) > checks.MAX_CRITERIA:
        raise InputError(_too_many("more than " + str(checks.MAX_CRITERIA)))
    if not flat:
        raise InputError("No criteria found")

    criteria: list[Criterion] = []
    for idx, (entry, top_level) in enumerate(flat):
        if not isinstance(entry, dict):
            raise InputError(
                f"Invalid criterion at index {idx}: expected a dictionary, "
                f"got {type(entry).__name__}"
            )
        name = entry.get("name")
        label = f" ({checks.short_repr(name)})" if isinstance(name, str) and name else ""
        quoted = _quoted_numbers(entry)
        if quoted:
            raise InputError(f"Invalid criterion at index {idx}{label}:\n  " + "\n  ".join(quoted))
        try:
            criteria.append(Criterion.model_validate(entry))
        except ValidationError as exc:
            errors = exc.errors()
            details = [_error_line(error, top_level) for error in errors[:_MAX_LINES]]
            if len(errors) > _MAX_LINES:
                details.append(f"... and {len(errors) - _MAX_LINES} more problem(s)")
            raise InputError(
                f"Invalid criterion at index {idx}{label}:\n  " + "\n  ".join(details)
            ) from exc
    _refuse_duplicate_names(criteria)
    return criteria


def _quoted_numbers(entry: dict[Any, Any]) -> list[str]:
    """A line per number written as a string (``"10"``, ``" 10 "``, ``"1_000"``): a rubric file is
    strict, so a weight or option value must be a number, not text that happens to parse as one."""
    found = []
    places = [("weight", entry.get("weight"))]
    options = entry.get("options")
    if isinstance(options, list):
        places += [(f"options.{k}.value", o.get("value")) for k, o in enumerate(options) if isinstance(o, dict)]
    for where, value in places:
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                continue  # not a number at all: pydantic's own message says so
            found.append(f"{where}: expected a number, got the string {checks.short_repr(value)}; "
                         "write the number without quotes")
    return found


def _refuse_duplicate_names(criteria: list[Criterion]) -> None:
    """Two criteria of one rubric may not share a name: exports, ``--target`` and labels find a
    criterion by its name, and a second one of the same name would shadow the first."""
    seen: dict[str, int] = {}
    for idx, criterion in enumerate(criteria):
        if criterion.name is None:
            continue
        if criterion.name in seen:
            raise InputError(f"Invalid criterion at index {idx} ({checks.short_repr(criterion.name)}): the criterion "
                             f"at index {seen[criterion.name]} has the same name; names must be unique within a "
                             "rubric (exports, --target and labels find a criterion by its name)")
        seen[criterion.name] = idx
