"""Every command the docs name exists, and every relative link in them leads somewhere (issue 51;
sqlite-utils' ``tests/test_docs.py`` is the pattern).

Read: README.md, examples/README.md and docs/*.md. A command is ``autorubric-local NAME [SUB]``
inside backticks or a code block; NAME must be a command of the CLI and, where NAME is a group
(``label``), SUB one of its subcommands. A link is a Markdown ``[text](target)`` whose target is
not a URL: the file must exist and, with ``#anchor``, have a heading of that slug (GitHub's and
mkdocs' rule: lower case, punctuation but ``_`` and ``-`` dropped, spaces to hyphens).
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from autorubric_local.cli import main

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", REPO / "examples" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_TICKS = re.compile(r"`([^`\n]+)`")
_COMMAND = re.compile(r"autorubric-local\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?")
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _code(text: str) -> list[str]:
    """The page's code: fenced blocks and inline code spans (a ```` ```text ```` block is prose, e.g.
    a docstring quoted in docs/api-reference.md, where "autorubric-local extension" names no command)."""
    blocks = [block for block in _FENCE.findall(text) if not block.startswith("```text")]
    rest = _FENCE.sub("", text)
    return blocks + _TICKS.findall(rest)


def commands_named(text: str) -> set[tuple[str, str | None]]:
    """``(NAME, SUB)`` for each ``autorubric-local NAME [SUB]`` in the page's code."""
    found = set()
    for code in _code(text):
        for line in code.splitlines():
            found.update((m.group(1), m.group(2)) for m in _COMMAND.finditer(line))
    return found


def missing_commands(text: str) -> list[str]:
    """The commands a page names that the CLI does not have."""
    missing = []
    for name, sub in sorted(commands_named(text), key=str):
        command = main.commands.get(name)
        if command is None:
            missing.append(name)
        elif isinstance(command, click.Group) and sub is not None and sub not in command.commands:
            missing.append(f"{name} {sub}")
    return missing


def slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def broken_links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # a URL (https:, mailto:)
            continue
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.exists():
            broken.append(target)
        elif anchor and destination.suffix == ".md":
            slugs = {slug(h) for h in _HEADING.findall(_FENCE.sub("", destination.read_text(encoding="utf-8")))}
            if anchor not in slugs:
                broken.append(target)
    return broken


def test_the_checker_catches_a_command_that_does_not_exist() -> None:
    page = "Import them with `autorubric-local label import labels.jsonl`, then `autorubric-local grade`."
    assert missing_commands(page) == ["label import"]
    assert missing_commands("```bash\nautorubric-local frobnicate x\n```") == ["frobnicate"]
    assert missing_commands("an autorubric-local version that ...") == []  # prose, not code


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_a_page_names_exists(page: Path) -> None:
    assert missing_commands(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading(page: Path) -> None:
    assert broken_links(page) == []
