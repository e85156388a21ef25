"""``autorubric-local backends``: the registered judge backends and what each declares (the
support matrix, read from the registry: :mod:`autorubric_local.judges.backends`)."""

from __future__ import annotations

import json

import click
from rich.table import Table

from autorubric_local.cli.common import plain_console


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per backend (JSON Lines).")
def backends(as_json: bool) -> None:
    """List the judge backends: built-in ones and those plugins register (entry point group
    ``autorubric_local.backends``), whether each runs locally, whether ``--backend auto`` may pick
    it, its declared capabilities and the LLMConfig fields it refuses.

    Example:

        autorubric-local backends
    """
    from autorubric_local.judges.backends.registry import origin, registered

    rows = [{"name": b.name, "origin": origin(b.name), "description": b.description, "local": b.local,
             "auto": b.auto_rank is not None, "memory_share": b.memory_share,
             "capabilities": sorted(b.capabilities), "refuses": list(b.unsupported)}
            for b in registered().values()]
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    table = Table(title="Judge backends")
    table.add_column("name", no_wrap=True)
    for column in ("origin", "local", "auto", "capabilities", "refuses", "description"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["name"], row["origin"], "yes" if row["local"] else "no", "yes" if row["auto"] else "no",
                      ", ".join(row["capabilities"]), ", ".join(row["refuses"]), row["description"])
    plain_console().print(table)
