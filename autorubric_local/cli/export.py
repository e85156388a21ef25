"""``autorubric-local export RUN``: a run's results as CSV, JSON Lines or Parquet (pandas)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from autorubric_local.cli.common import open_run

FORMATS = ("csv", "jsonl", "parquet")
LEVELS = ("judgment", "criterion", "item")


@click.command()
@click.argument("run")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("results.sqlite"),
              show_default=True, help="The results database.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="csv", show_default=True)
@click.option("--per", "level", type=click.Choice(LEVELS), default="judgment", show_default=True,
              help="One row per judgment (each judge's vote in each option order), per item and criterion "
                   "(final verdicts), or per item (score, and each criterion's verdict as a column).")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here (default: standard output; Parquet needs --out).")
def export(run: str, db_path: Path, fmt: str, level: str, out_path: Path | None) -> None:
    """Export RUN (a run name or id) from the results database.

    Columns are those of the database's views (see the README, "Querying results in SQL"):
    judge_votes for --per judgment, criterion_results for --per criterion.

    Example:

        autorubric-local export battery-v1 --format parquet --per item --out battery.parquet
    """
    import pandas as pd

    from autorubric_local.runner.inspection import (
        criterion_rows,
        item_rows,
        judgment_rows,
    )

    if fmt == "parquet" and out_path is None:
        raise click.UsageError("--format parquet needs --out FILE (it is a binary format)")
    store, row = open_run(db_path, run)
    try:
        if level == "judgment":
            rows = judgment_rows(store, row["id"])
        elif level == "criterion":
            rows = criterion_rows(store, row)
        else:
            rows = item_rows(store, row)
    finally:
        store.close()
    frame = pd.DataFrame.from_records(rows)
    target = out_path if out_path is not None else sys.stdout
    if fmt == "csv":
        frame.to_csv(target, index=False)
    elif fmt == "jsonl":
        frame.to_json(target, orient="records", lines=True, force_ascii=False)
        if out_path is None:
            click.echo("")
    else:
        frame.to_parquet(out_path, index=False)
    if out_path is not None:
        click.echo(f"wrote {len(frame)} rows to {out_path}", err=True)
