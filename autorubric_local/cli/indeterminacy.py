"""``autorubric-local indeterminacy``: judge agreement and downstream metrics under rating
indeterminacy, over graded runs, across a grid of human sensitivities beta."""

from __future__ import annotations

from pathlib import Path

import click

from autorubric_local.cli.common import fail, label_options, label_warnings, runs_and_databases


def _grid(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[float, ...] | None:
    """``0,0.1,0.3`` or ``START:STOP:STEP`` (STOP included) as a tuple of floats in [0, 1]."""
    if value is None:
        return None
    try:
        if ":" in value:
            start, stop, step = (float(x) for x in value.split(":"))
            if step <= 0 or stop < start:
                raise ValueError
            count = int(round((stop - start) / step)) + 1
            values = tuple(round(start + i * step, 10) for i in range(count))
        else:
            values = tuple(float(x) for x in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers or START:STOP:STEP, got {value!r}", ctx, param) from None
    if not values or any(not 0.0 <= v <= 1.0 for v in values) or len(set(values)) != len(values):
        raise click.BadParameter(f"values must be distinct and in [0, 1], got {value!r}", ctx, param)
    return values


@click.command()
@click.argument("run_args", metavar="[RUN]...", nargs=-1)
@click.option("--db", "db_paths", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="A results database (repeat for several; the first stores the analysis).  "
                   "[default: results.sqlite]")
@click.option("--run", "run_options", multiple=True, metavar="RUN",
              help="Deprecated: give the runs as arguments (kept for 'indeterminacy DB... --run RUN').")
@click.option("--beta", "betas", callback=_grid, default=None,
              help="Human sensitivities: '0,0.1,0.3' or 'START:STOP:STEP'  [default: 0:0.6:0.05]")
@click.option("--tau", "taus", callback=_grid, default=None,
              help="Thresholds of the downstream metrics, same format  [default: 0.3,0.5]")
@click.option("--positive", default=None,
              help="Positive option label for every criterion that has it (default: MET; for multi-choice "
                   "criteria the highest-valued option).")
@click.option("--criterion", "criteria", multiple=True, help="Only this criterion (name; repeat).")
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True), default=0.25, show_default=True,
              help="Response sets: every option with forced-choice probability >= this.")
@click.option("--temperature", type=click.FloatRange(0.0, 100.0, min_open=True), default=1.0, show_default=True,
              help="Temper the label probabilities: softmax(log p / T).")
@click.option("--n-samples", type=click.IntRange(1, 100_000), default=None,
              help="Draw this many forced choices per item instead of using the distribution.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --n-samples draws.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Write metrics-vs-beta.png and regret-vs-beta.png here.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--no-save", is_flag=True, help="Do not store the analysis in the (first) database.")
@label_options
def indeterminacy(run_args: tuple[str, ...], db_paths: tuple[Path, ...], run_options: tuple[str, ...],
                  betas: tuple[float, ...] | None, taus: tuple[float, ...] | None, positive: str | None,
                  criteria: tuple[str, ...], threshold: float, temperature: float, n_samples: int | None, seed: int,
                  plot_dir: str | None, as_json: bool, no_save: bool, labels_file: Path | None,
                  label_source: str | None) -> None:
    """Validate the judges of the graded RUNs (names or ids; default: every run) of one or more
    databases (--db) under rating indeterminacy.

    Human labels come from each run's dataset (one forced-choice label per item), or from
    --labels FILE (the file `estimate --labels` takes, applied to every run and stored in
    each run's database) or --label-source (labels stored earlier for each run); an item counts
    when every criterion of it is labelled. They become response sets through beta, swept over
    a grid; each judge's forced choice and response set
    are read off its label probabilities. Prints, per judge, hit rate, Cohen's kappa, KL
    (human -> judge) and JSD, then per beta the multi-label MSE, decision consistency C^tau and
    estimation bias B^tau, and the regret of choosing a judge by each metric. The analysis is
    stored in the first --db (tables indeterminacy_analyses, indeterminacy_values).

    Each RUN is looked up in every --db. Without --db, RUNs that are all existing files are
    read as the deprecated `indeterminacy DB... --run RUN` form (kept for one release, with a
    note): give --db to name a run that is also a file's path.

    Example:

        autorubric-local indeterminacy q1-smollm2 q1-gemma3 --db q1.sqlite --beta 0:0.6:0.1 --plot plots/

    With a labels file:

        autorubric-local indeterminacy q1-smollm2 --db q1.sqlite --labels labelled.jsonl
    """
    runs, databases = runs_and_databases("indeterminacy", run_args, db_paths, run_options)
    dbs = [str(path) for path in databases]
    from autorubric_local.core.errors import AutorubricError
    from autorubric_local.indeterminacy import (
        AnalysisSettings,
        ElicitationSettings,
        IndeterminacySettings,
        analyse_runs,
        save_report,
    )
    from autorubric_local.indeterminacy.plots import write_plots
    from autorubric_local.runner.results import resolve_db_path
    from autorubric_local.store import Store
    from autorubric_local.store.schema import writable_or_warn

    try:
        analysis = AnalysisSettings(**{k: v for k, v in (("betas", betas), ("taus", taus)) if v is not None})
        settings = IndeterminacySettings(
            analysis=analysis, positive=positive, criteria=list(criteria) or None,
            elicitation=ElicitationSettings(threshold=threshold, temperature=temperature, n_samples=n_samples,
                                            seed=seed))
        with label_warnings():
            report, run_ids = analyse_runs(dbs, runs, settings, labels_file=labels_file, label_source=label_source)
            writable = writable_or_warn(resolve_db_path(dbs[0]), "the analysis") if not no_save else False
        saved = None
        if writable:
            store = Store.open(resolve_db_path(dbs[0]))
            try:
                saved = save_report(store, report, run_ids)
            finally:
                store.close()
        written = write_plots(report, plot_dir) if plot_dir else []
    except AutorubricError as exc:
        raise fail(exc) from None
    click.echo(report.model_dump_json(indent=2) if as_json else report.summary())
    if saved is not None:
        click.echo(f"saved as indeterminacy analysis {saved} in {dbs[0]}", err=True)
    for path in written:
        click.echo(f"wrote {path}", err=True)
