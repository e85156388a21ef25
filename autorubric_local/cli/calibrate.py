"""``autorubric-local calibrate``: fit per-criterion rules on a labelled run's training split."""

from __future__ import annotations

import json
from pathlib import Path

import click

from autorubric_local.cli.common import fail, label_options, label_warnings, run_and_database


@click.command()
@click.argument("run_arg", metavar="[RUN]", required=False)
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The results database.  [default: results.sqlite]")
@click.option("--run", "run_option", default=None, metavar="RUN",
              help="Deprecated: give the run as the argument (kept for 'calibrate DB --run RUN').")
@click.option("--method", type=click.Choice(["threshold", "platt", "isotonic"]), default="threshold",
              show_default=True,
              help="threshold: MET iff P(MET) >= t, t maximising Cohen's kappa; platt: logistic regression on "
                   "logit P(MET); isotonic: isotonic regression of P(MET).")
@click.option("--test-size", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=0.3,
              show_default=True, help="Share of the labelled items held out for testing.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split and of the folds.")
@click.option("--folds", "n_folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Folds of the cross-validation on the training items.")
@click.option("--no-stratify", is_flag=True, help="Draw the split at random (default: stratified by ground truth).")
@click.option("--json", "as_json", is_flag=True, help="Print the calibration and held-out report as JSON.")
@click.option("--no-save", is_flag=True, help="Do not store the calibration in the database.")
@label_options
def calibrate(run_arg: str | None, db_path: Path | None, run_option: str | None, method: str, test_size: float,
              seed: int, n_folds: int, no_stratify: bool, as_json: bool, no_save: bool, labels_file: Path | None,
              label_source: str | None) -> None:
    """Fit a decision rule per binary criterion on a training split of the graded, labelled RUN
    (default: the latest run) in --db, and print its agreement with the human labels on the
    held-out items, before and after.

    The human labels are the dataset's ground truth (stored with the run), or those of
    --labels FILE (the file `estimate --labels` takes) or --label-source (labels stored
    earlier); an item counts when every criterion of it is labelled. Only the training items
    are read to fit; the rules, the split and the report are stored in the database's
    ``threshold_calibrations`` table (unless --no-save). Stored verdicts are not changed.

    RUN is a run name or id. Without --db, a RUN that is an existing file is read as the
    deprecated `calibrate DB --run RUN` form (kept for one release, with a note): give --db to
    name a run that is also a file's path.

    Example:

        autorubric-local calibrate q1-smol --db q1.sqlite --test-size 0.3 --seed 0 --method threshold

    With a labels file:

        autorubric-local calibrate q1-smol --db q1.sqlite --labels labelled.jsonl
    """
    run, db_file = run_and_database("calibrate", run_arg, db_path, run_option)
    from autorubric_local.analyses import open_run
    from autorubric_local.core.errors import AutorubricError

    try:
        with label_warnings():
            analysed = open_run(db_file, run, labels_file=labels_file, label_source=label_source)
            fitted, saved = analysed.calibrate(method, save=not no_save, test_size=test_size, seed=seed,
                                               n_folds=n_folds, stratify=not no_stratify)
    except AutorubricError as exc:
        raise fail(exc) from None
    if as_json:
        click.echo(json.dumps({"calibration_id": saved, "run_id": analysed.run_id, "settings": fitted.settings,
                               "test_item_ids": fitted.test_ids,
                               "calibration": fitted.calibration.model_dump(mode="json"),
                               "held_out": fitted.held_out.model_dump(mode="json")}, indent=2))
    else:
        click.echo(fitted.calibration.summary())
        click.echo(fitted.held_out.summary())
    if saved is not None:
        click.echo(f"saved as calibration {saved} of run {analysed.name} ({analysed.run_id}) in {db_file}", err=True)
