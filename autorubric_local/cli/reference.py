"""The CLI reference, ``docs/cli.md``, generated from the click commands themselves.

:func:`cli_reference` walks every group from :func:`autorubric_local.cli.main` and renders each
command's ``--help`` at a fixed width (:data:`HELP_WIDTH`), so the page is the same on every
terminal. cog runs it inside ``docs/cli.md`` (``cog -r docs/cli.md docs/database.md``) and
``tests/test_docs_reference.py`` fails when the committed page differs.
"""

from __future__ import annotations

import click

HELP_WIDTH = 100
"""Columns the help is wrapped at (click's ``terminal_width`` and ``max_content_width``)."""

PROGRAM = "autorubric-local"


def walk_commands(
    command: click.Command, path: tuple[str, ...] = (PROGRAM,), parent: click.Context | None = None
) -> list[tuple[tuple[str, ...], click.Command, click.Context]]:
    """Every command under ``command`` (itself first), depth first, subcommands in name order:
    ``(path, command, context)`` with ``path`` the words typed (``("autorubric-local", "label", "select")``)."""
    context = click.Context(command, info_name=path[-1], parent=parent,
                            terminal_width=HELP_WIDTH, max_content_width=HELP_WIDTH)
    found = [(path, command, context)]
    if isinstance(command, click.Group):
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is not None and not sub.hidden:
                found += walk_commands(sub, (*path, name), context)
    return found


def cli_reference(root: click.Command | None = None) -> str:
    """Markdown for ``docs/cli.md``: a table of every command with its one-line purpose (the first
    sentence of its help), then each command's full ``--help``."""
    if root is None:
        from autorubric_local.cli import main as root
    commands = walk_commands(root)
    lines = ["| command | purpose |", "| --- | --- |"]
    for path, command, _ in commands:
        name = " ".join(path)
        lines.append(f"| [`{name}`](#{_anchor(name)}) | {_cell(command.get_short_help_str(limit=1000))} |")
    for path, command, context in commands:
        lines += ["", f"## {' '.join(path)}", "", "```text", command.get_help(context).rstrip(), "```"]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


def _anchor(heading: str) -> str:
    """The anchor GitHub and mkdocs give a heading of lower-case words, hyphens and spaces."""
    return heading.lower().replace(" ", "-")
