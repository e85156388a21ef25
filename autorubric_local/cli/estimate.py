"""``autorubric-local estimate``: judge-corrected estimates of a graded run with confidence
intervals (prediction-powered inference) from a few human labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from autorubric_local.cli.common import fail, label_options, label_warnings, plain_console

METHOD_CHOICES = ("classical", "judge", "ppi", "rogan_gladen")


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or value != value else f"{value:.{digits}f}"


def _table(rows: list[dict[str, Any]], title: str) -> tuple[Table, list[str]]:
    """The estimates table and its footnotes: each distinct note once, referred to by number
    in the ``notes`` column (a note repeated on every row made the table unreadable)."""
    table = Table(title=title, caption="judge: the judge alone, biased whenever it is (no interval); "
                                       "ppi: PPI++ (judge probabilities corrected by the labels)")
    for column, justify in (("target", "left"), ("method", "left"), ("estimate", "right"),
                            ("interval", "right"), ("labelled", "right"), ("unlabelled", "right"),
                            ("n effective", "right"), ("notes", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    footnotes: list[str] = []
    for row in rows:
        interval = ("-" if row["ci_low"] is None else f"[{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]")
        refs = []
        for note in filter(None, (row.get("note") or "").split("; ")):
            if note not in footnotes:
                footnotes.append(note)
            refs.append(str(footnotes.index(note) + 1))
        table.add_row(escape(row["target"]), row["method"], _fmt(row["estimate"]), interval,
                      str(row["n_labelled"]), str(row["n_unlabelled"]), _fmt(row.get("n_effective"), 1),
                      ",".join(refs))
    return table, [f"[{k}] {note}" for k, note in enumerate(footnotes, 1)]


@click.command()
@click.argument("run")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("results.sqlite"),
              show_default=True, help="The results database.")
@label_options
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.9,
              show_default=True, help="Coverage of each two-sided interval.")
@click.option("--method", "methods_wanted", type=click.Choice(METHOD_CHOICES), multiple=True,
              help="Methods to run (repeatable; default all).")
@click.option("--target", "targets", multiple=True,
              help="Targets to estimate: a criterion name, NAME=OPTION, or score (repeatable; default all).")
@click.option("--cannot-assess", type=click.Choice(["exclude", "as_unmet"]), default="exclude", show_default=True,
              help="How a human CANNOT_ASSESS counts in a criterion's share of MET.")
@click.option("--selection", default="latest", show_default=True,
              help="The label selection whose inclusion probabilities weight the estimates: latest (if the "
                   "run has one), an id, or none (labelled items taken as a uniform sample).")
@click.option("--compare", "compare_run", default=None,
              help="Estimate RUN minus this run per target (paired when both graded the same items).")
@click.option("--compare-db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The database of --compare (default --db).")
@click.option("--compare-labels", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Labels file for the --compare run.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per estimate (JSON Lines).")
def estimate(run: str, db_path: Path, labels_file: Path | None, label_source: str | None, confidence: float,
             methods_wanted: tuple[str, ...], targets: tuple[str, ...], cannot_assess: str, selection: str,
             compare_run: str | None, compare_db: Path | None, compare_labels: Path | None, as_json: bool) -> None:
    """Estimate, for the graded RUN (name or id), each criterion's share of MET (multi-choice:
    mean option value and each option's share) and the mean rubric score, with confidence
    intervals, from the judge's probabilities on every item and human labels on some.

    Methods: classical (labels only), judge (judge only; biased, no interval), ppi (PPI++,
    Angelopoulos et al. 2023), rogan_gladen (binary criteria). Labels are the dataset's
    ground truth unless --labels is given. After `label select`, the selection's inclusion
    probabilities weight the estimates (active inference, Zrnic & Candes 2024).

    Example:

        autorubric-local estimate ricechem-q1 --db results.sqlite --labels labels.jsonl --json

    Two systems graded on the same items:

        autorubric-local estimate system-a --compare system-b --db results.sqlite
    """
    from autorubric_local.core.errors import AutorubricError
    from autorubric_local.estimates.api import METHODS, estimate_run
    from autorubric_local.estimates.design import compare_runs

    if not db_path.is_file():
        raise click.ClickException(f"{db_path}: no such database")
    picked: Any = None if selection.lower() == "none" else selection
    try:
        with label_warnings():
            if compare_run is not None:
                if picked not in (None, "latest") or label_source is not None:
                    raise click.UsageError("--compare takes no --selection or --label-source")
                rows = compare_runs(db_path, run, compare_run, db_b=compare_db, labels_a=labels_file,
                                    labels_b=compare_labels, confidence=confidence, targets=targets or None,
                                    cannot_assess=cannot_assess)
                if methods_wanted:
                    rows = [r for r in rows if r.method in methods_wanted]
                title = f"{run} minus {compare_run} ({confidence:.0%} intervals)"
            else:
                rows = estimate_run(db_path, run, labels_file=labels_file, label_source=label_source,
                                    confidence=confidence, cannot_assess=cannot_assess, selection=picked,
                                    methods_wanted=methods_wanted or METHODS, targets=targets or None)
                title = f"Estimates for {run} ({confidence:.0%} intervals, {rows[0].sampling if rows else 'uniform'})"
    except AutorubricError as e:
        raise fail(e) from None
    data = [r.to_json() for r in rows]
    if as_json:
        for row in data:
            click.echo(json.dumps(row))
        return
    table, footnotes = _table(data, title)
    console = plain_console()
    console.print(table)
    for line in footnotes:
        console.print(escape(line), soft_wrap=True)
