"""``autorubric-local models``: the judge presets and where their weights are."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table


@click.command()
def models() -> None:
    """List known judge presets and whether their weights are found.

    Example:

        autorubric-local models
    """
    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.judges.presets import list_presets, resolve_model

    table = Table(title="Judge presets")
    for column in ("name", "found at", "description"):
        table.add_column(column, overflow="fold")
    for preset in list_presets():
        try:
            where = str(resolve_model(preset.name).path)
        except ModelNotFoundError:
            where = "[yellow]not installed[/yellow]"
        table.add_row(preset.name, where, preset.description)
    Console().print(table)
