"""``autorubric-local export RUN``: a run's results as CSV, JSON Lines or Parquet, written a page of
items at a time (:mod:`autorubric_local.runner.export_files`)."""

from __future__ import annotations

import sys
from contextlib import nullcontext
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
    from autorubric_local.runner import export_files
    from autorubric_local.runner.inspection import (
        criterion_columns,
        criterion_row_pages,
        item_columns,
        item_row_pages,
        judgment_columns,
        judgment_row_pages,
        storage_classes,
    )

    if fmt == "parquet" and out_path is None:
        raise click.UsageError("--format parquet needs --out FILE (it is a binary format)")
    store, row = open_run(db_path, run)
    try:
        if level == "judgment":
            columns, pages = judgment_columns(store), lambda: judgment_row_pages(store, row["id"])
        elif level == "criterion":
            columns, pages = criterion_columns(store), lambda: criterion_row_pages(store, row)
        else:
            columns, pages = item_columns(store, row), lambda: item_row_pages(store, row)
        if fmt == "parquet":
            assert out_path is not None
            schema = export_files.arrow_schema(storage_classes(columns, pages()))  # a first pass: the types
            count = export_files.write_parquet(out_path, schema, pages())
        else:
            write = export_files.write_csv if fmt == "csv" else export_files.write_jsonl
            with (open(out_path, "w", encoding="utf-8", newline="") if out_path is not None
                  else nullcontext(sys.stdout)) as target:
                count = write(target, columns, pages())
    finally:
        store.close()
    if out_path is not None:
        click.echo(f"wrote {count} rows to {out_path}", err=True)
