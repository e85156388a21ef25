"""Cut a run's pending items into chunks: by size (:func:`make_chunks`) or, in this process, by
size and time (:class:`TimedChunks`).

A chunk is the unit of work and of commit: the grader takes it as one engine workload and the
runner commits it in one transaction, so a kill loses at most the chunk in flight. A size limit
alone (``chunk_judgments``) bounds memory but not time: on a slow machine, or in explain mode,
512 judgments can take many minutes (a 180-judgment run on CPU once committed nothing for 18
minutes). :class:`TimedChunks` therefore also sizes each chunk from the pace measured so far, so
that it should take about ``budget_seconds`` (grading and commit), starting from a one-item chunk.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

__all__ = ["DEFAULT_CHUNK_SECONDS", "FIRST_CHUNK_JUDGMENTS", "MAX_CHUNK_GROWTH", "TimedChunks", "item_keys", "make_chunks"]

DEFAULT_CHUNK_SECONDS = 30.0
"""Default time budget of one chunk (grading and commit), in seconds."""
FIRST_CHUNK_JUDGMENTS = 1
"""Judgment budget of the first timed chunk, before any pace is known: in effect one item."""
MAX_CHUNK_GROWTH = 8
"""A timed chunk holds at most this many times the previous chunk's judgments, so one fast
measurement (a chunk of easy items) cannot make the next chunk very long."""


class Keyed(Protocol):
    @property
    def key(self) -> str: ...


T = TypeVar("T", bound=Keyed)


def make_chunks(
    pending: Sequence[T], estimates: Mapping[str, int], max_judgments: int, max_items: int | None
) -> list[Sequence[T]]:
    """Cut pending items, in order, into chunks of at most ``max_judgments`` judgments and
    ``max_items`` items (an item larger than ``max_judgments`` forms its own chunk). Each chunk
    is a slice of ``pending``: of a lazy sequence (:class:`~.checkpoint.PlannedItems`), a lazy
    one, whose items are built only when the chunk is read."""
    keys = item_keys(pending)
    chunks: list[Sequence[T]] = []
    start = 0
    while start < len(pending):
        end = _chunk_end(keys, start, estimates, max_judgments, max_items)
        chunks.append(pending[start:end])
        start = end
    return chunks


def item_keys(pending: Sequence[T]) -> Sequence[str]:
    """The items' keys: the sequence's own ``keys`` when it has them (a lazy sequence such as
    :class:`~.checkpoint.PlannedItems`, whose items are then built only when cut), else read
    from each item."""
    keys = getattr(pending, "keys", None)
    if isinstance(keys, Sequence) and len(keys) == len(pending):
        return keys
    return [entry.key for entry in pending]


def _chunk_end(
    keys: Sequence[str], start: int, estimates: Mapping[str, int], max_judgments: int, max_items: int | None
) -> int:
    """Where the next chunk from ``start`` ends (exclusive): at least one item, then as many as fit."""
    end = start + 1
    size = estimates[keys[start]]
    while end < len(keys) and (max_items is None or end - start < max_items):
        cost = estimates[keys[end]]
        if size + cost > max_judgments:
            break
        size += cost
        end += 1
    return end


class TimedChunks(Generic[T]):
    """Pending items cut into chunks as they are asked for (iterate once), each sized both by
    ``max_judgments``/``max_items`` and by time.

    The time between handing out one chunk and being asked for the next is that chunk's cost
    (the executor grades it and the runner commits it before asking again), so the pace in
    seconds per judgment is known after every chunk. The next chunk then holds at most
    ``budget_seconds / pace`` judgments (and at most :data:`MAX_CHUNK_GROWTH` times the last
    chunk's); the first holds :data:`FIRST_CHUNK_JUDGMENTS` (one item). An item is never split,
    so a single item slower than the budget forms its own chunk. With ``budget_seconds`` None
    the chunks are :func:`make_chunks`'s.

    Parameters
    ----------
    pending : sequence of items with a ``key``
    estimates : mapping of key to int
        Each item's number of judgments.
    max_judgments : int >= 1
    max_items : int >= 1 or None
    budget_seconds : float > 0 or None
    clock : callable, optional
        Seconds; default :func:`time.monotonic`.

    Attributes
    ----------
    chunks : dict of int to list
        The chunks handed out and not yet forgotten (:meth:`forget`), by index.
    judged : list of int
        The number of judgments of each chunk handed out, by index.
    seconds : list of float
        The measured cost of each chunk handed out and finished, in seconds.
    """

    def __init__(
        self,
        pending: Sequence[T],
        estimates: Mapping[str, int],
        max_judgments: int,
        max_items: int | None,
        budget_seconds: float | None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.pending = pending
        self.estimates = estimates
        self.max_judgments = max_judgments
        self.max_items = max_items
        self.budget_seconds = budget_seconds
        self.clock = clock or time.monotonic
        self.chunks: dict[int, list[T]] = {}
        self.judged: list[int] = []
        self.seconds: list[float] = []

    def __getitem__(self, index: int) -> list[T]:
        return self.chunks[index]

    def forget(self, index: int) -> None:
        """Let go of chunk ``index`` (committed): a long run then holds only the chunk in flight."""
        del self.chunks[index]

    def __iter__(self) -> Iterator[list[T]]:
        keys = item_keys(self.pending)
        start = 0
        handed_at: float | None = None
        while start < len(self.pending):
            if handed_at is not None:
                self.seconds.append(self.clock() - handed_at)
            end = _chunk_end(keys, start, self.estimates, self.next_budget(), self.max_items)
            chunk = [self.pending[position] for position in range(start, end)]
            self.chunks[len(self.judged)] = chunk
            self.judged.append(sum(self.estimates[entry.key] for entry in chunk))
            start += len(chunk)
            handed_at = self.clock()
            yield chunk

    def next_budget(self) -> int:
        """The judgment limit of the next chunk (see the class docstring): from the pace of the
        latest chunk that judged anything (a chunk of unreadable items only teaches nothing)."""
        if self.budget_seconds is None:
            return self.max_judgments
        for index in range(len(self.judged) - 1, -1, -1):
            judged = self.judged[index]
            if judged:
                spent = self.seconds[index]
                fitting = math.inf if spent <= 0 else self.budget_seconds * judged / spent
                return max(1, min(self.max_judgments, MAX_CHUNK_GROWTH * judged, int(fitting)))
        return min(self.max_judgments, FIRST_CHUNK_JUDGMENTS)
