"""``autorubric-local metrics``: agreement of a graded run with its ground truth."""

from __future__ import annotations

import click

from autorubric_local.cli.common import fail


@click.command()
@click.argument("db", type=click.Path(exists=True))
@click.option("--run", "run", default=None, help="Run name or id (default: the latest run).")
@click.option("--bootstrap", is_flag=True, help="Add bootstrap confidence intervals.")
@click.option("--n-bootstrap", default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=None, help="Bootstrap seed.")
@click.option("--per-judge", is_flag=True, help="Add metrics for each ensemble judge.")
@click.option("--cannot-assess", type=click.Choice(["exclude", "as_category", "as_unmet"]),
              default="exclude", show_default=True, help="How CANNOT_ASSESS pairs count.")
@click.option("--na-mode", type=click.Choice(["exclude", "as_category", "as_unmet"]),
              default="exclude", show_default=True, help="How multi-choice NA pairs count.")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Write PNG plots (confusion matrices, reliability, scores) here.")
@click.option("--no-save", is_flag=True, help="Do not store the metrics in the database.")
@click.option("--labels", "labels_file", type=click.Path(dir_okay=False), default=None,
              help="Human labels to compare with instead of the dataset's ground truth: JSONL of {\"id\", "
                   "\"ground_truth\": [...]} or a Label Studio export, as estimate --labels takes (stored in DB).")
@click.option("--label-source", default=None,
              help="Labels stored earlier from this source (a labels file's path, e.g. by estimate --labels).")
def metrics(db: str, run: str | None, bootstrap: bool, n_bootstrap: int, seed: int | None,
            per_judge: bool, cannot_assess: str, na_mode: str, as_json: bool,
            plot_dir: str | None, no_save: bool, labels_file: str | None, label_source: str | None) -> None:
    """Compare a graded run in DB with its ground truth and print the metrics.

    The ground truth is the dataset's own, or human labels from --labels FILE (the file
    `estimate --labels` takes) or --label-source (labels stored earlier); an item counts when
    every criterion of it is labelled. The metrics are also stored in DB's ``metrics`` table
    (unless --no-save).

    Example:

        autorubric-local metrics results.sqlite --run essays-v1 --bootstrap --plot plots/

    With a labels file:

        autorubric-local metrics results.sqlite --run essays-v1 --labels labelled.jsonl
    """
    if labels_file is not None or label_source is not None:
        _metrics_of_labels(db, run, labels_file, label_source, bootstrap=bootstrap, n_bootstrap=n_bootstrap,
                           per_judge=per_judge, cannot_assess=cannot_assess, na_mode=na_mode, seed=seed,
                           as_json=as_json, plot_dir=plot_dir, no_save=no_save)
        return
    from autorubric_local.core.errors import AutorubricError
    from autorubric_local.metrics import compute_metrics, save_metrics, write_plots
    from autorubric_local.runner import open_graded_run
    from autorubric_local.store import open_db

    try:
        with open_graded_run(db, run) as (result, dataset):  # read a page at a time (issue 33)
            m = compute_metrics(result, dataset, bootstrap=bootstrap, n_bootstrap=n_bootstrap,
                                per_judge=per_judge, cannot_assess=cannot_assess, na_mode=na_mode,
                                seed=seed)
            if not no_save and result.run_id is not None:
                save_metrics(open_db(result.db_path or db), result.run_id, m)
            written = write_plots(m, plot_dir, result, dataset) if plot_dir else []
    except AutorubricError as e:
        raise fail(e) from None
    click.echo(m.model_dump_json(indent=2) if as_json else m.summary())
    for path in written:
        click.echo(f"wrote {path}", err=True)


def _metrics_of_labels(db: str, run: str | None, labels_file: str | None, label_source: str | None, *,
                       as_json: bool, plot_dir: str | None, no_save: bool, **options: object) -> None:
    """``metrics`` against labels from a file or a stored source (the run is read whole)."""
    from autorubric_local.core.errors import AutorubricError
    from autorubric_local.estimates.api import labelled_dataset, load_run, save_labels
    from autorubric_local.metrics import compute_metrics, save_metrics, write_plots
    from autorubric_local.store import open_db

    try:
        loaded = load_run(db, run, labels_file=labels_file, label_source=label_source, selection=None)
        dataset, partial = labelled_dataset(loaded)
        m = compute_metrics(loaded.result, dataset, **options)  # type: ignore[arg-type]
        save_labels(db, loaded)
        if not no_save and loaded.result.run_id is not None:
            save_metrics(open_db(loaded.result.db_path or db), loaded.result.run_id, m)
        written = write_plots(m, plot_dir, loaded.result, dataset) if plot_dir else []
    except AutorubricError as e:
        raise fail(e) from None
    if partial:
        click.echo(f"note: {partial} partly labelled item(s) left out (metrics compare whole items)", err=True)
    click.echo(m.model_dump_json(indent=2) if as_json else m.summary())
    for path in written:
        click.echo(f"wrote {path}", err=True)
