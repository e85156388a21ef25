"""``autorubric-local label``: choose which items people should label (active selection) and
how many labels an interval width needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from autorubric_local.cli.common import fail, interval_cell, label_warnings, system_files_option

_DB = click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
                   default=Path("results.sqlite"), show_default=True, help="The results database.")


@click.group()
def label() -> None:
    """Plan human labels for judge-corrected estimates (`autorubric-local estimate`).

    Example:

        autorubric-local label select ricechem-q1 --budget 50 --seed 0 --out to_label.jsonl
    """


@label.command()
@click.argument("run")
@_DB
@click.option("--budget", type=click.FloatRange(0, min_open=True), required=True,
              help="Expected number of items to label (the number drawn varies around it).")
@click.option("--seed", type=int, default=None, help="Seed of the draws (stored with the selection).")
@click.option("--target", default=None,
              help="The target whose judge uncertainty sets the probabilities: score or a criterion name "
                   "[default: score]; for a comparison, the question the labels answer [default: overall].")
@click.option("--mix", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help="Weight of the uniform rule mixed in (keeps every probability away from 0).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the drawn items as a JSONL labels template (fill in ground_truth, then "
                   "`estimate --labels`).")
@click.option("--label-studio", "label_studio", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the drawn items as Label Studio tasks (JSON) and the labelling config beside "
                   "it (same name, .xml).")
@click.option("--with-predictions", is_flag=True,
              help="Pre-fill the Label Studio tasks with the judge's verdicts (anchors labellers on the "
                   "judge; off by default; not for a comparison).")
@click.option("--judge", "judge_id", default=None,
              help="A comparison: the judge whose preferences set the probabilities [default: its only judge].")
@click.option("--data", "data_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A comparison: its comparison file, for the responses in --out and --label-studio "
                   "[default: the file stored with it].")
@click.option("--system", "system_files", multiple=True, metavar="NAME=FILE", callback=system_files_option,
              help="A comparison judged from --system files: one system's file, as compare reads it (repeat; "
                   "instead of --data) [default: the files stored with it, while they exist].")
def select(run: str, db_path: Path, budget: float, seed: int | None, target: str | None, mix: float,
           out: Path | None, label_studio: Path | None, with_predictions: bool, judge_id: str | None,
           data_path: Path | None, system_files: tuple[tuple[str, str], ...]) -> None:
    """Draw items of RUN for people to label, each with a probability that grows with the judge's
    uncertainty about it (active inference, Zrnic & Candes 2024), and store every item's
    probability and draw in DB so that `estimate` can weight the labels.

    RUN may be a comparison (`autorubric-local compare`): then each judged comparison (a prompt
    and a pair of systems) is drawn by the uncertainty of the judge's preference, the Label
    Studio tasks show the two responses in an order drawn per task, and `ranking RUN --labels`
    weights the labels by the stored probabilities (import an export with `label
    import-preferences`). The responses in --out and --label-studio come from the comparison's
    file, or its --system files, as stored with it (or as given by --data or --system), and are
    refused when they differ from what was judged.

    Example:

        autorubric-local label select ricechem-q1 --budget 50 --seed 0 --out to_label.jsonl
    """
    from autorubric_local.core.errors import AutorubricError
    from autorubric_local.estimates.api import load_run
    from autorubric_local.estimates.design import draw_selection, save_selection, selection_rows

    if not db_path.is_file():
        raise click.ClickException(f"{db_path}: no such database")
    if data_path is not None and system_files:
        raise click.UsageError("give the comparison file (--data) or the systems' files (--system), not both")
    comparison = _comparison_or_none(db_path, run)
    if comparison is not None:
        if with_predictions:
            raise click.UsageError("--with-predictions is not for a comparison (the judge's preference would "
                                   "anchor the labellers)")
        _select_comparisons(comparison, db_path, budget, seed, target or "overall", mix, out, label_studio,
                            judge_id, data_path, system_files)
        return
    if judge_id is not None or data_path is not None or system_files:
        raise click.UsageError("--judge, --data and --system are for a comparison; RUN is a graded run")
    target = target or "score"
    try:
        loaded = load_run(db_path, run, selection=None, require_labels=False)
        # drawn, written, then stored: a file that cannot be written leaves no selection behind
        selection = draw_selection(loaded, budget=budget, seed=seed, target=target, mix=mix)
        rows = selection_rows(loaded, selection)
        try:
            if label_studio is not None:
                _write_label_studio(loaded, rows, label_studio, with_predictions)
            if out is not None:
                out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        except OSError as e:
            raise click.ClickException(f"{e.filename}: cannot write: {e.strerror}") from None
        selection = save_selection(db_path, loaded, selection)
    except AutorubricError as e:
        raise fail(e) from None
    click.echo(f"selection {selection.selection_id}: {len(rows)} of {len(selection.items)} items drawn "
               f"(expected {budget:g}); target {target}, seed {seed}", err=True)
    if out is None:
        for row in rows:
            click.echo(row["id"])


def _comparison_or_none(db_path: Path, run: str) -> Any:
    """The stored comparison RUN names (its name or sweep id), or None when RUN is a graded run;
    a name shared by a run and a comparison is refused."""
    from autorubric_local.bias.cells import SweepKind
    from autorubric_local.cli.common import open_store
    from autorubric_local.comparisons.judging import read_comparison
    from autorubric_local.core.errors import AutorubricError

    store = open_store(db_path)
    try:
        sweep = store.find_sweep(run)
        if sweep is None or sweep.get("kind") != SweepKind.COMPARISON.value:
            return None
        if store.find_run(run) is not None:
            raise click.ClickException(f"{db_path}: {run!r} names both a graded run and a comparison ({sweep['id']}); "
                                       "give the one you mean by its id")
        return read_comparison(store, run, where=str(db_path)), sweep
    except AutorubricError as e:
        raise fail(e) from None
    finally:
        store.close()


def _select_comparisons(found: Any, db_path: Path, budget: float, seed: int | None, question: str, mix: float,
                        out: Path | None, label_studio: Path | None, judge_id: str | None,
                        data_path: Path | None, system_files: tuple[tuple[str, str], ...] = ()) -> None:
    from autorubric_local.comparisons import labelling
    from autorubric_local.core.errors import AutorubricError

    comparison, sweep = found
    try:
        selection = labelling.draw_comparison_selection(comparison, budget=budget, seed=seed, judge_id=judge_id,
                                                        question=question, mix=mix)
        rows: list[dict[str, Any]] = []
        if out is not None or label_studio is not None:
            data = labelling.responses_source(comparison, sweep.get("data_path"), data=data_path,
                                              system_files=system_files)
            plan = json.loads(sweep["plan_json"]) if sweep.get("plan_json") else None
            rows = labelling.comparison_selection_rows(comparison, selection, data, plan)
        # drawn, written, then stored: a file that cannot be written leaves no selection behind
        try:
            if label_studio is not None:
                text = next(q["text"] for q in comparison.questions if q["name"] == question)
                labelling.write_label_studio(rows, text, label_studio)
            if out is not None:
                out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        except OSError as e:
            raise click.ClickException(f"{e.filename}: cannot write: {e.strerror}") from None
        selection = labelling.save_comparison_selection(db_path, selection)
    except AutorubricError as e:
        raise fail(e) from None
    left_out = f"; {selection.n_left_out} without a complete judgment left out" if selection.n_left_out else ""
    click.echo(f"comparison selection {selection.selection_id}: {len(selection.drawn)} of {len(selection.items)} "
               f"comparisons drawn (expected {budget:g}); judge {selection.judge_id}, question {question}, "
               f"seed {seed}{left_out}", err=True)
    if out is None:
        for c in selection.drawn:
            click.echo(c.item_id)


@label.command("import-preferences")
@click.argument("export", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The preference labels to write (JSONL {\"id\", \"a\", \"b\", \"winner\"}), for "
                   "`ranking RUN --labels`.")
def import_preferences(export: Path, out: Path) -> None:
    """Turn a Label Studio export (JSON or JSON-MIN) of the pairwise tasks `label select` wrote
    for a comparison, or its filled-in --out JSONL, into preference labels: the left/right order
    each task showed is undone, so `a` and `b` are the comparison's systems. Tasks left
    unanswered are counted and left out.

    Example:

        autorubric-local label import-preferences export.json --out preferences.jsonl
    """
    from autorubric_local.comparisons.labelling import read_preference_export
    from autorubric_local.core.errors import AutorubricError

    try:
        labels, unanswered = read_preference_export(export)
    except AutorubricError as e:
        raise fail(e) from None
    try:
        out.write_text("".join(json.dumps(r) + "\n" for r in labels), encoding="utf-8")
    except OSError as e:
        raise click.ClickException(f"{e.filename}: cannot write: {e.strerror}") from None
    first = f" (first: {unanswered[0]!r})" if unanswered else ""
    click.echo(f"{len(labels)} preference label(s) written to {out}; {len(unanswered)} task(s) unanswered{first}",
               err=True)


def print_active_win_rates(db_path: Path, stored: Any, labels: Any, labels_path: Path, question: str | None,
                           confidence: float, as_json: bool, selection_id: int | None = None) -> bool:
    """``ranking RUN --labels`` under a stored selection (``selection_id``, default the latest):
    print each pair's Horvitz-Thompson and active win rates and return True; return False (print
    nothing) when RUN has no selection. Raises ``click.ClickException`` when RUN has no selection
    ``selection_id``."""
    from rich.table import Table

    from autorubric_local.cli.common import plain_console
    from autorubric_local.comparisons.active import active_win_rates
    from autorubric_local.comparisons.labelling import load_comparison_selection
    from autorubric_local.comparisons.ranking import RUBRIC
    from autorubric_local.core.errors import AutorubricError

    try:
        selection = None if stored.nway else load_comparison_selection(db_path, stored, selection_id)
    except AutorubricError as e:
        raise fail(e) from None
    if selection is None and selection_id is not None:
        raise click.ClickException(f"comparison {stored.name!r} has no label selection {selection_id} "
                                   "(`autorubric-local label select` prints the id of each selection it stores)")
    if selection is None:
        return False
    if question == RUBRIC:
        raise click.UsageError("--labels: preference labels answer one question; give --question NAME")
    question = question or selection.question
    level = f"{confidence:.0%}"
    out: dict[str, Any] = {}
    console = plain_console()
    for judge_id in stored.judge_ids:
        try:
            rates = active_win_rates(stored, selection, labels, judge_id=judge_id, question=question,
                                     confidence=confidence, source=str(labels_path))
        except AutorubricError as e:
            raise fail(e) from None
        if as_json:
            out[judge_id] = [{"system": r.system, "against": r.other, "comparisons": r.n_comparisons,
                              "drawn": r.n_drawn, "ignored_labels": r.n_ignored, "judge": r.judge,
                              "n_effective": r.n_effective, "classical": vars(r.classical), "active": vars(r.active)}
                             for r in rates]
            continue
        table = Table(title=f"Human win rates, judge {judge_id}, question {question}, labels drawn by selection "
                            f"{selection.selection_id}: labels alone (Horvitz-Thompson) and judge-corrected "
                            f"(active inference), {level} intervals")
        for column in ("system", "against", "comparisons", "drawn", "judge alone", "labels (HT)", "active", "lam"):
            table.add_column(column)
        notes: list[str] = []
        for r in rates:
            cells = [interval_cell(interval, notes) for interval in (r.classical, r.active)]
            lam = "-" if r.active.lam is None else f"{r.active.lam:.2f}"
            table.add_row(r.system, r.other, str(r.n_comparisons), str(r.n_drawn), f"{r.judge:.3f}", *cells, lam)
        console.print(table)
        ignored = sum(r.n_ignored for r in rates)
        if ignored:
            notes.append(f"{ignored} label(s) of comparisons the selection did not draw are left out")
        for k, note in enumerate(notes, 1):
            console.print(f"note {k}: {note}", markup=False)
    if as_json:
        click.echo(json.dumps({"active_win_rates": out, "selection": selection.selection_id}, indent=2))
    return True


def _judge_label(cr: Any) -> str | None:
    """The judge's final label of one criterion report (None when it has none)."""
    if cr.final_verdict is not None:
        return str(cr.final_verdict.value)
    mc = cr.final_multi_choice_verdict
    return None if mc is None or mc.selected_index is None else str(cr.criterion.options[mc.selected_index].label)


def _write_label_studio(loaded: Any, rows: list[dict], path: Path, with_predictions: bool) -> None:
    from autorubric_local.core.errors import InputError
    from autorubric_local.estimates import label_studio
    from autorubric_local.estimates.targets import item_key

    criteria = loaded.criteria[rows[0]["id"]] if rows else next(iter(loaded.criteria.values()))
    differing = [row["id"] for row in rows if loaded.criteria[row["id"]] != criteria]
    if differing:
        raise InputError(f"item {differing[0]!r} has a rubric of its own: one Label Studio config cannot label "
                         "items of different rubrics; use --out (JSONL) instead")
    predictions = None
    if with_predictions:
        by_id = {item_key(r): r for r in loaded.result.item_results}
        predictions = {row["id"]: [_judge_label(cr) for cr in by_id[row["id"]].report.report or []] for row in rows}
    tasks = label_studio.tasks(rows, predictions, model_version=loaded.name)
    path.write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    path.with_suffix(".xml").write_text(label_studio.labelling_config(criteria), encoding="utf-8")


@label.command()
@click.argument("run")
@_DB
@click.option("--width", type=click.FloatRange(0, min_open=True), required=True,
              help="Target full width of the interval (high - low), in the target's units (a share: 0.1 = +-5 points).")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.9,
              show_default=True, help="Coverage of the interval.")
@click.option("--target", "targets", multiple=True, help="Targets (repeatable; default all).")
@click.option("--labels", "labels_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A pilot's labels (default: the dataset's own, if any).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per target.")
def power(run: str, db_path: Path, width: float, confidence: float, targets: tuple[str, ...],
          labels_file: Path | None, as_json: bool) -> None:
    """About how many human labels each target of RUN needs for an interval WIDTH wide, by the
    classical estimate and by PPI++: from the labelled pilot where the run has labels, else
    from the judge's own uncertainty (assumed calibrated: optimistic).

    Example:

        autorubric-local label power ricechem-q1 --width 0.1 --target score
    """
    from autorubric_local.core.errors import AutorubricError
    from autorubric_local.estimates.design import label_power

    if not db_path.is_file():
        raise click.ClickException(f"{db_path}: no such database")
    try:
        with label_warnings():
            rows = label_power(db_path, run, width=width, confidence=confidence, targets=targets or None,
                               labels_file=labels_file)
    except AutorubricError as e:
        raise fail(e) from None
    for row in rows:
        if as_json:
            click.echo(json.dumps(row))
        else:
            click.echo(f"{row['target']}: classical {row['classical']}, ppi {row['ppi']} labels "
                       f"({row['basis']}{', ' + str(row['pilot_labels']) + ' pilot labels' if row['basis'] == 'pilot' else ''})"
                       f"{'; ' + row['note'] if row['note'] else ''}")
