"""``autorubric-local show RUN``: one run's results per item and criterion, from the database;
or a stored sweep's results table (a comparison is pointed to ``ranking``)."""

from __future__ import annotations

import json
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from autorubric_local.cli.common import open_store, plain_console

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.store import Store


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

    RUN may also name a stored sweep (`autorubric-local runs` lists them): its results table,
    as `sweep` printed it (with --json, the JSON of `sweep --json` without its per-item
    cells). A comparison is ranked by `autorubric-local ranking NAME`.

    Example:

        autorubric-local show battery-v1 --item vague --votes --prompt

    A sweep:

        autorubric-local show battery-bias
    """
    from autorubric_local.runner.inspection import criterion_row_pages, judgment_row_pages, shown_item_count

    store, row, is_sweep = _open_run_or_sweep(db_path, run)
    if is_sweep:
        try:
            if item_ids or votes or show_prompt:
                raise click.UsageError(f"--item, --votes and --prompt show a run's judgments; {run!r} is a sweep")
            _show_sweep(store, row, db_path, as_json)
        finally:
            store.close()
        return
    try:
        wanted = list(item_ids) or None
        if wanted is not None:
            known = {r[0] for r in store.db.execute(
                "select item_id from items where run_id = ? and item_id in (select value from json_each(?))",
                [row["id"], json.dumps(wanted)])}
            missing = [item for item in wanted if item not in known]
            if missing:
                raise click.ClickException(f"{db_path}: run {row['name']!r} has no item {missing[0]!r}")
        if as_json:
            pages = (_with_prompts(store, row["id"], page, show_prompt)
                     for page in judgment_row_pages(store, row["id"], wanted)) if votes or show_prompt else \
                criterion_row_pages(store, row, wanted)
            for page in pages:
                for line in page:
                    click.echo(json.dumps(line))
            return
        console = plain_console()
        console.print(f"run {escape(row['name'] or '')} ({row['id']}): {row['status']}, "
                      f"{shown_item_count(store, row, wanted)} items shown")
        for page in criterion_row_pages(store, row, wanted):
            for item_id, rows in groupby(page, key=lambda c: c["item_id"]):
                console.print(_criteria_table(item_id, list(rows)))
        if votes:
            for number, page in enumerate(judgment_row_pages(store, row["id"], wanted)):
                console.print(_votes_table(page, continued=number > 0))
        if show_prompt:
            for page in judgment_row_pages(store, row["id"], wanted):
                _print_prompts(console, _with_prompts(store, row["id"], page, True))
    finally:
        store.close()


def _open_run_or_sweep(db_path: Path, key: str) -> tuple[Store, dict[str, Any], bool]:
    """The store, and the run ``key`` (a name, meaning the latest run of that name, or an id) or
    else the sweep ``key``, and whether it is a sweep; a run wins a name both have (a note on
    stderr says so).

    Raises
    ------
    click.ClickException
        The database has neither (the message lists its runs and sweeps), or ``key`` is a
        comparison (the message names the command that shows it).
    """
    store = open_store(db_path)
    run = store.find_run(key)
    sweep = store.find_sweep(key) if run is None or run["id"] != key else None
    if run is not None:
        if sweep is not None:
            click.echo(f"note: sweep {sweep['name']!r} has this name too; `autorubric-local show {sweep['id']}` "
                       "shows it", err=True)
        return store, run, False
    if sweep is None:
        runs, sweeps = store.run_names(), store.sweep_names()
        store.close()
        listed = [", ".join(repr(n) for n in dict.fromkeys(names)) or "none" for names in (runs, sweeps)]
        raise click.ClickException(f"{db_path}: no run named or with id {key!r} (runs: {listed[0]}), "
                                   f"and no sweep (sweeps and comparisons: {listed[1]})")
    if sweep["kind"] == "comparison":
        store.close()
        raise click.ClickException(
            f"{db_path}: {sweep['name']!r} ({sweep['id']}) is a comparison, not a run: "
            f"`autorubric-local ranking {sweep['name']} --db {db_path}` shows its ranking")
    return store, sweep, True


def _show_sweep(store: Store, sweep: dict[str, Any], db_path: Path, as_json: bool) -> None:
    """A stored sweep's results: the table ``sweep`` printed (:func:`~.sweep.sweep_table`), or its JSON."""
    from autorubric_local.bias.records import aggregates_from_rows
    from autorubric_local.bias.report import stored_sweep_to_dict
    from autorubric_local.cli.sweep import sweep_table

    aggregates = aggregates_from_rows(store.sweep_aggregates(sweep["id"]))
    if as_json:
        click.echo(json.dumps(stored_sweep_to_dict(sweep, aggregates), indent=2))
        return
    (summary,) = [s for s in store.sweep_summaries() if s["sweep_id"] == sweep["id"]]
    settings = json.loads(sweep["config_json"] or "{}")
    judges = ", ".join(j["judge_id"] for j in json.loads(sweep["judges_json"] or "[]"))
    criteria = ", ".join(settings.get("criteria") or []) or "every multi-choice criterion"
    console = plain_console()
    console.print(f"sweep {sweep['name']} ({sweep['id']}): {sweep['kind']} sweep, {sweep['status']}, "
                  f"{summary['items_done']}/{summary['total_items'] or '?'} items; judges: {judges}; "
                  f"criteria: {criteria}", markup=False, highlight=False)
    if not aggregates:
        console.print(f"no results yet: the sweep is {sweep['status']}; run the same `autorubric-local sweep` "
                      f"command with --run {sweep['name']} --db {db_path} to finish it", markup=False)
        return
    console.print(sweep_table(aggregates))


def _with_prompts(store: Store, run_id: str, page: list[dict[str, Any]], wanted: bool) -> list[dict[str, Any]]:
    """``page`` of judgment rows, each with its exact ``prompt`` when ``wanted``."""
    if wanted:
        for judgment in page:
            judgment["prompt"] = store.judgment_prompt(run_id, judgment["item_id"], judgment["criterion_index"],
                                                       judgment["judge_id"], judgment["permutation_index"])
    return page


def _print_prompts(console: Console, judgments: list[dict[str, Any]]) -> None:
    for judgment in judgments:
        title = (f"prompt: item {escape(judgment['item_id'])}, criterion {judgment['criterion_index'] + 1}, "
                 f"judge {escape(judgment['judge_id'])}, option order {judgment['permutation_index']}")
        if console.is_terminal:
            console.rule(title)
        else:  # piped: a rule would be as wide as the unlimited console (100,000 characters)
            console.print(f"── {title} ──")
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
        # A failed criterion has no verdict of its own (the stored one is the scoring's placeholder), and a
        # failed item's contributions add up to no score.
        verdict = "" if row["error"] else escape(row["verdict"] or "")
        contribution = "" if score is None else _number(row["contribution"])
        table.add_row(escape(row["criterion_name"] or f"criterion {row['criterion_index'] + 1}"),
                      f"{row['weight']:g}", verdict, _number(row["probability"], 2), passed, contribution, note)
    return table


def _votes_table(judgments: list[dict[str, Any]], *, continued: bool = False) -> Table:
    """The votes of one page of judgments (a run's later pages: "(continued)")."""
    title = "Votes: each judge, each option order" + (" (continued)" if continued else "")
    table = Table(title=title, title_justify="left")
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
