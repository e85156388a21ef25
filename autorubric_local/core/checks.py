"""Input limits and the checks every loader shares: reading, parsing, nesting, field names.

Rubric files, dataset files, submissions files and judge-panel files all go through these
helpers, so they refuse the same things the same way, before any model is loaded:

- a file that is missing, a directory, larger than :data:`MAX_FILE_BYTES` or not UTF-8
  (:func:`read_input_text`; the message names the file and, for bad UTF-8, the byte offset);
  a JSONL file is instead read line by line (:func:`read_jsonl_lines`), with no size limit for
  the file and :data:`MAX_LINE_BYTES` for each line, and a line that is too long or not UTF-8
  is reported as that line's problem, not the file's; a ``.json`` dataset or submissions file
  is read a value at a time by :mod:`autorubric_local.core.json_stream`, with the same checks;
- JSON or YAML nested deeper than :data:`MAX_DEPTH` levels (:func:`parse_json`,
  :func:`parse_yaml`; depth is measured without recursion, and a parser's own
  ``RecursionError`` or nesting limit gives the same message), and YAML whose aliases expand
  beyond :data:`MAX_YAML_VALUES` values or form a cycle;
- a misspelt field (:func:`unknown_field`, which suggests the closest known name);
- a number that is not finite or lies outside a range (:func:`check_number`), and metadata
  that is not JSON-able (:func:`check_json_object`).

Errors are :class:`~autorubric_local.core.errors.InputError`; callers add the file, item or
criterion in front of the message.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import yaml

from autorubric_local.core.errors import InputError

__all__ = [
    "MAX_CRITERIA",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_WEIGHT",
    "MAX_YAML_VALUES",
    "check_json_object",
    "check_keys",
    "check_nesting",
    "check_number",
    "closest_field",
    "decode_utf8",
    "jsonl_lines",
    "parse_json",
    "parse_yaml",
    "read_input_text",
    "JsonlLine",
    "read_jsonl_lines",
    "read_jsonl_spans",
    "short_repr",
    "unknown_field",
]

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest input file read whole (64 MiB): rubrics, panels, datasets of another suffix than
``.json``/``.jsonl``; JSONL files are read line by line, ``.json`` datasets a value at a time
(:mod:`autorubric_local.core.json_stream`, 64 MiB a value)."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest JSONL line read (64 MiB, its newline excluded); a JSONL file has no size limit."""
MAX_DEPTH = 64
"""Deepest nesting of arrays/objects (lists/mappings) accepted in an input file or metadata."""
MAX_CRITERIA = 10_000
"""Most criteria in one rubric."""
MAX_WEIGHT = 1e6
"""Largest absolute criterion weight."""
MAX_YAML_VALUES = 2_000_000
"""Most values a YAML file may hold (after expanding aliases); bounds the time to load it."""

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The problem libyaml reports at its own nesting limit (1000 levels in the libyaml that PyYAML
# 6.0.4 bundles). Its scanner reads ahead of the events, so for a deep flow collection it can
# refuse before the event scan below counts MAX_DEPTH levels; what it refuses is deeper still.
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
_JSON_SPACE = " \t\r"


# ---- messages -------------------------------------------------------------------------------


def short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to about ``limit`` characters, for error messages."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to convert to text
        return f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def closest_field(key: object, allowed: Iterable[str]) -> str | None:
    """The allowed name ``key`` most likely misspells (``difflib``, ratio >= 0.6), or None."""
    if not isinstance(key, str):
        return None
    close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_field(key: object, allowed: Iterable[str]) -> str:
    """The message for an unknown field, with the closest allowed name when there is one.

    ``unknown field 'weigth' (did you mean 'weight'?)``, or, with no close name,
    ``unknown field 'text' (allowed: id, submission, ...)``.
    """
    names = list(allowed)
    close = closest_field(key, names)
    hint = f"did you mean {close!r}?" if close else "allowed: " + ", ".join(names)
    return f"unknown field {short_repr(key)} ({hint})"


def field_error(exc: Any, model: type | None = None) -> str:
    """The first error of a pydantic ``ValidationError`` worded as this package's input errors:
    ``field 'weights.sha256': String should match pattern ..., got 'abc'``; a missing field is
    ``field 'name': missing``, an unknown one ``unknown field 'hf-id' (did you mean 'hf_id'?)``
    (with ``model``, the validated class, for the names it allows), a wrong container
    ``field 'weights': expected a mapping``.

    Parameters
    ----------
    exc : pydantic.ValidationError
    model : type, optional
        The pydantic model that was validated (its nested models give the allowed names).
    """
    error = exc.errors()[0]
    loc = tuple(error.get("loc") or ())
    kind = error.get("type", "")

    def dotted(parts: tuple[Any, ...]) -> str:
        return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(parts))

    if kind == "extra_forbidden" and loc:
        allowed: list[str] = []
        current = model
        for part in loc[:-1]:
            fields = getattr(current, "model_fields", {})
            annotation = fields[part].annotation if part in fields else None
            current = annotation if isinstance(annotation, type) else None
        allowed = list(getattr(current, "model_fields", {}))
        where = f"field {dotted(loc[:-1])!r}: " if len(loc) > 1 else ""
        return where + (unknown_field(loc[-1], allowed) if allowed else f"unknown field {short_repr(loc[-1])}")
    where = f"field {dotted(loc)!r}: " if loc else ""
    if kind == "missing":
        return where + "missing"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return where + f"expected a mapping, got {type(error.get('input')).__name__}"
    return where + f"{error.get('msg', 'invalid')}, got {short_repr(error.get('input'))}"


def check_keys(data: Mapping[Any, Any], allowed: Sequence[str], where: str = "") -> None:
    """Refuse the first key of ``data`` not in ``allowed`` (``where`` goes in front).

    Raises
    ------
    InputError
        "<where> unknown field 'weigth' (did you mean 'weight'?)".
    """
    for key in data:
        if key not in allowed:
            raise InputError(f"{where} {unknown_field(key, allowed)}" if where else unknown_field(key, allowed))


def check_number(value: object, field: str | None, low: float, high: float) -> float:
    """``value`` as a float if it is a finite number in ``[low, high]`` (bool is not a number).

    Raises
    ------
    InputError
        "field 'weight': expected a finite number in [-1000000, 1000000], got nan" (without
        the "field ...: " part when ``field`` is None).
    """
    expected = f"expected a finite number in [{_plain(low)}, {_plain(high)}]"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "a boolean" if isinstance(value, bool) else type(value).__name__
        raise InputError(_field(field, f"{expected}, got {kind} {short_repr(value)}"))
    number = float(value) if abs(value) < 1e308 else math.inf
    if not (math.isfinite(number) and low <= number <= high):
        raise InputError(_field(field, f"{expected}, got {short_repr(value)}"))
    return number


def _field(field: str | None, message: str) -> str:
    return message if field is None else f"field {field!r}: {message}"


def _plain(number: float) -> str:
    return str(int(number)) if number.is_integer() else str(number)


# ---- reading ---------------------------------------------------------------------------------


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` decoded as UTF-8 (a leading byte-order mark is dropped).

    Raises
    ------
    InputError
        "<source>: not UTF-8 text (invalid start byte at byte 12)".
    """
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{source}: not UTF-8 text ({e.reason} at byte {e.start + bom})") from None


def read_input_text(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of the file at ``path``, at most :data:`MAX_FILE_BYTES` long.

    Raises
    ------
    InputError
        Naming the path: not found, a directory, not readable, too large, or not UTF-8.
    """
    path = Path(path)
    with _open_input(path) as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > MAX_FILE_BYTES:
            raise InputError(_too_large(path, info.st_size))
        try:
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as e:
            raise InputError(f"{path}: cannot read file: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(_too_large(path, len(data)))
    return decode_utf8(data, str(path))


def _open_input(path: Path) -> BinaryIO:
    """``path`` opened for reading bytes.

    Raises
    ------
    InputError
        Naming the path: not found, a directory, or not readable.
    """
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read file: {e.strerror or e}") from None
    if stat.S_ISDIR(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise InputError(f"{path}: is a directory, expected a file")
    return handle


def _too_large(path: Path, size: int) -> str:
    return (
        f"{path}: file too large ({size / 2**20:.1f} MiB; the limit is "
        f"{MAX_FILE_BYTES / 2**20:g} MiB)"
    )


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of every non-blank line, split on ``"\\n"`` only.

    JSON strings may hold U+2028, U+0085 and other characters that ``str.splitlines`` treats
    as line ends; JSONL separates records by ``"\\n"`` alone. Blank means JSON white space only.
    """
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip(_JSON_SPACE):
            yield number, line


def read_jsonl_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str | InputError]]:
    """Stream the non-blank lines of a JSONL file: ``(line number, text)`` for each, 1-based.

    The file is read line by line (split on ``"\\n"`` only, as :func:`jsonl_lines`), so its size
    is not limited and only one line is held at a time. A line longer than
    :data:`MAX_LINE_BYTES` or not UTF-8 is yielded as ``(line number, InputError)`` (the
    message without the file or line, e.g. "not UTF-8 text (invalid start byte at byte 12 of
    the line)") and reading goes on, so the caller decides whether one bad line fails the file
    or only its item. A byte-order mark before the first line is dropped.

    Raises
    ------
    InputError
        Naming the path: not found, a directory, or not readable.
    """
    for line in read_jsonl_spans(path):
        yield line.number, line.text


class JsonlLine(NamedTuple):
    """One non-blank line of a JSONL file (:func:`read_jsonl_spans`).

    Attributes
    ----------
    number : int
        1-based line number.
    text : str or InputError
        The line without its ``"\\n"``, or why it cannot be read (too long, not UTF-8).
    offset : int
        Byte offset in the file of the bytes ``text`` was decoded from (after a byte-order mark).
    raw : bytes
        Those bytes, ``"\\n"`` included when the line has one; empty for a line too long to hold.
    """

    number: int
    text: str | InputError
    offset: int
    raw: bytes


def read_jsonl_spans(path: str | os.PathLike[str]) -> Iterator[JsonlLine]:
    """:func:`read_jsonl_lines` with each line's place in the file, so that a caller can read
    it again later instead of holding it
    (:class:`~autorubric_local.data.jsonl_items.JsonlItems`). Raises what it raises."""
    path = Path(path)
    with _open_input(path) as handle:
        number = 0
        offset = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            start = offset
            offset += len(raw)
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                size = len(raw)
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line, a piece at a time
                    raw = handle.readline(2**20)
                    size += len(raw)
                    offset += len(raw)
                size -= raw.endswith(b"\n")
                yield JsonlLine(number, InputError(
                    f"line too long ({size / 2**20:.1f} MiB; the limit is {MAX_LINE_BYTES / 2**20:g} MiB a line)"
                ), start, b"")
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
                start += 3
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield JsonlLine(number, InputError(f"not UTF-8 text ({e.reason} at byte {e.start} of the line)"),
                                start, raw)
                continue
            if text.strip(_JSON_SPACE + "\n"):
                yield JsonlLine(number, text.removesuffix("\n"), start, raw)


# ---- parsing ---------------------------------------------------------------------------------


def parse_json(text: str) -> Any:
    """Decode JSON, refusing nesting deeper than :data:`MAX_DEPTH`.

    Raises
    ------
    InputError
        The decoder's message, or "nested deeper than 64 levels".
    """
    try:
        data = json.loads(text)
    except ValueError as e:  # a syntax error, or an integer too long to convert
        raise InputError(str(e)) from None
    except RecursionError:
        raise InputError(_too_deep()) from None
    check_nesting(data)
    return data


def parse_yaml(text: str, *, list_entries: tuple[int, str] | None = None) -> Any:
    """Load YAML safely (``safe_load`` semantics), refusing input too deep or too large.

    The event stream is read first (the C parser keeps no recursion), so depth, the number
    of values and, with ``list_entries=(limit, message)``, the number of mappings held in
    lists (criteria and sections; not under ``options`` or ``metadata``) are checked before
    any object is built. The loaded value is then checked again, as aliases can nest it
    further or make it cyclic.

    Raises
    ------
    InputError
        The parser's message, "nested deeper than 64 levels", "more than 2000000 values",
        or the ``list_entries`` message.
    """
    try:
        _scan_yaml_events(text, list_entries)
        data = yaml.load(text, Loader=_LOADER)  # a safe loader (CSafeLoader or SafeLoader)
    except (yaml.YAMLError, ValueError, OverflowError) as e:
        # ValueError/OverflowError: a scalar the constructor cannot build (2001-13-45, an
        # integer too long to convert)
        if getattr(e, "problem", None) == _LIBYAML_TOO_DEEP:
            raise InputError(_too_deep()) from None
        raise InputError(str(e)) from None
    except RecursionError:
        raise InputError(_too_deep()) from None
    check_nesting(data, max_values=MAX_YAML_VALUES)
    return data


def _scan_yaml_events(text: str, list_entries: tuple[int, str] | None) -> None:
    frames: list[list[Any]] = []  # [is_mapping, children seen, current key, skipped]
    values = entries = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, (yaml.CollectionEndEvent)):
            frames.pop()
            continue
        if not isinstance(event, (yaml.NodeEvent)):
            continue
        values += 1
        if values > MAX_YAML_VALUES:
            raise InputError(f"more than {MAX_YAML_VALUES} values")
        parent = frames[-1] if frames else None
        is_value = parent is not None and parent[0] and parent[1] % 2 == 1
        if parent is not None:
            if parent[0] and not is_value:
                parent[2] = event.value if isinstance(event, yaml.ScalarEvent) else None
            parent[1] += 1
        if isinstance(event, yaml.CollectionStartEvent):
            skipped = parent is not None and (parent[3] or (is_value and parent[2] in ("options", "metadata")))
            if list_entries and isinstance(event, yaml.MappingStartEvent) and parent and not parent[0] and not skipped:
                entries += 1
                if entries > list_entries[0]:
                    raise InputError(list_entries[1])
            frames.append([isinstance(event, yaml.MappingStartEvent), 0, None, skipped])
            if len(frames) > MAX_DEPTH:
                raise InputError(_too_deep())


def _too_deep() -> str:
    return f"nested deeper than {MAX_DEPTH} levels"


# ---- walking parsed values -------------------------------------------------------------------


def _children(value: object) -> Iterator[tuple[object, object]]:
    if isinstance(value, Mapping):
        return iter(value.items())
    return enumerate(value)  # type: ignore[arg-type]


_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = (Mapping, list, tuple)


def _walk(
    root: object,
    max_depth: int,
    max_values: int | None,
    check: Callable[[object, object, list[list[Any]]], None] | None,
    within: Sequence[object] = (),
) -> None:
    """Visit ``root`` without recursion: refuse depth > ``max_depth``, cycles, text that is
    not valid Unicode, and more than ``max_values`` values counting shared (aliased)
    containers once per use; ``check(key, value, stack)`` sees every entry
    (:func:`_json_path` names it from the stack). Shared containers are measured once.
    ``within`` is the path from the top level down to ``root``: its levels count towards the
    depth and messages name places from the top level."""
    if not isinstance(root, _CONTAINERS):
        return
    measured: dict[int, tuple[int, int]] = {}  # id -> (height, expanded values)
    above = len(within)
    active = {id(root)}
    # frame: [container, children iterator, key in parent, height, values]
    stack: list[list[Any]] = [[root, _children(root), None, 1, 1]]
    while stack:
        frame = stack[-1]
        for key, value in frame[1]:
            if type(key) is str and not key.isascii():
                _check_text(key, stack, key, within)
            if check is not None:
                check(key, value, stack)
            if type(value) in _SCALARS or not isinstance(value, _CONTAINERS):
                if type(value) is str and not value.isascii():
                    _check_text(value, stack, key, within)
                frame[4] += 1
                continue
            if id(value) in active:
                raise InputError("refers to itself (a cyclic alias)")
            if id(value) in measured:
                height, count = measured[id(value)]
                if above + len(stack) + height > max_depth:
                    raise InputError(f"nested deeper than {max_depth} levels")
                frame[3] = max(frame[3], height + 1)
                _add_values(frame, count, max_values)
                continue
            if above + len(stack) + 1 > max_depth:
                raise InputError(f"nested deeper than {max_depth} levels")
            active.add(id(value))
            stack.append([value, _children(value), key, 1, 1])
            break
        else:
            stack.pop()
            active.discard(id(frame[0]))
            measured[id(frame[0])] = (frame[3], frame[4])
            if stack:
                stack[-1][3] = max(stack[-1][3], frame[3] + 1)
                _add_values(stack[-1], frame[4], max_values)


def _add_values(frame: list[Any], count: int, max_values: int | None) -> None:
    frame[4] += count
    if max_values is not None and frame[4] > max_values:
        raise InputError(f"more than {max_values} values (aliases included)")


def check_nesting(value: object, *, max_values: int | None = None, within: Sequence[object] = ()) -> None:
    """Refuse ``value`` if nested deeper than :data:`MAX_DEPTH`, cyclic, or (with
    ``max_values``) holding more values once aliases are expanded.

    ``within`` is the path of keys and indices from the top level of a file down to ``value``
    (``("items", 3)`` for a streamed item): its levels count towards the depth, and a message
    names the place from the top level.

    Also refuses text that is not valid Unicode (a lone surrogate from a JSON ``\\ud800``
    escape), which could not be stored or printed later.

    Raises
    ------
    InputError
        "nested deeper than 64 levels", "refers to itself (a cyclic alias)",
        "more than N values (aliases included)", or "text at [...] is not valid Unicode ...".
    """
    if isinstance(value, str):
        _check_text(value, [], None, within)
    _walk(value, MAX_DEPTH, max_values, None, within)


def _check_text(text: str, stack: list[list[Any]], key: object, within: Sequence[object] = ()) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            prefix = "".join(f"[{short_repr(part)}]" for part in within)
            where = prefix + _json_path(stack, key) if stack else prefix or "the top level"
            raise InputError(
                f"text at {where} is not valid Unicode (lone surrogate U+{ord(text[e.start]):04X})"
            ) from None


def _json_path(stack: list[list[Any]], key: object) -> str:
    """``['a'][0]['b']``: where ``key`` sits, below the containers on the walk's stack."""
    return "".join(f"[{short_repr(part)}]" for part in [*(frame[2] for frame in stack[1:]), key])


def _check_json_entry(key: object, value: object, stack: list[list[Any]]) -> None:
    where = _json_path(stack, key)
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"value at {where} is not a finite number: {value}")
    if isinstance(value, Mapping):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise InputError(f"key {short_repr(bad[0])} at {where} is not a string")
    elif value is not None and not isinstance(value, (str, int, float, list, tuple)):
        raise InputError(f"value at {where} is not JSON-able ({type(value).__name__})")


def check_json_object(value: object, field: str | None = "metadata") -> dict[str, Any]:
    """``value`` as a dict if it is a JSON-able mapping: string keys; values null, booleans,
    finite numbers, strings, lists and mappings; nested at most :data:`MAX_DEPTH` deep.

    Raises
    ------
    InputError
        "field 'metadata': expected a mapping (JSON object), got list", or a message naming
        the offending key path, e.g. "field 'metadata': value at ['when'] is not JSON-able
        (date)" (without the "field ...: " part when ``field`` is None).
    """
    if not isinstance(value, Mapping):
        raise InputError(_field(field, f"expected a mapping (JSON object), got {type(value).__name__}"))
    bad = [key for key in value if not isinstance(key, str)]
    if bad:
        raise InputError(_field(field, f"key {short_repr(bad[0])} is not a string"))
    try:
        _walk(value, MAX_DEPTH, MAX_YAML_VALUES, _check_json_entry)
    except InputError as e:
        raise InputError(_field(field, str(e))) from None
    return dict(value)
