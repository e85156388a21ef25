"""``autorubric-local runs``: the runs of a results database, newest first."""

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
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per run (JSON Lines).")
def runs(db_path: Path, as_json: bool) -> None:
    """List the runs in the results database: name, id, when, judges, items done/total,
    status, mean score and headline metrics (when `metrics` was run).

    Example:

        autorubric-local runs --db results.sqlite
    """
    store = open_store(db_path)
    try:
        rows = [_summary(store, row) for row in store.run_summaries()]
    finally:
        store.close()
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    if not rows:
        click.echo(f"{db_path}: no runs yet", err=True)
        return
    plain_console().print(_table(rows))


def _summary(store: Any, row: dict[str, Any]) -> dict[str, Any]:
    """One run's line: the ``run_summaries`` view's row, its judges' models, and its latest metrics."""
    judges = json.loads(row.pop("judges_json") or "[]")
    metrics = json.loads(store.latest_metrics_json(row["run_id"]) or "{}")
    return {
        **row,
        "judges": [judge.get("model_id") or judge.get("model") for judge in judges],
        "metrics": {label: metrics.get(field) for field, label in HEADLINE_METRICS if metrics.get(field) is not None},
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
