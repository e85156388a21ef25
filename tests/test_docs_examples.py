"""Every ```python block of the docs pages and the README runs here, on the tiny random judge.

The preset name ``smollm2-135m-instruct`` in an example is replaced by the tiny random judge's
folder (``tiny_model_dir``): the examples are checked to run as written, not for what a real
judge answers (the embedded judge's own runs are in tests/test_spec_examples.py, ``slow``). A
block that cannot run here is marked in its page by an HTML comment on the line before it,
``<!-- not-run: why -->``, and is skipped by name with that reason, never silently. Top-level
``await`` (as in a notebook) is allowed.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.*?)\s*-->\s*$")


def examples() -> list[tuple[str, str, str | None]]:
    """(page:line, source, reason it is not run or None) for every ```python block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marked = NOT_RUN.search(before)
            found.append((f"{page.relative_to(REPO)}:{line}", match.group(1), marked.group(1) if marked else None))
    return found


EXAMPLES = examples()


def test_the_docs_have_examples_to_run() -> None:
    run = [name for name, _, reason in EXAMPLES if reason is None]
    assert len(run) >= 4, f"only {run} run"


@pytest.mark.parametrize(("name", "source", "reason"), EXAMPLES, ids=[name for name, _, _ in EXAMPLES])
def test_docs_example_runs(name: str, source: str, reason: str | None, tiny_model_dir: Path,
                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if reason is not None:
        pytest.skip(f"not run ({name}): {reason}")
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    code = compile(source.replace('"smollm2-135m-instruct"', repr(str(tiny_model_dir))), name, "exec",
                   flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)  # not this file's __future__
    outcome = eval(code, {"__name__": "__docs_example__"})  # noqa: S307 - the docs' own examples
    if inspect.iscoroutine(outcome):
        asyncio.run(outcome)
