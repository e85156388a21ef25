"""Helpers shared by the CLI commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.core.rubric import Rubric


def fail(exc: BaseException) -> click.ClickException:
    """A library error as a clean CLI error (message only, exit status 1)."""
    return click.ClickException(str(exc))


def load_rubric(path: Path) -> Rubric:
    """The rubric file at ``path``; a clean CLI error naming the file when it cannot be read."""
    from autorubric_local.core.rubric import Rubric

    try:
        return Rubric.from_file(str(path))
    except (ValueError, OSError) as exc:
        raise click.ClickException(f"{path}: {exc}") from exc
