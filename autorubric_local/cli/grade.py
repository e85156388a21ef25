"""``autorubric-local grade``: grade a dataset against a rubric with local judges."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from autorubric_local.config import DEFAULT_MODEL, LLMConfig
from autorubric_local.cli.common import fail
from autorubric_local.errors import AutorubricError
from autorubric_local.graders.criterion_grader import CriterionGrader, GradedItem
from autorubric_local.graders.planning import GradeItem
from autorubric_local.reports import EnsembleCriterionReport
from autorubric_local.rubric import Rubric

ITEMS_PER_BATCH = 16


@click.command()
@click.argument("rubric_path", metavar="RUBRIC", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("data_path", metavar="DATA", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", "-m", default=DEFAULT_MODEL, show_default=True,
              help="Preset name, Hugging Face model folder, or .gguf file.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("results.sqlite"), show_default=True, help="SQLite file for results.")
@click.option("--mode", type=click.Choice(["score", "explain"]), default="score", show_default=True,
              help="score: verdicts from label probabilities; explain: also write explanations.")
@click.option("--explanation-first", is_flag=True, help="In explain mode, reason before the verdict.")
@click.option("--seed", type=int, default=None, help="Seed of the option shuffles (recorded).")
@click.option("--no-shuffle", is_flag=True, help="Show multi-choice options in their original order.")
@click.option("--limit", type=int, default=None, help="Grade only the first N items.")
@click.option("--run", "run_name", default=None, help="Name of this run in the database.")
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON instead of a table.")
def grade(
    rubric_path: Path,
    data_path: Path,
    model: str,
    db_path: Path,
    mode: str,
    explanation_first: bool,
    seed: int | None,
    no_shuffle: bool,
    limit: int | None,
    run_name: str | None,
    as_json: bool,
) -> None:
    """Grade every submission in DATA against RUBRIC (YAML or JSON).

    DATA is JSONL or JSON of submissions ({"submission", "id", "query",
    "reference_submission"}) or an AutoRubric dataset JSON.

    Example:

        autorubric-local grade examples/battery_rubric.yaml examples/battery_submissions.jsonl
    """
    from autorubric_local.store import ResultStore, open_db
    from autorubric_local.submissions import load_grading_data

    console = Console(stderr=True)
    try:
        rubric = Rubric.from_file(str(rubric_path))
    except (ValueError, OSError) as exc:
        raise click.ClickException(f"{rubric_path}: {exc}") from exc
    try:
        dataset = load_grading_data(data_path, rubric)
        items = _grade_items(dataset, limit)
        started = time.perf_counter()
        grader = CriterionGrader(
            llm_config=LLMConfig(model=model),
            mode=mode,  # type: ignore[arg-type]
            explanation_first=explanation_first,
            seed=seed,
            shuffle_options=not no_shuffle,
        )
        judge = grader.judges[0]
        with console.status(f"loading judge {model} ..."):
            engine = grader.engine_for(judge)
        load_seconds = time.perf_counter() - started
        store = ResultStore(open_db(db_path))
        run_id = store.start_run(
            name=run_name,
            judges=[{"judge_id": judge.judge_id, "model": model, "model_id": engine.model_id}],
            grader={"mode": mode, "explanation_first": explanation_first, "seed": grader.seed,
                    "shuffle_options": not no_shuffle},
            rubric=rubric.to_list(),
            data_path=str(data_path),
        )
        graded, grade_seconds = _grade_with_progress(grader, items, store, run_id, engine.model_id, judge.judge_id, console)
        store.finish_run(run_id)
    except AutorubricError as exc:
        raise fail(exc) from exc
    judgments = sum(len(g.results) for g in graded)
    if as_json:
        click.echo(json.dumps([_item_json(g) for g in graded], indent=2))
    else:
        Console().print(_results_table(graded))
    console.print(
        f"run {run_id}: {len(graded)} items, {judgments} judgments in {grade_seconds:.1f} s "
        f"({judgments / grade_seconds if grade_seconds else 0:.1f} judgments/s; judge load "
        f"{load_seconds:.1f} s); results in {db_path}"
    )


def _grade_items(dataset: Any, limit: int | None) -> list[GradeItem]:
    items = []
    for index, item in enumerate(dataset.items[:limit] if limit is not None else dataset.items):
        items.append(
            GradeItem(
                submission=item.submission,
                rubric=tuple(dataset.get_item_rubric(index).rubric),
                query=dataset.get_item_query(index),
                reference_submission=dataset.get_item_reference_submission(index),
                item_id=item.id or f"item-{index}",
            )
        )
    return items


def _grade_with_progress(
    grader: CriterionGrader,
    items: Sequence[GradeItem],
    store: Any,
    run_id: str,
    model_id: str,
    judge_id: str,
    console: Console,
) -> tuple[list[GradedItem], float]:
    """Grade in batches of items, committing each batch, with a progress bar."""
    graded: list[GradedItem] = []
    total = sum(len(item.rubric) for item in items)
    started = time.perf_counter()
    with Progress(
        TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TextColumn("judgments"),
        TimeElapsedColumn(), console=console, transient=True,
    ) as progress:
        task = progress.add_task("grading", total=total)
        for begin in range(0, len(items), ITEMS_PER_BATCH):
            batch = list(items[begin : begin + ITEMS_PER_BATCH])
            done = grader.grade_batch(batch)
            store.record(run_id, done, {judge_id: model_id}, first_index=begin)
            graded.extend(done)
            progress.advance(task, sum(len(item.rubric) for item in batch))
    return graded, time.perf_counter() - started


def _verdict_cell(report: EnsembleCriterionReport) -> tuple[str, float | None]:
    probabilities = report.label_probabilities or {}
    if report.final_verdict is not None:
        label = report.final_verdict.value
        return label, probabilities.get(label)
    verdict = report.final_multi_choice_verdict
    if verdict is None or verdict.selected_label is None:
        return "n/a", None
    return verdict.selected_label, probabilities.get(verdict.selected_label)


def _results_table(graded: Sequence[GradedItem]) -> Table:
    table = Table(title="Grades: each criterion's verdict and the judge's P(verdict)")
    for column, justify in (("item", "left"), ("score", "right"), ("criterion", "left"),
                            ("weight", "right"), ("verdict", "left"), ("P", "right")):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for entry in graded:
        report = entry.report
        score = "[red]failed[/red]" if report.score is None else f"{report.score:.3f}"
        for index, criterion in enumerate(report.report or []):
            name = criterion.criterion.name or f"criterion {index + 1}"
            weight = f"{criterion.criterion.weight:g}"
            if criterion.error:
                verdict, probability = f"[red]error: {criterion.error}[/red]", ""
            else:
                label, p = _verdict_cell(criterion)
                verdict, probability = label, ("" if p is None else f"{p:.2f}")
            first = index == 0
            table.add_row(entry.item.item_id if first else "", score if first else "", name, weight,
                          verdict, probability)
        table.add_section()
    return table


def _item_json(entry: GradedItem) -> dict[str, Any]:
    report = entry.report
    criteria = []
    for criterion in report.report or []:
        label, p = _verdict_cell(criterion)
        criteria.append(
            {
                "name": criterion.criterion.name,
                "weight": criterion.criterion.weight,
                "verdict": None if criterion.error else label,
                "probability": p,
                "label_probabilities": criterion.label_probabilities,
                "explanation": criterion.final_reason or None,
                "error": criterion.error,
            }
        )
    return {
        "item_id": entry.item.item_id,
        "score": report.score,
        "raw_score": report.raw_score,
        "error": report.error,
        "criteria": criteria,
    }


