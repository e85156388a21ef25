"""The progress display of AutoRubric's rubric-improvement loop (issue 53), on ``rich``.

:class:`ImprovementProgressDisplay` has the methods AutoRubric 1.6.1's runner calls
(``autorubric.meta.ImprovementProgressDisplay``, ``_improve.py``): a transient progress bar per
iteration, one summary line per iteration, the rubric (or what changed in it), the issues,
and a summary table at the end, all on standard error. Built with ``enabled=False`` it prints
nothing, so the runner calls it the same way whether progress is shown or not.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorubric_local.core.rubric import Rubric
from autorubric_local.meta.improvement import IssueDetail

if TYPE_CHECKING:
    from autorubric_local.meta.improvement import IterationResult

__all__ = ["ImprovementProgressDisplay", "rubric_lines"]


def rubric_lines(rubric: Rubric) -> list[str]:
    """One line per criterion, ``<n>. [<weight>] <requirement>``, for display and diffs."""
    return [f"{i}. [{c.weight:+g}] {c.requirement}" for i, c in enumerate(rubric.rubric, 1)]


class ImprovementProgressDisplay:
    """Progress of an improvement run, printed with ``rich`` on standard error.

    Parameters
    ----------
    enabled : bool, default True, keyword-only (extension)
        False: every method does nothing.
    console : rich.console.Console, optional, keyword-only (extension)
        Where to print (default: a console on standard error).
    """

    def __init__(self, *, enabled: bool = True, console: Any | None = None) -> None:
        self.enabled = enabled
        self._console = console
        self._progress: Any = None
        self._task: Any = None

    @property
    def console(self) -> Any:
        """The ``rich`` console (created on first use)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True)
        return self._console

    def _print(self, *objects: Any, **kwargs: Any) -> None:
        if self.enabled:
            self.console.print(*objects, **kwargs)

    def begin_iteration(self, iteration: int, max_iterations: int, total_steps: int) -> None:
        """Show a progress bar of ``total_steps`` for iteration ``iteration`` (0-based)."""
        if not self.enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._progress = Progress(SpinnerColumn(), TextColumn(f"iteration {iteration + 1} of {max_iterations}: "
                                                              "{task.fields[phase]}"),
                                  BarColumn(bar_width=30), MofNCompleteColumn(), TimeElapsedColumn(),
                                  console=self.console, transient=True)
        self._progress.start()
        self._task = self._progress.add_task("", total=total_steps, phase="evaluating the rubric")

    def advance(self, phase_name: str | None = None) -> None:
        """One step done; ``phase_name`` relabels the bar."""
        if self._progress is not None:
            self._progress.update(self._task, advance=1, **({"phase": phase_name} if phase_name else {}))

    def end_iteration(self) -> None:
        """Remove the bar."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = self._task = None

    @contextmanager
    def phase(self, iteration: int, max_iterations: int, phase_name: str) -> Iterator[None]:
        """A spinner while one step (the revision) runs."""
        if not self.enabled:
            yield
            return
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), TextColumn(f"iteration {iteration + 1} of {max_iterations}: {phase_name}"),
                      TimeElapsedColumn(), console=self.console, transient=True) as progress:
            progress.add_task("")
            yield

    def log_iteration(self, result: IterationResult) -> None:
        """One line: quality, agreement, and the rejection or revision failure."""
        parts = [f"iteration {result.iteration}: quality {result.quality_score:.1%}"]
        if result.agreement is not None:
            parts.append(f"agreement {result.agreement:.0%}")
        if not result.accepted:
            parts.append(f"rejected ({result.rejection_reason})")
        if result.revision_error is not None:
            parts.append(f"revision failed ({result.revision_error})")
        self._print(", ".join(parts), markup=False)

    def log_held_out_iteration(self, result: IterationResult) -> None:
        """One line: held-out accuracy and the worst criterion."""
        line = f"iteration {result.iteration}: held-out accuracy {result.quality_score:.1%}"
        diagnostics = result.held_out_diagnostics
        if diagnostics is not None and diagnostics.per_criterion:
            worst = min(diagnostics.per_criterion, key=lambda c: c.accuracy)
            line += f", worst criterion {worst.criterion_name} ({worst.accuracy:.0%})"
        self._print(line, markup=False)

    def log_issues_table(self, issues: Sequence[IssueDetail], *, rubric: Rubric | None = None) -> None:
        """The issues as a table (kind, meta-criterion, feedback); ``rubric`` is accepted for
        AutoRubric's signature."""
        if not self.enabled:
            return
        if not issues:
            self.console.print("no issues found")
            return
        from rich.table import Table

        table = Table(title=f"{len(issues)} issue{'' if len(issues) == 1 else 's'}")
        for column in ("meta-criterion", "kind", "feedback"):
            table.add_column(column)
        for issue in issues:
            table.add_row(issue.criterion_name, "anti-pattern" if issue.is_antipattern else "quality gap",
                          issue.feedback)
        self.console.print(table)

    def log_rubric(self, rubric: Rubric, iteration: int) -> None:
        """The rubric's criteria, numbered, with weights."""
        if not self.enabled:
            return
        from rich.table import Table

        table = Table(title=f"rubric of iteration {iteration}")
        for column in ("#", "weight", "requirement"):
            table.add_column(column)
        for i, c in enumerate(rubric.rubric, 1):
            table.add_row(str(i), f"{c.weight:+g}", c.requirement)
        self.console.print(table)

    def log_rubric_diff(self, prev_rubric: Rubric, curr_rubric: Rubric, iteration: int) -> None:
        """What changed between two rubrics, as a unified diff of their criterion lines."""
        if not self.enabled:
            return
        diff = list(difflib.unified_diff(rubric_lines(prev_rubric), rubric_lines(curr_rubric),
                                         f"iteration {iteration - 1}", f"iteration {iteration}", lineterm=""))
        from rich.text import Text

        text = Text()
        for line in diff or [f"rubric of iteration {iteration}: unchanged"]:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
            text.append(line + "\n", style=style)
        self.console.print(text)

    def log_convergence(self, reason: str) -> None:
        """Why the loop stopped."""
        self._print(f"stopped: {reason}", markup=False)

    def print_summary(self, iterations: Sequence[IterationResult], convergence_reason: str, total_cost: float,
                      artifacts_dir: Path | None) -> None:
        """A table of the iterations, then the stop reason, cost and artifacts folder."""
        if not self.enabled:
            return
        from rich.table import Table

        table = Table(title="rubric improvement")
        for column in ("iteration", "quality", "agreement", "issues", "fixed", "new", "status"):
            table.add_column(column)
        for it in iterations:
            status = ("revision failed" if it.revision_error else "accepted") if it.accepted else \
                f"rejected: {it.rejection_reason}"
            table.add_row(str(it.iteration), f"{it.quality_score:.1%}",
                          "n/a" if it.agreement is None else f"{it.agreement:.0%}", str(len(it.issues)),
                          str(len(it.issues_fixed)), str(len(it.issues_introduced)), status)
        self.console.print(table)
        self._footer(convergence_reason, total_cost, artifacts_dir)

    def print_held_out_summary(self, iterations: Sequence[IterationResult], convergence_reason: str,
                               total_cost: float, artifacts_dir: Path | None) -> None:
        """A table of the held-out iterations (accuracy, worst criterion), then the footer."""
        if not self.enabled:
            return
        from rich.table import Table

        table = Table(title="held-out rubric improvement")
        for column in ("iteration", "accuracy", "worst criterion"):
            table.add_column(column)
        for it in iterations:
            worst = "n/a"
            if it.held_out_diagnostics is not None and it.held_out_diagnostics.per_criterion:
                w = min(it.held_out_diagnostics.per_criterion, key=lambda c: c.accuracy)
                worst = f"{w.criterion_name} ({w.accuracy:.0%})"
            table.add_row(str(it.iteration), f"{it.quality_score:.1%}", worst)
        self.console.print(table)
        self._footer(convergence_reason, total_cost, artifacts_dir)

    def _footer(self, convergence_reason: str, total_cost: float, artifacts_dir: Path | None) -> None:
        self.console.print(f"stopped: {convergence_reason}", markup=False)
        if total_cost > 0:
            self.console.print(f"cost: ${total_cost:.4f}")
        if artifacts_dir is not None:
            self.console.print(f"artifacts: {artifacts_dir}", markup=False)
