"""``autorubric-local sweep`` / ``sweep-select``: position-bias sweeps and the Grade Score.

The work goes through :func:`~autorubric_local.bias.stored.run_stored_sweep`: chunks of whole
items, each committed to the SQLite file, so an interrupted sweep resumes with ``--run NAME``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from autorubric_local.bias.aggregate import Estimate, IntervalMethod, SweepAggregate
from autorubric_local.bias.sweep import SweepKind, SweepSettings
from autorubric_local.cli.common import (
    database_option,
    distributed_config,
    fail,
    interrupted,
    judge_specs,
    load_rubric,
    name_option,
    plain_console,
    ray_options,
    run_name_option,
    stops_on_termination,
    write_failed,
)
from autorubric_local.core.errors import AutorubricError, DatabaseWriteError
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import DEFAULT_MODEL
from autorubric_local.runner.config import DEFAULT_CHUNK_JUDGMENTS


def _sweep_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by ``sweep`` and ``sweep-select``."""
    options = [
        click.option("--model", "-m", default=DEFAULT_MODEL, show_default=True,
                     help="Judge: preset name, Hugging Face model folder, .gguf file, or Hugging Face id in the local HF cache."),
        click.option("--judges", "judges_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="YAML/JSON file of several judges (replaces --model)."),
        click.option("--unrelated-option", is_flag=True,
                     help="Also sweep with one unrelated option added (the Grade Score paper's 'rand option')."),
        click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
                     callback=database_option, default=Path("results.sqlite"), show_default=True,
                     help="SQLite file for results (new, empty, or an autorubric-local database)."),
        click.option("--plot", "plot_dir", type=click.Path(file_okay=False, path_type=Path),
                     help="Write PNG plots (heat maps, Grade Scores) into this folder."),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Seeds option order, unrelated options and bootstrap."),
        click.option("--no-shuffle", is_flag=True, help="Rotate the options' original order."),
        click.option("--bootstrap", "n_bootstrap", type=click.IntRange(min=0), default=1000,
                     show_default=True, help="Bootstrap resamples for the intervals."),
        click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N items."),
        click.option("--run", "run_name", default=None, callback=run_name_option,
                     help="Name of this sweep in the database (letters, digits, '.', '_', '-'; at most 128); "
                          "sweeping again with the same name resumes it."),
        click.option("--name", default=None, callback=name_option, hidden=True,
                     help="Deprecated alias of --run (any printable name)."),
        click.option("--resume/--no-resume", default=True, show_default=True,
                     help="Continue the sweep named by --run (only missing items are judged), or start a new one."),
        click.option("--chunk-judgments", type=click.IntRange(min=1), default=DEFAULT_CHUNK_JUDGMENTS,
                     show_default=True,
                     help="Most rotations per engine chunk (whole items); each chunk is committed at once."),
        click.option("--json", "as_json", is_flag=True, help="Print results as JSON instead of a table."),
    ]
    for option in reversed(options):
        command = option(command)
    return ray_options(command)


@click.command()
@click.argument("rubric_path", metavar="RUBRIC", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("data_path", metavar="DATA", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--criterion", "criteria", multiple=True, metavar="NAME",
              help="Sweep only this multi-choice criterion (repeat for several). [default: every one]")
@_sweep_options
def sweep(rubric_path: Path, data_path: Path, criteria: tuple[str, ...], **options: Any) -> None:
    """Judge every multi-choice criterion of RUBRIC (or those named by --criterion) in all N
    cyclic option orders.

    For each judge and criterion: LLM Score (entropy of the chosen positions), Choice Score
    (how often the same option wins), Grade Score (their harmonic mean: 1 = the same option
    in every order, 0 = always the same position; docs/validity.md says how to read it), the
    versions from probabilities, and the mean probability per position. Binary criteria are
    skipped. For selection tasks (a prompt and candidate responses) use `sweep-select`.
    `autorubric-local runs` lists stored sweeps; `autorubric-local show NAME` prints one again.

    Example:

        autorubric-local sweep examples/battery_rubric.yaml examples/battery_submissions.jsonl --run battery-bias --json

    One criterion:

        autorubric-local sweep examples/battery_rubric.yaml examples/battery_submissions.jsonl --run depth-bias --criterion technical_depth

    On Ray actors (--ray local|auto|ADDRESS; this process commits each chunk):

        autorubric-local sweep examples/battery_rubric.yaml examples/battery_submissions.jsonl --run battery-bias --ray auto --workers 4

    Results go to the SQLite file --db after every chunk; after a crash or Ctrl-C, run the same
    command with the same --run NAME to judge only what is missing.
    """
    from autorubric_local.data.submissions import load_grading_data

    rubric = load_rubric(rubric_path)
    try:
        dataset = load_grading_data(data_path, rubric)
    except AutorubricError as exc:
        raise fail(exc) from exc
    items = [
        GradeItem(
            submission=item.submission,
            rubric=tuple(dataset.get_item_rubric(i).rubric),
            query=dataset.get_item_query(i),
            reference_submission=dataset.get_item_reference_submission(i),
            item_id=item.id or f"item-{i}",
        )
        for i, item in enumerate(dataset.items[: options["limit"]])
    ]
    _run(SweepKind.RUBRIC, items, None, rubric.to_list(), data_path, criteria=_checked_criteria(criteria, items),
         **options)


def _checked_criteria(criteria: tuple[str, ...], items: Sequence[GradeItem]) -> tuple[str, ...] | None:
    """``--criterion`` values (None: every criterion), each a multi-choice criterion of the items' rubric.

    Raises
    ------
    click.BadParameter
        A name that is not one, naming it (and whether it is binary) and the allowed names.
    """
    from autorubric_local.bias.cells import criterion_label
    from autorubric_local.bias.sweep import multi_choice_criteria

    if not criteria:
        return None
    allowed = multi_choice_criteria(items)
    binary = {criterion_label(c, k) for item in items for k, c in enumerate(item.rubric) if c.options is None}
    for name in criteria:
        if name not in allowed:
            what = "a binary criterion (no option order to sweep)" if name in binary else \
                "not a multi-choice criterion of RUBRIC"
            raise click.BadParameter(f"{name!r} is {what}; multi-choice criteria: "
                                     f"{', '.join(map(repr, allowed)) or 'none'}", param_hint="'--criterion'")
    return criteria


@click.command("sweep-select")
@click.argument("data_path", metavar="DATA", type=click.Path(dir_okay=False, path_type=Path))
@_sweep_options
def sweep_select(data_path: Path, **options: Any) -> None:
    """Sweep selection tasks: the judge picks the best of N candidate responses.

    DATA is JSONL: {"prompt": "...", "candidates": ["...", "..."], "preferred": 0, "id": "q1"}
    ("preferred", the 0-based index of the human-preferred candidate, and "id" are optional).
    Every candidate is shown at every position once; with "preferred", agreement with the
    human preference is reported too.

    Example:

        autorubric-local sweep-select tasks.jsonl --run picks --unrelated-option --plot plots/
    """
    from autorubric_local.bias.selection import load_selection_tasks

    try:
        tasks = load_selection_tasks(data_path)[: options["limit"]]
    except AutorubricError as exc:
        raise fail(exc) from exc
    items = [task.to_grade_item() for task in tasks]
    _run(SweepKind.SELECTION, items, [t.preferred for t in tasks], None, data_path, **options)


@stops_on_termination
def _run(
    kind: SweepKind, items: Sequence[GradeItem], preferred: Sequence[int | None] | None, rubric: Any,
    data_path: Path, *, model: str, judges_path: Path | None, unrelated_option: bool, db_path: Path,
    plot_dir: Path | None, seed: int, no_shuffle: bool, n_bootstrap: int, limit: int | None,
    run_name: str | None, name: str | None, resume: bool, chunk_judgments: int, as_json: bool,
    ray_address: str | None, workers: int | None, worker_cpus: float | None, worker_gpus: float | None,
    criteria: tuple[str, ...] | None = None,
) -> None:
    from autorubric_local.bias.report import sweep_to_dict
    from autorubric_local.bias.stored import SweepChunkReport, run_stored_sweep
    from autorubric_local.runner.config import EvalConfig

    console = plain_console(stderr=True)  # piped: lines whole, not folded at 80 columns
    distributed = distributed_config(ray_address, workers, worker_cpus, worker_gpus)
    if name is not None:
        if run_name is not None and run_name != name:
            raise click.UsageError(f"--name is a deprecated alias of --run; got --run {run_name!r} and --name {name!r}")
        click.echo("note: --name is deprecated; use --run NAME", err=True)

    def report(chunk: SweepChunkReport) -> None:
        failed = f", {chunk.failed_rotations} failed" if chunk.failed_rotations else ""
        console.print(f"judge {chunk.judge_id}: chunk {chunk.chunk_index + 1}: {chunk.rotations} rotations committed"
                      f"{failed} ({chunk.completed_items}/{chunk.total_items} items)", markup=False)

    try:
        judges = judge_specs(model, judges_path)
        settings = SweepSettings(kind=kind, seed=seed, shuffle_options=not no_shuffle,
                                 unrelated_option=unrelated_option, n_bootstrap=n_bootstrap, criteria=criteria)
        config = EvalConfig(db_path=db_path, experiment_name=run_name, resume=resume,
                            chunk_judgments=chunk_judgments, show_progress=False, distributed=distributed)
        with console.status(f"sweeping {len(items)} items with {len(judges)} judge(s) ..."):
            stored = run_stored_sweep(items, judges, settings, config, name=name, preferred=preferred,
                                      rubric=rubric, data_path=str(data_path), on_chunk=report)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (stops_on_termination)
        raise interrupted(exc, db_path) from None
    except DatabaseWriteError as exc:
        raise write_failed(exc, db_path) from None
    except AutorubricError as exc:
        raise fail(exc) from exc
    result = stored.result
    if as_json:
        click.echo(json.dumps(sweep_to_dict(result, stored.sweep_id), indent=2))
    else:
        plain_console().print(sweep_table(result.aggregates))
    if plot_dir is not None:
        from autorubric_local.bias.plots import write_plots

        for path in write_plots(result.aggregates, plot_dir, run=stored.name):
            console.print(f"plot: {path}")
    total = sum(len(c.results) for c in result.cells)
    dropped = sum(c.scores.n_dropped for c in result.cells)
    resumed = f"; {stored.resumed_rotations} rotations from the checkpoint" if stored.resumed_rotations else ""
    failures = f"; {dropped} rotations failed (dropped)" if dropped else ""
    console.print(f"sweep {stored.name} ({stored.sweep_id}): {len(items)} items, {total} rotations in "
                  f"{sum(result.seconds.values()):.1f} s{resumed}{failures}; results in {db_path}", markup=False)


WILSON_NOTE = ("*: every item had the same score (or there was one item), so the bootstrap interval would have "
               "zero width; this is the bounded-range (Wilson) interval for that many items")
"""The table's footnote for an interval marked ``*`` (:attr:`IntervalMethod.WILSON`)."""
FEW_ITEMS = 50
"""Below this many items the table warns that its bootstrap intervals are too narrow
(``scripts/sim_sweep_intervals.py``: 95% intervals held the truth in 57% to 97% of simulated
sweeps of 3 items, 88% to 94% of 20, 94% of 50)."""
FEW_ITEMS_NOTE = (f"fewer than {FEW_ITEMS} items: bootstrap intervals on so few items are too narrow (95% intervals "
                  "held the truth in as few as 57% of simulated sweeps of 3 items and 88% of 20; docs/validity.md)")
"""The table's footnote when a row has fewer than :data:`FEW_ITEMS` items."""


def _interval(low: float, high: float) -> str:
    """``[low, high]`` to 2 decimals, or to 3 or 4 where 2 would print a narrow interval's
    bounds alike (as if it had zero width)."""
    digits = next((d for d in (2, 3) if f"{low:.{d}f}" != f"{high:.{d}f}"), 4)
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def _cell(estimate: Estimate | None) -> str:
    if estimate is None or estimate.mean is None:
        return "-"
    if estimate.ci_low is None or estimate.ci_high is None:
        return f"{estimate.mean:.3f}"
    mark = "*" if estimate.method is IntervalMethod.WILSON else ""
    return f"{estimate.mean:.3f} {_interval(estimate.ci_low, estimate.ci_high)}{mark}"


def sweep_table(aggregates: Sequence[SweepAggregate]) -> Table:
    """The results table of ``sweep`` (and of ``show NAME`` for a stored sweep): one row per
    judge, criterion and variant; the caption explains intervals marked ``*`` and warns when a
    row has fewer than :data:`FEW_ITEMS` items."""
    table = Table(title=escape("Position-bias sweep: means over items [bootstrap interval]"))
    columns = ["judge", "criterion", "variant", "items", "dropped", "LLM score", "Choice score",
               "Grade score", "E[Grade]", "P(position)"]
    with_preference = any(a.agreement is not None for a in aggregates)
    if with_preference:
        columns.append("agreement")
    for column in columns:
        table.add_column(column, overflow="fold")
    aggregate: SweepAggregate
    marked = False
    for aggregate in aggregates:
        variant = aggregate.variant.value
        if aggregate.unrelated_rate is not None:
            variant += f" (picked {aggregate.unrelated_rate:.0%})"
        estimates = [aggregate.llm_score, aggregate.choice_score, aggregate.grade_score,
                     aggregate.expected_grade_score] + ([aggregate.agreement] if with_preference else [])
        marked = marked or any(e is not None and e.method is IntervalMethod.WILSON for e in estimates)
        row = [escape(aggregate.judge_id), escape(aggregate.criterion_name), variant, str(aggregate.n_items),
               str(aggregate.n_dropped), *map(_cell, estimates[:4]),
               " ".join(f"{p:.2f}" for p in aggregate.position_profile)]
        if with_preference:
            row.append(_cell(aggregate.agreement))
        table.add_row(*row)
    notes = [WILSON_NOTE] if marked else []
    if any(a.n_items < FEW_ITEMS for a in aggregates):
        notes.append(FEW_ITEMS_NOTE)
    table.caption = "\n".join(notes) or None
    return table
