"""``autorubric-local show RUN``: one run's results per item and criterion, from the database."""

from __future__ import annotations

import json
from itertools import groupby
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from autorubric_local.cli.common import open_run, plain_console


@click.command()
@click.argument("run")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("results.sqlite"),
              show_default=True, help="The results database.")
@click.option("--item", "item_ids", multiple=True, help="Show only this item id (repeat for several).")
@click.option("--votes", is_flag=True, help="Also show every judge's vote (each option order of each judge).")
@click.option("--prompt", "show_prompt", is_flag=True,
              help="Also print the exact prompt of each judgment, as the judge read it.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object per item and criterion (JSON Lines; with --votes or --prompt, "
                   "one per judgment).")
def show(run: str, db_path: Path, item_ids: tuple[str, ...], votes: bool, show_prompt: bool, as_json: bool) -> None:
    """Show RUN (a run name or id) item by item: each criterion's final verdict, its
    probability, pass/fail, contribution to the score, explanation and error.

    Example:

        autorubric-local show battery-v1 --item sub-2 --votes --prompt
    """
    from autorubric_local.runner.inspection import criterion_rows, judgment_rows

    store, row = open_run(db_path, run)
    try:
        wanted = list(item_ids) or None
        known = {r["item_id"] for r in store.item_rows(row["id"])}
        missing = [item for item in item_ids if item not in known]
        if missing:
            raise click.ClickException(f"{db_path}: run {row['name']!r} has no item {missing[0]!r}")
        criteria = criterion_rows(store, row, wanted)
        judgments = judgment_rows(store, row["id"], wanted) if votes or show_prompt else []
        if show_prompt:
            for judgment in judgments:
                judgment["prompt"] = store.judgment_prompt(row["id"], judgment["item_id"], judgment["criterion_index"],
                                                           judgment["judge_id"], judgment["permutation_index"])
    finally:
        store.close()
    if as_json:
        for line in judgments or criteria:
            click.echo(json.dumps(line))
        return
    console = plain_console()
    console.print(f"run {escape(row['name'] or '')} ({row['id']}): {row['status']}, "
                  f"{len({c['item_id'] for c in criteria})} items shown")
    for item_id, rows in groupby(criteria, key=lambda c: c["item_id"]):
        console.print(_criteria_table(item_id, list(rows)))
    if votes:
        console.print(_votes_table(judgments))
    if show_prompt:
        for judgment in judgments:
            console.rule(f"prompt: item {escape(judgment['item_id'])}, criterion {judgment['criterion_index'] + 1}, "
                         f"judge {escape(judgment['judge_id'])}, option order {judgment['permutation_index']}")
            text = judgment["prompt"]
            console.print("(not stored: recorded before prompts were kept)" if text is None else text,
                          markup=False, highlight=False)


def _number(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _criteria_table(item_id: str, rows: list[dict[str, Any]]) -> Table:
    score = rows[0]["item_score"]
    table = Table(title=f"item {escape(item_id)}: score {'failed' if score is None else f'{score:.3f}'}",
                  title_justify="left")
    for column, justify in (("criterion", "left"), ("weight", "right"), ("verdict", "left"), ("P", "right"),
                            ("passed", "left"), ("contribution", "right"), ("explanation / error", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        passed = {1: "yes", 0: "no", None: ""}[row["passed"]]
        note = f"[red]error: {escape(row['error'])}[/red]" if row["error"] else escape(row["explanation"] or "")
        table.add_row(escape(row["criterion_name"] or f"criterion {row['criterion_index'] + 1}"),
                      f"{row['weight']:g}", escape(row["verdict"] or ""), _number(row["probability"], 2), passed,
                      _number(row["contribution"]), note)
    return table


def _votes_table(judgments: list[dict[str, Any]]) -> Table:
    table = Table(title="Votes: each judge, each option order", title_justify="left")
    for column in ("item", "criterion", "judge", "order", "vote", "label probabilities", "explanation / error"):
        table.add_column(column)
    for j in judgments:
        probabilities = json.loads(j["label_probabilities_json"] or "{}")
        shown = ", ".join(f"{label} {p:.2f}" for label, p in probabilities.items())
        if j.get("one_hot"):  # NULL (runs before migration 13) reads as not one-hot
            shown += " (one-hot: no logprobs from the backend)"
        note = f"[red]error: {escape(j['error'])}[/red]" if j["error"] else escape(j["explanation"] or "")
        table.add_row(escape(j["item_id"]), escape(j["criterion_name"] or str(j["criterion_index"] + 1)),
                      escape(j["judge_id"]), str(j["permutation_index"]), escape(j["vote"] or ""), escape(shown), note)
    return table
