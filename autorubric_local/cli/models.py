"""``autorubric-local models``: the judge presets and where their weights are."""

from __future__ import annotations

import click
from rich.table import Table

from autorubric_local.cli.common import plain_console


@click.command()
def models() -> None:
    """List known judge presets, whether their weights are found, and the backend that runs them.

    The backend column is what ``backend="auto"`` picks (the preset's choice, else llama.cpp for
    a GGUF when llama-cpp-python is installed, else transformers).

    Example:

        autorubric-local models
    """
    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.engines import choose_backend
    from autorubric_local.judges.presets import list_presets, resolve_model

    table = Table(title="Judge presets")
    table.add_column("name", no_wrap=True)
    for column in ("found at", "backend (auto)", "description"):
        table.add_column(column, overflow="fold")
    for preset in list_presets():
        try:
            resolved = resolve_model(preset.name)
            where, backend = str(resolved.path), choose_backend(LLMConfig(model=preset.name), resolved)
        except ModelNotFoundError:
            where, backend = "[yellow]not installed[/yellow]", ""
        table.add_row(preset.name, where, backend, preset.description)
    plain_console().print(table)
