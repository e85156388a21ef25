"""Helpers shared by the CLI commands."""

from __future__ import annotations

import click


def fail(exc: BaseException) -> click.ClickException:
    """A library error as a clean CLI error (message only, exit status 1)."""
    return click.ClickException(str(exc))
