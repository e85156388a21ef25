"""Read a JSON file a value at a time: the elements of a top-level array, or the members of a
top-level object (and the elements of its ``items`` array), each with its place in the file.

A dataset or submissions ``.json`` file may be larger than memory allows to hold as text and
parse tree. :func:`stream_json` reads it in chunks, decoding UTF-8 as it goes, and parses each
element of the top-level array (or each value of the top-level object, and each element of its
``items`` array) with the standard library's own decoder (``json.JSONDecoder.raw_decode``), so
values and error messages are those of ``json.loads`` on the whole text: a syntax error gives
the decoder's message with its line, column and character counted from the start of the file.
Only the text of the value being parsed is held (the buffer grows to hold a large one), up to
:data:`MAX_VALUE_BYTES` a value.

The standard decoder is used rather than a streaming parser such as ijson because ijson reports
no byte offsets of the values it builds (a caller keeps each item as its place in the file and
reads it again when used, as for JSONL), its syntax errors and number types differ from
``json.loads``, whose messages the loaders already give, and its C backend (``yajl2_c``, ijson
3.x) decodes a lone surrogate escape (``"\\ud800"``) to ``"?"`` without a word, where the loaders
must refuse it as text that is not valid Unicode (checked with ijson 3.6.0, the current release, on 2026-11-27).

The checks of :func:`~autorubric_local.core.checks.read_input_text` and
:func:`~autorubric_local.core.checks.parse_json` on a whole file are kept, in the same order
of precedence: text that is not UTF-8 anywhere in the file (byte offset from the file's start),
then a syntax error, then nesting deeper than :data:`~autorubric_local.core.checks.MAX_DEPTH`
levels counted from the file's top level (or text that is not valid Unicode, its path also
from the top level). There is no limit on the file's size.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from autorubric_local.core.checks import _open_input, check_nesting
from autorubric_local.core.errors import InputError

__all__ = ["MAX_VALUE_BYTES", "JsonValue", "stream_json"]

MAX_VALUE_BYTES = 64 * 1024 * 1024
"""Largest value (array element or object member value) read from a streamed JSON file: 64 MiB."""
_CHUNK = 1024 * 1024
_SPACE = " \t\n\r"
_DECODER = json.JSONDecoder()  # json.loads's own decoder settings
_LOOKAHEAD = 16  # characters the decoder may read past an error it reports: "\\ud83d\\ude00", "-Infinity"
_NUMBER_TAIL = re.compile(r"[0-9eE+\-.]*\Z")


class JsonValue(NamedTuple):
    """One value of a streamed JSON file (:func:`stream_json`).

    Attributes
    ----------
    path : tuple
        Where it is from the top level: ``(3,)`` for the 4th element of a top-level array,
        ``("rubric",)`` for a member of a top-level object, ``("items", 3)`` for an element of
        its ``items`` array, ``()`` for a top-level scalar.
    value : Any
        The decoded value, as ``json.loads`` gives it.
    offset : int
        Byte offset in the file of its first byte.
    raw : bytes
        Its bytes (UTF-8), from ``offset``; ``json.loads(raw)`` gives ``value`` again.
    """

    path: tuple[str | int, ...]
    value: Any
    offset: int
    raw: bytes


def stream_json(path: str | os.PathLike[str], *, items_key: str | None = "items") -> Iterator[tuple[str, Any]]:
    """The events of reading the JSON file at ``path``, one value at a time.

    Yields ``("array", None)`` then ``("element", JsonValue)`` for each element of a top-level
    array; or ``("object", None)`` then ``("member", JsonValue)`` for each member of a
    top-level object (its key is ``path[0]``), except that a member named ``items_key`` whose
    value is an array gives ``("items", None)`` and then ``("element", JsonValue)`` for each of
    its elements; or ``("scalar", JsonValue)`` for any other top-level value. The whole file is
    checked before the generator ends (unless the caller stops early).

    Raises
    ------
    InputError
        Naming the path: not found, a directory, not readable; "not UTF-8 text (... at byte
        N)"; "invalid JSON: <json.loads's message>", "invalid JSON: nested deeper than 64
        levels" or "invalid JSON: text at [...] is not valid Unicode ..."; or, for a value
        over :data:`MAX_VALUE_BYTES`, "item 3: item too large (70.0 MiB; the limit is 64 MiB
        an item)" ("field 'rubric': value too large ..." for a member of the top-level object).
    """
    path = Path(path)
    with _open_input(path) as handle:
        reader = _Reader(handle, str(path))
        yield from reader.document(items_key)


class _Reader:
    """A window of decoded text over the file, parsed forwards (see the module docstring)."""

    def __init__(self, handle: BinaryIO, source: str) -> None:
        self.handle = handle
        self.source = source
        self.text = ""  # decoded text from the start of the value being read
        self.pos = 0  # cursor in text
        self.eof = False
        self.carry = b""  # bytes of a character cut by a chunk's end
        self.file_bytes = 0  # bytes read from the file
        self.base_bytes = 0  # file offset of text[0]
        self.base_chars = 0  # characters of the document before text[0] (a byte-order mark excluded)
        self.base_lines = 0  # newlines before text[0]
        self.base_last_nl = -1  # document index of the last newline before text[0]
        self.mark = (0, 0)  # (index in text, file offset): bytes are counted forwards from here
        self.pending: InputError | None = None  # nesting problem: reported once the syntax is checked

    # ---- the document ----------------------------------------------------------------------

    def document(self, items_key: str | None) -> Iterator[tuple[str, Any]]:
        self.space()
        first = self.peek()
        if first == "[":
            yield "array", None
            yield from self.array(())
        elif first == "{":
            yield "object", None
            yield from self.object(items_key)
        else:
            value = self.value(())
            if self.pending is None:
                yield "scalar", value
        self.space()
        if self.peek() != "":
            self.fail("Extra data", self.pos)
        if self.pending is not None:
            raise self.pending

    def array(self, at: tuple[str | int, ...]) -> Iterator[tuple[str, Any]]:
        self.pos += 1  # "["
        self.space()
        if self.peek() == "]":
            self.pos += 1
            return
        index = 0
        while True:
            value = self.value((*at, index))
            if self.pending is None:
                yield "element", value
            index += 1
            if not self.another("]"):
                return

    def object(self, items_key: str | None) -> Iterator[tuple[str, Any]]:
        self.pos += 1  # "{"
        self.space()
        c = self.peek()
        if c == "}":
            self.pos += 1
            return
        while True:
            if c != '"':
                self.fail("Expecting property name enclosed in double quotes", self.pos)
            key = self.value(None).value
            self.space()
            if self.peek() != ":":
                self.fail("Expecting ':' delimiter", self.pos)
            self.pos += 1
            self.space()
            if key == items_key and self.peek() == "[":
                yield "items", None
                yield from self.array((key,))
            else:
                value = self.value((key,))
                if self.pending is None:
                    yield "member", value
            if not self.another("}"):
                return
            c = self.peek()

    def another(self, close: str) -> bool:
        """After a value in an array or object: past ``close`` (False, the container ended) or
        past ``,`` and the space after it (True, another value follows)."""
        self.space()
        c = self.peek()
        if c == close:
            self.pos += 1
            return False
        if c != ",":
            self.fail("Expecting ',' delimiter", self.pos)
        self.pos += 1
        self.space()
        return True

    # ---- values ----------------------------------------------------------------------------

    def value(self, at: tuple[str | int, ...] | None) -> JsonValue:
        """Decode the value at the cursor (a key when ``at`` is None) and move past it."""
        self.compact()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as e:
                # Reading on cannot help an error the decoder met before the window's end.
                cut = e.msg.startswith("Unterminated string") or e.pos + _LOOKAHEAD >= len(self.text)
                if not (cut and self.more(at)):
                    self.fail(e.msg, e.pos)
                continue
            except RecursionError:
                self.fail_with(InputError(f"{self.source}: invalid JSON: nested deeper than 64 levels"))
            except ValueError as e:  # an integer too long to convert
                self.fail_with(InputError(f"{self.source}: invalid JSON: {e}"))
            if _NUMBER_TAIL.match(self.text, end) and not isinstance(value, (str, list, dict)) and self.more(at):
                continue  # a number may go on in the next chunk ("2.5e" parses as 2.5 and stops)
            break
        start, offset = self.pos, self.byte_offset(self.pos)
        self.pos = end
        raw = self.text[start:end].encode("utf-8")
        if len(raw) > MAX_VALUE_BYTES:
            self.fail_with(_too_large(self.source, at, f"{len(raw) / 2**20:.1f} MiB"))
        if at is not None and self.pending is None:
            try:
                check_nesting(value, within=at)
            except InputError as e:
                self.pending = InputError(f"{self.source}: invalid JSON: {e}")
        return JsonValue(at or (), value, offset, raw)

    def space(self) -> None:
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.text) or not self.more(None, grow=False):
                return

    def peek(self) -> str:
        """The character at the cursor ("" at the end of the file)."""
        if self.pos >= len(self.text):
            self.more(None, grow=False)
        return self.text[self.pos] if self.pos < len(self.text) else ""

    # ---- the window ------------------------------------------------------------------------

    def byte_offset(self, index: int) -> int:
        """The file offset of ``text[index]`` (indices asked for never go backwards)."""
        mark_index, mark_offset = self.mark
        offset = mark_offset + len(self.text[mark_index:index].encode("utf-8"))
        self.mark = (index, offset)
        return offset

    def compact(self) -> None:
        """Drop the text before the cursor."""
        if self.pos == 0:
            return
        offset = self.byte_offset(self.pos)
        dropped = self.text[: self.pos]
        newline = dropped.rfind("\n")
        if newline >= 0:
            self.base_lines += dropped.count("\n")
            self.base_last_nl = self.base_chars + newline
        self.base_chars += self.pos
        self.base_bytes = offset
        self.text = self.text[self.pos:]
        self.pos = 0
        self.mark = (0, offset)

    def more(self, at: tuple[str | int, ...] | None, *, grow: bool = True) -> bool:
        """Read more of the file into the window; False at its end. With ``grow`` (a value did not
        fit) at least as much again as the window holds, refusing a value over the limit."""
        if self.eof:
            return False
        self.compact()
        held = self.file_bytes - self.base_bytes
        if grow and held > MAX_VALUE_BYTES:
            self.fail_with(_too_large(self.source, at, f"more than {MAX_VALUE_BYTES / 2**20:g} MiB"))
        # doubling the window for a value that did not fit, but not far past the limit
        self.text += self.decode(max(_CHUNK, min(held, MAX_VALUE_BYTES + _CHUNK - held) if grow else 0))
        return True

    def decode(self, size: int) -> str:
        """The next ``size`` bytes of the file, decoded (a character cut at the end is carried)."""
        try:
            chunk = self.handle.read(size)
        except OSError as e:
            raise InputError(f"{self.source}: cannot read file: {e.strerror or e}") from None
        start = self.file_bytes - len(self.carry)  # file offset of data[0]
        self.file_bytes += len(chunk)
        self.eof = not chunk
        data = self.carry + chunk
        if start == 0 and data.startswith(b"\xef\xbb\xbf"):
            data, start = data[3:], 3
            self.base_bytes = 3
            self.mark = (self.mark[0], 3)
        try:
            self.carry = b""
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            if e.reason == "unexpected end of data" and not self.eof:
                self.carry = data[e.start:]
                return data[: e.start].decode("utf-8")
            raise InputError(f"{self.source}: not UTF-8 text ({e.reason} at byte {start + e.start})") from None

    # ---- errors ----------------------------------------------------------------------------

    def fail(self, message: str, index: int) -> None:
        """Raise ``json.loads``'s message for a syntax error at ``text[index]``."""
        char = self.base_chars + index
        line = self.base_lines + self.text.count("\n", 0, index) + 1
        newline = self.text.rfind("\n", 0, index)
        column = char - (self.base_chars + newline if newline >= 0 else self.base_last_nl)
        self.fail_with(InputError(
            f"{self.source}: invalid JSON: {message}: line {line} column {column} (char {char})"
        ))

    def fail_with(self, error: InputError) -> None:
        """Raise ``error``, or the first bad UTF-8 in the rest of the file, which reading the
        whole text first would have reported instead."""
        while not self.eof:
            self.decode(_CHUNK)
        raise error


def _too_large(source: str, at: tuple[str | int, ...] | None, size: str) -> InputError:
    limit = f"the limit is {MAX_VALUE_BYTES / 2**20:g} MiB"
    if at and isinstance(at[-1], int):
        return InputError(f"{source}: item {at[-1]}: item too large ({size}; {limit} an item)")
    where = f"field {at[0]!r}" if at else "the top level"
    return InputError(f"{source}: {where}: value too large ({size}; {limit} a value)")
