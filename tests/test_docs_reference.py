"""The generated references, ``docs/cli.md`` and ``docs/database.md``, are current.

Both pages are written by cog from the code (``cog -r docs/cli.md docs/database.md``): the CLI
reference from the click commands (:mod:`autorubric_local.cli.reference`), the database reference
from a database migrated in memory and the column descriptions of
:mod:`autorubric_local.store.schema_docs`. These tests fail when a committed page differs from what
cog writes now, when a command has no section in ``docs/cli.md`` (as sqlite-utils'
``tests/test_docs.py`` does), and when a table, view or column has no description; the
``*_detects_*`` tests show each check failing on a page made stale on purpose (a command or a
column added here, a description changed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import cogapp
import pytest

from autorubric_local.cli import main
from autorubric_local.cli.reference import cli_reference, walk_commands
from autorubric_local.store import schema_docs
from autorubric_local.store.schema import open_db
from autorubric_local.store.schema_docs import (
    COLUMNS,
    TABLES,
    UndocumentedSchemaError,
    check_documented,
    database_reference,
    schema_columns,
)

DOCS = Path(__file__).resolve().parent.parent / "docs"
CLI_PAGE = DOCS / "cli.md"
DATABASE_PAGE = DOCS / "database.md"
BACKENDS_PAGE = DOCS / "backends.md"  # the support matrix (autorubric_local/judges/backends/reference.py)
API_PAGE = DOCS / "api-reference.md"  # python-api.md's reference as plain Markdown (scripts/api_reference.py)
COG_STALE = 5
"""``cog --check``'s exit status when a file would change (cogapp's ``Cog.main``)."""
COG_GENERATOR_RAISED = 4
"""``cog``'s exit status when the Python in a cog block raised."""


def cog_check(page: Path) -> int:
    """``cog --check page``, in this process (so monkeypatched code is what cog runs)."""
    return cogapp.Cog().main(["cog", "--check", "--diff", str(page)])


def missing_command_sections(text: str, root: click.Command = main) -> list[str]:
    """Commands under ``root`` whose ``## <command>`` section or full ``--help`` is not in ``text``."""
    missing = []
    for path, command, context in walk_commands(root):
        name = " ".join(path)
        if f"\n## {name}\n" not in text or command.get_help(context).rstrip() not in text:
            missing.append(name)
    return missing


@pytest.fixture
def fake_command(monkeypatch: pytest.MonkeyPatch) -> str:
    """A command added to ``autorubric-local`` for one test (the committed page lacks it)."""

    @click.command(name="zz-undocumented")
    def undocumented() -> None:
        """A command nobody documented."""

    monkeypatch.setitem(main.commands, "zz-undocumented", undocumented)
    return "autorubric-local zz-undocumented"


@pytest.mark.parametrize("page", [CLI_PAGE, DATABASE_PAGE, BACKENDS_PAGE, API_PAGE], ids=lambda p: p.name)
def test_committed_page_is_what_cog_writes(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if page == API_PAGE:
        # A fresh interpreter, as `cog -r` runs: the page is signatures and docstrings, and other
        # tests of the same worker may leave objects changed (the suite failed here, cog alone did not).
        done = subprocess.run([sys.executable, "-m", "cogapp", "--check", "--diff", str(page)], cwd=DOCS.parent,
                              env={**os.environ, "PYTHONPATH": str(DOCS.parent)}, capture_output=True, text=True,
                              timeout=300)
        status, shown = done.returncode, done.stdout[-4000:] + done.stderr[-2000:]
    else:
        status = cog_check(page)
        captured = capsys.readouterr()
        shown = captured.out[-4000:] + captured.err
    assert status == 0, (f"{page.name} is stale: run `PYTHONPATH=. python -m cogapp -r docs/cli.md docs/database.md "
                         f"docs/backends.md docs/api-reference.md`\n{shown}")


def test_the_plain_reference_has_every_object_of_the_python_api_page() -> None:
    text = API_PAGE.read_text(encoding="utf-8")
    sys.path.insert(0, str(DOCS.parent / "scripts"))
    from api_reference import directives

    named = directives()
    assert len(named) >= 20
    for _, dotted in named:
        assert f"`{dotted}" in text, dotted  # a module's directive: its members, `module.Name`


def test_cog_check_detects_an_undocumented_command(fake_command: str, tmp_path: Path) -> None:
    page = tmp_path / "cli.md"
    shutil.copy(CLI_PAGE, page)
    assert cog_check(page) == COG_STALE
    assert page.read_text(encoding="utf-8") == CLI_PAGE.read_text(encoding="utf-8")  # --check writes nothing


def test_cog_check_detects_a_changed_column_description(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(COLUMNS["runs"], "name", "A description the committed page does not have.")
    page = tmp_path / "database.md"
    shutil.copy(DATABASE_PAGE, page)
    assert cog_check(page) == COG_STALE


@pytest.mark.parametrize("path", [" ".join(path) for path, _, _ in walk_commands(main)])
def test_every_command_has_its_section_and_help(path: str) -> None:
    text = CLI_PAGE.read_text(encoding="utf-8")
    assert f"\n## {path}\n" in text
    assert f"(#{path.replace(' ', '-')})" in text  # listed, with its purpose, in the table at the top


def test_every_command_is_in_the_committed_page() -> None:
    assert missing_command_sections(CLI_PAGE.read_text(encoding="utf-8")) == []


def test_section_check_detects_an_undocumented_command(fake_command: str) -> None:
    # the new command has no section, and the root's help on the page no longer lists every command
    assert missing_command_sections(CLI_PAGE.read_text(encoding="utf-8")) == ["autorubric-local", fake_command]
    # and the generated page has it, with its one-line purpose
    regenerated = cli_reference()
    assert missing_command_sections(regenerated) == []
    assert f"| [`{fake_command}`](#autorubric-local-zz-undocumented) | A command nobody documented. |" in regenerated


def test_cli_reference_is_the_same_on_any_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    wide = cli_reference()
    monkeypatch.setenv("COLUMNS", "40")
    assert cli_reference() == wide


def test_every_table_view_and_column_of_a_migrated_database_is_described() -> None:
    schema = schema_columns(open_db(":memory:"))
    check_documented(schema)  # raises, naming each gap
    assert set(schema) == set(TABLES) == set(COLUMNS)
    for name, columns in schema.items():
        assert TABLES[name].strip(), name
        for column, _ in columns:
            assert COLUMNS[name][column].strip(), f"{name}.{column}"


def test_views_are_in_the_page_with_their_columns() -> None:
    db = open_db(":memory:")
    text = DATABASE_PAGE.read_text(encoding="utf-8")
    for view in db.view_names():
        assert f"\n## {view}\n\nView. " in text
        for column in db[view].columns:
            assert f"| `{column.name}` |" in text


def test_generator_refuses_an_undocumented_column() -> None:
    db = open_db(":memory:")
    db["runs"].add_column("undocumented_seconds", float)
    with pytest.raises(UndocumentedSchemaError, match=r"runs\.undocumented_seconds has no description"):
        database_reference(db)


def test_generator_refuses_an_undocumented_table_or_view() -> None:
    db = open_db(":memory:")
    db["undocumented_things"].create({"id": int}, pk="id")
    db.create_view("undocumented_view", "select id from runs")
    with pytest.raises(UndocumentedSchemaError) as raised:
        database_reference(db)
    message = str(raised.value)
    assert "'undocumented_things' has no description" in message
    assert "'undocumented_view' has no description" in message


def test_generator_refuses_a_description_of_a_column_that_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COLUMNS, "runs", {**COLUMNS["runs"], "dropped_column": "Gone in a later migration."})
    with pytest.raises(UndocumentedSchemaError, match=r"COLUMNS describes runs\.dropped_column"):
        database_reference()


def test_cog_fails_when_a_new_column_has_no_description(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A migration that adds an undocumented column: regenerating fails (cog reports the error)."""
    real_open_db = schema_docs.open_db

    def open_db_with_new_column(path: str) -> object:
        db = real_open_db(path)
        db["judgments"].add_column("new_undocumented", str)
        return db

    monkeypatch.setattr(schema_docs, "open_db", open_db_with_new_column)
    page = tmp_path / "database.md"
    shutil.copy(DATABASE_PAGE, page)
    assert cog_check(page) == COG_GENERATOR_RAISED
    assert "judgments.new_undocumented has no description" in capsys.readouterr().err
