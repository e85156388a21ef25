"""The runner's progress display: rich bars (judgments, items, and chunks for a distributed run),
or nothing."""

from __future__ import annotations

from types import TracebackType
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from autorubric_local.runner.config import ProgressStyle


class RunProgress:
    """Progress of a run; a no-op when disabled.

    Parameters
    ----------
    enabled : bool
    style : {"simple", "detailed"}
    total_items, total_judgments : int
        Of the whole run (already committed work counts as done).
    done_items, done_judgments : int
        Committed before this session (a resumed run starts part-way).
    total_chunks : int, optional
        Chunks this session grades; adds a ``chunks`` bar (distributed runs, whose chunks are
        graded by several workers at once).
    console : rich Console, optional
        Defaults to stderr.
    """

    def __init__(
        self,
        *,
        enabled: bool,
        style: ProgressStyle,
        total_items: int,
        total_judgments: int,
        done_items: int = 0,
        done_judgments: int = 0,
        total_chunks: int | None = None,
        console: Console | None = None,
    ) -> None:
        self._progress: Progress | None = None
        self._chunks: TaskID | None = None
        if not enabled:
            return
        columns: list[ProgressColumn | str] = [
            TextColumn("{task.description:<9}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        ]
        if style == "detailed":
            columns += [TaskProgressColumn(), TimeRemainingColumn()]
        self._progress = Progress(*columns, console=console or Console(stderr=True), transient=True)
        self._judgments: TaskID = self._progress.add_task("judgments", total=total_judgments, completed=done_judgments)
        self._items: TaskID = self._progress.add_task("items", total=total_items, completed=done_items)
        if total_chunks is not None:
            self._chunks = self._progress.add_task("chunks", total=total_chunks)

    def __enter__(self) -> Self:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def judgments_done(self, count: int) -> None:
        """Advance the judgments bar (the grader's progress callback)."""
        if self._progress is not None:
            self._progress.advance(self._judgments, count)

    def items_done(self, count: int, judgments: int | None = None, chunks: int = 0) -> None:
        """Advance the items bar after a committed chunk, and the chunks bar (if shown) by
        ``chunks``; ``judgments`` re-syncs the judgments bar."""
        if self._progress is None:
            return
        self._progress.advance(self._items, count)
        if self._chunks is not None and chunks:
            self._progress.advance(self._chunks, chunks)
        if judgments is not None:
            self._progress.update(self._judgments, completed=judgments)
