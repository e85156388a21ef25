"""Output that survives a pipe (issue 51): with stdout and stderr not a terminal (CliRunner's
streams, like `| less` or `> out.txt`), tables are not folded at 80 columns and no line is a
100,000-character rule. Before, `sweep` printed through rich's default console (folded to 80
columns), `models`/`backends` too, and `show --prompt` drew each prompt's header as a rule as
wide as the unlimited console."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_sweeps_as_runs import DATA_FILE, RUBRIC_FILE, hashed, judge_policy  # noqa: F401 (fixture)

from autorubric_local.cli import main

LONG_LINE = 2_000


def piped(*args: str | Path) -> str:
    done = CliRunner(env={"COLUMNS": "80"}).invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert max(len(line) for line in done.output.splitlines()) < LONG_LINE
    return done.output


def test_sweep_and_show_keep_their_lines_whole_when_piped(tmp_path: Path, judge_policy) -> None:  # noqa: F811
    judge_policy(hashed)
    db = tmp_path / "r.sqlite"
    swept = piped("sweep", RUBRIC_FILE, DATA_FILE, "--db", db, "--bootstrap", "50", "--run", "s")
    rows = [line for line in swept.splitlines() if line.startswith("│")]
    assert rows and all(line.endswith("│") for line in rows)  # each row whole on one line
    assert any("technical_depth" in line and "use_case_advice" not in line for line in rows)
    piped("grade", RUBRIC_FILE, DATA_FILE, "--db", db, "--run", "g", "--no-progress", "--seed", "1")
    shown = piped("show", "g", "--db", db, "--item", "vague", "--prompt")
    headers = [line for line in shown.splitlines() if "prompt: item vague" in line]
    assert headers and all(line.startswith("── prompt: item vague, criterion ") for line in headers)


@pytest.mark.parametrize("command", ["models", "backends"])
def test_listing_tables_are_not_folded(command: str) -> None:
    rows = [line for line in piped(command).splitlines() if line.startswith("│")]
    assert len(rows) >= 2
    assert all(line.split("│")[1].strip() for line in rows)  # no row folded onto a continuation line
