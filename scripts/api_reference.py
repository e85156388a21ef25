"""The Python API reference as plain Markdown, for reading where mkdocstrings does not run.

docs/python-api.md's "Reference" section names the public objects with mkdocstrings' ``:::``
directives, which the docs site renders and GitHub shows as bare lines (issue 51).
:func:`api_reference` writes the same objects, under the same headings, as Markdown: each
one's signature and its docstring as written (numpydoc), in a text block. docs/api-reference.md
holds it between cog markers; ``tests/test_docs_reference.py`` fails while it is stale
(regenerate with ``PYTHONPATH=. python -m cogapp -r docs/api-reference.md``).
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "python-api.md"
DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$")


def directives(page: Path = PAGE) -> list[tuple[str, str]]:
    """``(heading, dotted name)`` of every ``:::`` line under the page's "## Reference"."""
    text = page.read_text(encoding="utf-8")
    section = text[text.index("\n## Reference\n"):]
    heading, found = "", []
    for line in section.splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
        match = DIRECTIVE.match(line)
        if match:
            found.append((heading, match.group(1)))
    return found


def _resolve(dotted: str) -> Any:
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError:
        module, _, name = dotted.rpartition(".")
        return getattr(importlib.import_module(module), name)


def _signature(name: str, obj: Any) -> str:
    try:
        return f"{name}{inspect.signature(obj)}"
    except (TypeError, ValueError):
        return name


def _entry(dotted: str, obj: Any) -> str:
    name = dotted.rpartition(".")[2]
    kind = "class" if inspect.isclass(obj) else "async def" if inspect.iscoroutinefunction(obj) else "def"
    doc = inspect.getdoc(obj) or "(no docstring)"
    return f"#### `{dotted}`\n\n```text\n{kind} {_signature(name, obj)}\n\n{doc}\n```\n"  # text: not run as a docs example


def api_reference(page: Path = PAGE) -> str:
    """The Markdown reference of every object the page's directives name, in page order (a
    module's directive: each public class and function it defines, by name)."""
    out: list[str] = []
    heading = None
    for section, dotted in directives(page):
        if section != heading:
            out.append(f"### {section}\n")
            heading = section
        obj = _resolve(dotted)
        if inspect.ismodule(obj):
            members = [(n, m) for n, m in vars(obj).items() if not n.startswith("_")
                       and (inspect.isclass(m) or inspect.isfunction(m)) and m.__module__ == obj.__name__]
            out += [_entry(f"{dotted}.{n}", m) for n, m in sorted(members)]
        else:
            out.append(_entry(dotted, obj))
    return "\n".join(out)
