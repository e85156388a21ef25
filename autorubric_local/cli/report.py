"""``autorubric-local report``: a run's static HTML report (self-contained pages: the summary and
the first items in ``index.html``, the other items on linked pages)."""

from __future__ import annotations

from pathlib import Path

import click

from autorubric_local.cli.common import fail


@click.command()
@click.argument("run")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("results.sqlite"), show_default=True, help="Results database to read.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to write index.html into [default: report-<run name>].")
@click.option("--per-page", type=click.IntRange(min=1), default=None,
              help="Items a page [default: 100]; later items go to items-2.html, items-3.html, ...")
def report(run: str, db_path: Path, out_dir: Path | None, per_page: int | None) -> None:
    """Write a static HTML report of RUN (a run name or id) and print its path.

    index.html holds, with its figures embedded: run settings, score distribution, verdict
    rates per criterion, agreement with the ground truth (when the items have it), the
    database's position-bias sweeps, and the first 100 items with each judgment and its
    prompt. The other items are on pages items-2.html, items-3.html, ... (100 each, linked),
    so a run of 10^5 items opens in a browser.

    Example:

        autorubric-local report essays-v1 --db results.sqlite --out report-essays-v1/
    """
    from autorubric_local.core.errors import AutorubricError
    from autorubric_local.report import write_report

    try:
        page = write_report(db_path, run, out_dir, per_page=per_page)
    except AutorubricError as e:
        raise fail(e) from None
    click.echo(str(page))
