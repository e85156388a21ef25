"""What ``autorubric-local grade`` prints once a run is done: the items (a table, a JSON array or
JSON lines), a summary line, the off-label line, and the failure counts behind its exit status.

Everything is read back from the run's database a page at a time
(:meth:`~autorubric_local.runner.stored.StoredRun.graded`), so printing a run of 10^5 items
holds one page of reports, not the run; a table is printed in parts of :data:`TABLE_ITEMS`
items, each with the columns its own items need.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from autorubric_local.cli.common import plain_console
from autorubric_local.core.reports import (
    OFF_LABEL_THRESHOLD,
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    JudgeVote,
    MultiChoiceJudgeVote,
)
from autorubric_local.runner.results import timing_stats
from autorubric_local.runner.stored import GradedReport, StoredRun

DEFAULT_OFF_LABEL_THRESHOLD = OFF_LABEL_THRESHOLD
"""Default of ``--off-label-threshold``: a judgment whose off-label mass exceeds it is flagged."""

TABLE_ITEMS = 1000
"""Items per printed table: a larger run prints several tables, one after the other."""


@dataclass
class GradeTally:
    """Counts over a run's items, gathered while they are printed.

    Attributes
    ----------
    threshold : float
        Off-label mass above which an answered judgment is flagged (``--off-label-threshold``).
    items, failed_items : int
        Graded items, and those whose report has an ``error``.
    failed_judgments : int
        Judges' votes (binary or multi-choice) with an ``error``.
    answered, off_label_known, off_label_flagged : int
        Votes without an error; those whose backend reported an off-label mass; those above the
        threshold.
    engine_seconds : list of float
        Each item's engine seconds (for the summary's percentiles).
    """

    threshold: float
    items: int = 0
    failed_items: int = 0
    failed_judgments: int = 0
    answered: int = 0
    off_label_known: int = 0
    off_label_flagged: int = 0
    engine_seconds: list[float] = field(default_factory=list)

    def add(self, graded: GradedReport) -> None:
        report = graded.report
        self.items += 1
        self.failed_items += report.error is not None
        self.engine_seconds.append(graded.engine_seconds)
        for vote in _votes(report):
            if vote.error is not None:
                self.failed_judgments += 1
                continue
            self.answered += 1
            if vote.off_label_mass is not None:
                self.off_label_known += 1
                self.off_label_flagged += vote.off_label_mass > self.threshold

    def off_label_line(self) -> str | None:
        """One line: how many answered judgments put more than the threshold of the first-step
        probability outside the allowed labels, out of those whose backend reported it; None when
        none did (the line would say nothing)."""
        if not self.off_label_known:
            return None
        line = (f"{self.off_label_flagged} of {self.off_label_known} judgments put > {_percent(self.threshold)} of the "
                "first-step probability outside the allowed labels")
        unknown = self.answered - self.off_label_known
        return line + (f" ({unknown} more did not report it)" if unknown else "")


def print_graded(
    stored: StoredRun, *, as_json: bool, as_jsonl: bool, streamed: set[str], threshold: float
) -> GradeTally:
    """Print every graded item of ``stored`` to stdout (a JSON array with ``as_json``, the JSON
    lines not streamed yet with ``as_jsonl``, else tables) and return the tally."""
    tally = GradeTally(threshold)

    def counted() -> Iterator[GradedReport]:
        for graded in stored.graded():
            tally.add(graded)
            yield graded

    if as_json:
        _print_json_array(counted())
    elif as_jsonl:
        for graded in counted():
            stream_json_lines([(graded.item_id, graded.report)], streamed)
    else:
        page: list[tuple[str, EnsembleEvaluationReport]] = []
        for graded in counted():
            page.append((graded.item_id, graded.report))
            if len(page) == TABLE_ITEMS:
                plain_console().print(_results_table(page, threshold))
                page = []
        if page or not tally.items:
            plain_console().print(_results_table(page, threshold))
    return tally


def _print_json_array(graded: Iterator[GradedReport]) -> None:
    """``json.dumps([...], indent=2)`` of the items, written one item at a time."""
    first = True
    for item in graded:
        body = textwrap.indent(json.dumps(_item_json(item.item_id, item.report), indent=2), "  ")
        click.echo(("[\n" if first else ",\n") + body, nl=False)
        first = False
    click.echo("[]" if first else "\n]")


def summary_line(stored: StoredRun, tally: GradeTally, load_seconds: float, db_path: Path) -> str:
    """One line: items, judgments, wall time, rates, per-item engine time, where the results are."""
    stats = timing_stats(tally.engine_seconds, stored.wall_seconds, stored.total_judgments)
    failed = f" ({tally.failed_items} failed)" if tally.failed_items else ""
    resumed = f"; {stored.resumed_items} items from the checkpoint" if stored.resumed_items else ""
    return (
        f"run {stored.name} ({stored.run_id}): {tally.items} items{failed}, "
        f"{stored.total_judgments} judgments in {stats.total_duration_seconds:.1f} s wall "
        f"({stats.items_per_second:.2f} items/s, {stats.judgments_per_second:.1f} judgments/s; "
        f"engine time per item p50 {stats.p50_item_duration_seconds:.2f} s, "
        f"p95 {stats.p95_item_duration_seconds:.2f} s; judge load {load_seconds:.1f} s{resumed}); "
        f"results in {db_path}"
    )


def stream_json_lines(graded: Sequence[tuple[str, EnsembleEvaluationReport]], streamed: set[str]) -> None:
    """Print each item of ``graded`` not printed yet as one JSON line (``_item_json``), flushed."""
    for item_id, report in graded:
        if item_id not in streamed:
            streamed.add(item_id)
            click.echo(json.dumps(_item_json(item_id, report)))
    sys.stdout.flush()


def _votes(report: EnsembleEvaluationReport) -> list[JudgeVote | MultiChoiceJudgeVote]:
    """Every judge's vote on every criterion of ``report`` (one per judgment, as
    :class:`GradeTally` counts them; a vote over several option orders is one)."""
    return [vote for criterion in report.report or [] for vote in [*criterion.votes, *criterion.multi_choice_votes]]


def _percent(share: float) -> str:
    return f"{share * 100:g}%"


def _off_label_cell(criterion: EnsembleCriterionReport, threshold: float) -> str:
    """The largest known off-label mass among the criterion's votes, marked ``!`` above
    ``threshold``; empty when no vote reports one."""
    masses = [v.off_label_mass for v in [*criterion.votes, *criterion.multi_choice_votes] if v.off_label_mass is not None]
    if not masses:
        return ""
    worst = max(masses)
    return f"[bold red]{worst:.2f} ![/bold red]" if worst > threshold else f"{worst:.2f}"


def _verdict_cell(report: EnsembleCriterionReport) -> tuple[str, float | None]:
    probabilities = report.label_probabilities or {}
    if report.final_verdict is not None:
        label = report.final_verdict.value
        return label, probabilities.get(label)
    verdict = report.final_multi_choice_verdict
    if verdict is None or verdict.selected_label is None:
        return "n/a", None
    return verdict.selected_label, probabilities.get(verdict.selected_label)


def _results_table(
    graded: Sequence[tuple[str, EnsembleEvaluationReport]], off_label_threshold: float = DEFAULT_OFF_LABEL_THRESHOLD
) -> Table:
    """One row per item and criterion. An ``agree`` column (the share of the ensemble's judges
    whose vote is the final verdict, ``EnsembleCriterionReport.agreement``) is shown when some
    criterion has votes of more than one judge: with one judge it is always 1.00 and says
    nothing. An ``off-label`` column (the largest off-label mass of the criterion's judgments,
    ``!`` above ``off_label_threshold``) is added when any judgment reports one. The caption
    explains the columns shown."""
    show_agree = any(len(criterion.votes) + len(criterion.multi_choice_votes) > 1
                     for _, report in graded for criterion in report.report or [])
    show_mass = any(vote.off_label_mass is not None for _, report in graded for vote in _votes(report))
    show_reasons = any(criterion.final_reason for _, report in graded for criterion in report.report or [])
    notes = []
    if show_agree:
        notes.append("agree: the share of the ensemble's judges whose vote is the final verdict")
    if show_mass:
        notes.append(f"off-label: the largest first-step probability a judge put outside the allowed labels; "
                     f"! above {_percent(off_label_threshold)}")
    title = ("Grades: each criterion's verdict, the judges' P(verdict) and their agreement" if show_agree
             else "Grades: each criterion's verdict and the judge's P(verdict)")
    table = Table(title=title, caption="\n".join(notes) or None)
    columns = [("item", "left"), ("score", "right"), ("criterion", "left"), ("weight", "right"),
               ("verdict", "left"), ("P", "right")]
    if show_agree:
        columns.append(("agree", "right"))
    if show_mass:
        columns.append(("off-label", "right"))
    if show_reasons:
        columns.append(("explanation", "left"))
    for column, justify in columns:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for item_id, report in graded:
        score = "[red]failed[/red]" if report.score is None else f"{report.score:.3f}"
        for index, criterion in enumerate(report.report or []):
            name = escape(criterion.criterion.name or f"criterion {index + 1}")  # data, not markup
            weight = f"{criterion.criterion.weight:g}"
            if criterion.error:
                verdict, probability = f"[red]error: {escape(criterion.error)}[/red]", ""
            else:
                label, p = _verdict_cell(criterion)
                verdict, probability = escape(label), ("" if p is None else f"{p:.2f}")
            first = index == 0
            cells = [escape(item_id) if first else "", score if first else "", name, weight, verdict, probability]
            if show_agree:
                cells.append("" if criterion.error else f"{criterion.agreement:.2f}")
            if show_mass:
                cells.append(_off_label_cell(criterion, off_label_threshold))
            if show_reasons:
                cells.append(escape(criterion.final_reason))
            table.add_row(*cells)
        table.add_section()
    return table


def _item_json(item_id: str, report: EnsembleEvaluationReport) -> dict[str, Any]:
    criteria = []
    for criterion in report.report or []:
        label, p = _verdict_cell(criterion)
        criteria.append(
            {
                "name": criterion.criterion.name,
                "weight": criterion.criterion.weight,
                "verdict": None if criterion.error else label,
                "probability": p,
                "label_probabilities": criterion.label_probabilities,
                "explanation": criterion.final_reason or None,
                "error": criterion.error,
                "agreement": criterion.agreement,
                "votes": [_vote_json(v) for v in [*criterion.votes, *criterion.multi_choice_votes]],
            }
        )
    return {
        "item_id": item_id,
        "score": report.score,
        "raw_score": report.raw_score,
        "judge_scores": report.judge_scores,
        "mean_agreement": report.mean_agreement,
        "device_seconds": report.device_seconds,
        "error": report.error,
        "criteria": criteria,
    }


def _vote_json(vote: JudgeVote | MultiChoiceJudgeVote) -> dict[str, Any]:
    if isinstance(vote, JudgeVote):
        answer = None if vote.error else vote.verdict.value
    else:
        answer = None if vote.error else vote.selected_label
    return {
        "judge_id": vote.judge_id,
        "weight": vote.weight,
        "verdict": answer,
        "label_probabilities": vote.label_probabilities,
        "label_logprobs": vote.label_logprobs,
        "one_hot": vote.one_hot,
        "off_label_mass": vote.off_label_mass,
        "uncalibrated_label_probabilities": vote.uncalibrated_label_probabilities,
        "error": vote.error,
    }
