"""What every report page shares: the template environment (autoescaped), the page's file name
and the default output folder. Below :mod:`.html` (a run's report) and :mod:`.comparisons` (a
comparison's page), so neither imports the other for them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["REPORT_FILE", "default_out_dir", "environment"]

REPORT_FILE = "index.html"
"""Name of the page written into the output folder."""


def environment() -> Any:
    """The Jinja environment of the report templates: autoescape on (data text is untrusted),
    strict undefined, the ``num`` and ``pct`` filters."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    return env


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def default_out_dir(run_name: str) -> Path:
    """``report-<run name>``: the folder a report goes to when none is given (characters other
    than letters, digits, ``.``, ``_`` and ``-`` replaced by ``_``)."""
    return Path("report-" + re.sub(r"[^A-Za-z0-9._-]", "_", run_name))
