"""``autorubric-local label``: choose which items people should label (active selection) and
how many labels an interval width needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from autorubric_local.cli.common import fail, label_warnings

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
@click.option("--target", default="score", show_default=True,
              help="The target whose judge uncertainty sets the probabilities: score or a criterion name.")
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
                   "judge; off by default).")
def select(run: str, db_path: Path, budget: float, seed: int | None, target: str, mix: float,
           out: Path | None, label_studio: Path | None, with_predictions: bool) -> None:
    """Draw items of RUN for people to label, each with a probability that grows with the judge's
    uncertainty about it (active inference, Zrnic & Candes 2024), and store every item's
    probability and draw in DB so that `estimate` can weight the labels.

    Example:

        autorubric-local label select ricechem-q1 --budget 50 --seed 0 --out to_label.jsonl
    """
    from autorubric_local.core.errors import AutorubricError
    from autorubric_local.estimates.api import load_run
    from autorubric_local.estimates.design import draw_selection, save_selection, selection_rows

    if not db_path.is_file():
        raise click.ClickException(f"{db_path}: no such database")
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
