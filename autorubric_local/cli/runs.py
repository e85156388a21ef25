"""``autorubric-local runs``: the runs of a results database, newest first, then its sweeps and
comparisons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from autorubric_local.cli.common import open_store, plain_console

HEADLINE_METRICS: tuple[tuple[str, str], ...] = (("criterion_accuracy", "accuracy"), ("mean_kappa", "kappa"))
"""Fields of the latest stored ``metrics`` (``MetricsResult``) shown beside a run, with their labels."""


@click.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("results.sqlite"),
              show_default=True, help="The results database.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object per run, then per sweep (JSON Lines; \"kind\": \"run\", \"sweep\" "
                   "or \"comparison\").")
def runs(db_path: Path, as_json: bool) -> None:
    """List the runs in the results database: name, id, when, judges, items done/total,
    status, mean score and headline metrics (when `metrics` was run); then its sweeps
    (`sweep`, `sweep-select`) and comparisons (`compare`): name, id, kind, when, judges,
    items, status and Grade Scores. `autorubric-local show NAME` opens a run or a sweep.

    Example:

        autorubric-local runs --db results.sqlite
    """
    store = open_store(db_path)
    try:
        rows = [_summary(store, row) for row in store.run_summaries()]
        sweeps = [_sweep_summary(row) for row in store.sweep_summaries()]
    finally:
        store.close()
    if as_json:
        for row in rows + sweeps:
            click.echo(json.dumps(row))
        return
    if not rows and not sweeps:
        click.echo(f"{db_path}: no runs yet", err=True)
        return
    console = plain_console()
    if rows:
        console.print(_table(rows))
    if sweeps:
        console.print(_sweeps_table(sweeps))


def _summary(store: Any, row: dict[str, Any]) -> dict[str, Any]:
    """One run's line: ``kind`` ``run``, the ``run_summaries`` view's row, its judges' models,
    and its latest metrics."""
    judges = json.loads(row.pop("judges_json") or "[]")
    metrics = json.loads(store.latest_metrics_json(row["run_id"]) or "{}")
    return {
        "kind": "run",
        **row,
        "judges": [judge.get("model_id") or judge.get("model") for judge in judges],
        "metrics": {label: metrics.get(field) for field, label in HEADLINE_METRICS if metrics.get(field) is not None},
    }


def _sweep_summary(row: dict[str, Any]) -> dict[str, Any]:
    """One sweep's line: ``kind`` ``comparison`` for a comparison, else ``sweep``, with the
    sweep's own kind as ``sweep_kind`` (rubric / selection / comparison); the rest is
    :meth:`~autorubric_local.store.Store.sweep_summaries`' row, with its judges' models and
    the criteria it was limited to (None: every one)."""
    judges = json.loads(row.pop("judges_json") or "[]")
    settings = json.loads(row.pop("config_json") or "{}")
    sweep_kind = row.pop("kind")
    return {
        "kind": "comparison" if sweep_kind == "comparison" else "sweep",
        "sweep_kind": sweep_kind,
        **row,
        "judges": [judge.get("model_id") or judge.get("model") for judge in judges],
        "criteria": settings.get("criteria"),
    }


def _table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="Runs, newest first", caption="metrics: the latest `autorubric-local metrics` of the run")
    for column, justify in (("run", "left"), ("id", "left"), ("started (UTC)", "left"), ("judges", "left"),
                            ("items", "right"), ("status", "left"), ("mean score", "right"), ("metrics", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        failed = f" ({row['items_failed']} failed)" if row["items_failed"] else ""
        mean = "" if row["mean_score"] is None else f"{row['mean_score']:.3f}"
        metrics = ", ".join(f"{label} {value:.3f}" for label, value in row["metrics"].items())
        table.add_row(escape(row["run_name"] or ""), row["run_id"], (row["started_utc"] or "")[:19],
                      escape(", ".join(str(j) for j in row["judges"])),
                      f"{row['items_done']}/{row['total_items'] or 0}{failed}", row["status"], mean, metrics)
    return table


def _grade_scores(row: dict[str, Any]) -> str:
    """A sweep's Grade Scores in one cell: the one, or the range over judges and criteria."""
    if row["kind"] == "comparison":
        return f"`ranking {row['sweep_name']}`"
    scores = [s["grade_score"] for s in row["grade_scores"] if s["grade_score"] is not None]
    if not scores:
        return ""
    if len(scores) == 1:
        return f"{scores[0]:.3f}"
    return f"{min(scores):.3f}-{max(scores):.3f} ({len(scores)})"


def _sweeps_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="Sweeps and comparisons, newest first",
                  caption="Grade Score: of the base options, the one or the range (of n) over judges and criteria "
                          "(1: the same option in every order; 0: always the same position); "
                          "`autorubric-local show NAME` prints a sweep's table")
    for column, justify in (("sweep", "left"), ("id", "left"), ("kind", "left"), ("started (UTC)", "left"),
                            ("judges", "left"), ("items", "right"), ("status", "left"), ("Grade Score", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        failed = f" ({row['rotations_failed']} rotations failed)" if row["rotations_failed"] else ""
        kind = "comparison" if row["kind"] == "comparison" else f"{row['sweep_kind']} sweep"
        if row["criteria"]:
            kind += f" ({', '.join(row['criteria'])})"
        table.add_row(escape(row["sweep_name"] or ""), row["sweep_id"], escape(kind), (row["started_utc"] or "")[:19],
                      escape(", ".join(str(j) for j in row["judges"])),
                      f"{row['items_done']}/{row['total_items'] or '?'}{failed}", row["status"],
                      escape(_grade_scores(row)))
    return table
