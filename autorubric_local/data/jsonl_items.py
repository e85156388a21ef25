"""A JSONL file's items (or a JSON array's), read from the file when used instead of held in memory.

:func:`~autorubric_local.data.submissions.load_grading_data` reads a ``.jsonl`` file once,
checking every line, and keeps of each item only where its line is (byte offset and size, 16
bytes), its line number and a digest of its bytes: about 40 bytes an item, whatever the length
of its submission. :class:`JsonlItems` then parses an item again each time it is read, with the
same function that checked it, so a run of 10^5 items holds only the chunk it is grading
(:mod:`autorubric_local.runner.checkpoint`). The elements of a ``.json`` file's array of
submissions are kept the same way, each as its place in the file (``unit="item"``).

A line whose bytes no longer match its digest (the file was changed or replaced after it was
read) is refused with an :class:`~autorubric_local.core.errors.InputError` naming the file and
line, never read as a different item.
"""

from __future__ import annotations

import hashlib
import os
import threading
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from autorubric_local.core.checks import parse_json
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.item import DataItem, UnreadableItem

__all__ = ["DIGEST_BYTES", "JsonlItems"]

DIGEST_BYTES = 16
"""Size of the BLAKE2b digest kept of each line's bytes."""

ItemParser = Callable[[Any, int], DataItem]
"""Builds the checked item at a position from its line's JSON value; raises InputError."""


def line_digest(raw: bytes) -> bytes:
    """The digest kept of a line's bytes (:data:`DIGEST_BYTES` of BLAKE2b)."""
    return hashlib.blake2b(raw, digest_size=DIGEST_BYTES).digest()


class JsonlItems(Sequence[DataItem]):
    """The items of a JSONL file, in file order, parsed when read (see the module docstring).

    Built empty, then filled a line at a time with :meth:`add_line` and :meth:`add_unreadable`
    while the file is checked. Indexing gives a :class:`DataItem` (a slice gives a list); two
    item sequences are equal when their items are.

    Parameters
    ----------
    path : path
        The file; it is opened on first read and read with ``os.pread`` (safe from threads).
    source : str
        The file's name in messages.
    parse : callable ``(JSON value, position) -> DataItem``
        Builds the item at a position from its line, exactly as when the file was checked.
    checked_against : Rubric or None
        The global rubric the items were checked against: a
        :class:`~autorubric_local.data.dataset.RubricDataset` with that rubric does not check
        them again (with another rubric it reads and checks them all).
    unit : {"line", "item"}
        What a place is called in messages: a JSONL line (1-based number) or an element of a
        JSON array (0-based index, passed as the "line" number).

    Raises
    ------
    InputError
        On reading an item: its line changed since it was checked, or the file can no longer
        be read; the message names the file and line (or item).
    """

    def __init__(
        self, path: str | os.PathLike[str], source: str, parse: ItemParser, checked_against: Rubric | None,
        unit: str = "line",
    ) -> None:
        self.path = Path(path).resolve()  # read again after a chdir, or in another process
        self.source = source
        self.parse = parse
        self.checked_against = checked_against
        self.unit = unit
        self._offsets = array("q")
        self._sizes = array("q")
        self._lines = array("q")
        self._digests = bytearray()
        self._unreadable: dict[int, UnreadableItem] = {}
        self._fd: int | None = None
        self._lock = threading.Lock()

    # ---- filling ---------------------------------------------------------------------------

    def add_line(self, number: int, offset: int, raw: bytes) -> None:
        """Append the item read from line ``number``, whose bytes ``raw`` start at ``offset``."""
        self._offsets.append(offset)
        self._sizes.append(len(raw))
        self._lines.append(number)
        self._digests += line_digest(raw)

    def add_unreadable(self, item: UnreadableItem) -> None:
        """Append the placeholder of a line that could not be read (kept in memory: it is small)."""
        self._unreadable[len(self._offsets)] = item
        self._offsets.append(-1)
        self._sizes.append(0)
        self._lines.append(item.line)
        self._digests += bytes(DIGEST_BYTES)

    # ---- reading ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> DataItem: ...

    @overload
    def __getitem__(self, index: slice) -> list[DataItem]: ...

    def __getitem__(self, index: int | slice) -> DataItem | list[DataItem]:
        if isinstance(index, slice):
            return [self._item(i) for i in range(len(self))[index]]
        position = range(len(self))[index]  # IndexError as a list gives it
        return self._item(position)

    def __iter__(self) -> Iterator[DataItem]:
        return (self._item(position) for position in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable while filled, like a list

    def __repr__(self) -> str:
        return f"JsonlItems({str(self.path)!r}, {len(self)} items)"

    def line_number(self, position: int) -> int:
        """The 1-based line number of the item at ``position``."""
        return self._lines[position]

    def _item(self, position: int) -> DataItem:
        unreadable = self._unreadable.get(position)
        if unreadable is not None:
            return unreadable
        number = self._lines[position]
        raw = self._read(self._offsets[position], self._sizes[position], number)
        start = position * DIGEST_BYTES
        if line_digest(raw) != self._digests[start:start + DIGEST_BYTES]:
            raise InputError(f"{self.source}: {self.unit} {number}: the file changed after it was read "
                             f"(this {self.unit}'s bytes differ); load it again")
        return self.parse(parse_json(raw.decode("utf-8").removesuffix("\n")), position)

    def _read(self, offset: int, size: int, number: int) -> bytes:
        try:
            with self._lock:  # also keeps close() from closing the descriptor under a read
                if self._fd is None:
                    self._fd = os.open(self.path, os.O_RDONLY)
                return os.pread(self._fd, size, offset)
        except OSError as e:
            raise InputError(f"{self.source}: {self.unit} {number}: cannot read the file again: {e.strerror or e}") from None

    def close(self) -> None:
        """Close the file (it is opened again when an item is next read)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)

    def __getstate__(self) -> dict[str, Any]:  # picklable (Ray workers): the file is opened again there
        state = self.__dict__.copy()
        state["_fd"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({"unit": "line", **state})
        self._lock = threading.Lock()
