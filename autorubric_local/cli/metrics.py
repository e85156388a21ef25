"""``autorubric-local metrics``: agreement of a graded run with its ground truth."""

from __future__ import annotations

from pathlib import Path

import click

from autorubric_local.cli.common import fail, label_options, label_warnings, run_and_database


@click.command()
@click.argument("run_arg", metavar="[RUN]", required=False)
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The results database.  [default: results.sqlite]")
@click.option("--run", "run_option", default=None, metavar="RUN",
              help="Deprecated: give the run as the argument (kept for 'metrics DB --run RUN').")
@click.option("--bootstrap", is_flag=True, help="Add bootstrap confidence intervals.")
@click.option("--n-bootstrap", default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=None, help="Bootstrap seed.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.9,
              show_default=True,
              help="Coverage of the bootstrap and bias intervals (the bias counts as significant at p < 1 - this), "
                   "as estimate's; the Python compute_metrics keeps AutoRubric's 0.95.")
@click.option("--per-judge", is_flag=True, help="Add metrics for each ensemble judge.")
@click.option("--cannot-assess", type=click.Choice(["exclude", "as_category", "as_unmet"]),
              default="exclude", show_default=True, help="How CANNOT_ASSESS pairs count.")
@click.option("--na-mode", type=click.Choice(["exclude", "as_category", "as_unmet"]),
              default="exclude", show_default=True, help="How multi-choice NA pairs count.")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Write PNG plots (confusion matrices, reliability, scores) here.")
@click.option("--no-save", is_flag=True, help="Do not store the metrics in the database.")
@label_options
def metrics(run_arg: str | None, db_path: Path | None, run_option: str | None, bootstrap: bool, n_bootstrap: int,
            seed: int | None, confidence: float, per_judge: bool, cannot_assess: str, na_mode: str, as_json: bool,
            plot_dir: str | None, no_save: bool, labels_file: Path | None, label_source: str | None) -> None:
    """Compare the graded RUN (default: the latest run) in --db with its ground truth and print
    the metrics.

    The ground truth is the dataset's own, or human labels from --labels FILE (the file
    `estimate --labels` takes) or --label-source (labels stored earlier); an item counts when
    every criterion of it is labelled. The metrics are also stored in the database's
    ``metrics`` table (unless --no-save). Intervals are 90% by default, as estimate's
    (--confidence).

    RUN is a run name or id. Without --db, a RUN that is an existing file is read as the
    deprecated `metrics DB --run RUN` form (kept for one release, with a note): give --db to
    name a run that is also a file's path.

    Example:

        autorubric-local metrics essays-v1 --db results.sqlite --bootstrap --plot plots/

    With a labels file:

        autorubric-local metrics essays-v1 --db results.sqlite --labels labelled.jsonl
    """
    run, db_file = run_and_database("metrics", run_arg, db_path, run_option)
    from autorubric_local.analyses import open_run
    from autorubric_local.core.errors import AutorubricError

    try:
        with label_warnings():
            analysed = open_run(db_file, run, labels_file=labels_file, label_source=label_source)
            m = analysed.metrics(save=not no_save, bootstrap=bootstrap, n_bootstrap=n_bootstrap,
                                 confidence_level=confidence, per_judge=per_judge, cannot_assess=cannot_assess,
                                 na_mode=na_mode, seed=seed)
            written = analysed.plots(m, plot_dir) if plot_dir else []
    except AutorubricError as e:
        raise fail(e) from None
    click.echo(m.model_dump_json(indent=2) if as_json else m.summary())
    for path in written:
        click.echo(f"wrote {path}", err=True)
