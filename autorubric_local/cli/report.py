"""``autorubric-local report``: a run's static HTML report (self-contained pages: the summary and
the first items in ``index.html``, the other items on linked pages), or a comparison's own page."""

from __future__ import annotations

from pathlib import Path

import click

from autorubric_local.cli.common import fail
from autorubric_local.core.reports import OFF_LABEL_THRESHOLD


@click.command()
@click.argument("run")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("results.sqlite"), show_default=True, help="Results database to read.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to write index.html into [default: report-<run name>].")
@click.option("--per-page", type=click.IntRange(min=1), default=None,
              help="Items a page [default: 100]; later items go to items-2.html, items-3.html, ...")
@click.option("--label-source", default=None,
              help="Human labels to show: 'dataset' (the dataset's ground truth) or labels stored by "
                   "estimate/metrics --labels (the labels file's path) [default: the dataset's, else the "
                   "latest stored].")
@click.option("--off-label-threshold", type=click.FloatRange(0.0, 1.0), default=OFF_LABEL_THRESHOLD, show_default=True,
              help="Warn about a criterion when a judgment put more than this share of its first-step "
                   "probability outside the allowed labels (as grade flags it).")
def report(run: str, db_path: Path, out_dir: Path | None, per_page: int | None, label_source: str | None,
           off_label_threshold: float) -> None:
    """Write a static HTML report of RUN (a run or comparison name or id) and print its path.

    A comparison (from compare; a run of the same name wins) gets its own page: per judge and
    question the Bradley-Terry ranking with 90% intervals and win rates, the win-rate heat map,
    position consistency with its interval and the slot-1 / slot-2 shares of the conflicts,
    then every pair's judgment, with the settings (judges, questions, data hash, scale) last.
    --per-page, --label-source and --off-label-threshold apply to runs only.

    index.html opens on the results, with its figures embedded: a summary line, warnings (a
    criterion whose judgments put mass outside the allowed labels), the score distribution,
    verdict rates per criterion with its weight, agreement with human labels (where the run
    has them: the dataset's ground truth, or labels imported by estimate/metrics --labels),
    the database's position-bias sweeps, the run settings, then the first 100 items with each
    judgment, its prompt and the human label beside the verdict. The other items are on pages
    items-2.html, items-3.html, ... (100 each, linked), so a run of 10^5 items opens in a
    browser.

    Example:

        autorubric-local report essays-v1 --db results.sqlite --out report-essays-v1/

    With the labels given to estimate --labels earlier:

        autorubric-local report essays-v1 --label-source labelled.jsonl

    A comparison stored by compare --run cmp:

        autorubric-local report cmp --out report-cmp/
    """
    from autorubric_local.core.errors import AutorubricError
    from autorubric_local.report import write_report

    try:
        page = write_report(db_path, run, out_dir, per_page=per_page, label_source=label_source,
                            off_label_threshold=off_label_threshold)
    except AutorubricError as e:
        raise fail(e) from None
    click.echo(str(page))
