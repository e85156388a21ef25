"""Every ```python and ```bash block of the docs pages and the README runs here, on the tiny random judge.

A block that cannot run here (a GPU box, a cluster, data not shipped, a set-up script) is marked
in its page by an HTML comment on the line before its fence, ``<!-- not-run: why -->``, and is
skipped by name (``page:line``) with that reason, never silently.

Python blocks: the preset name ``smollm2-135m-instruct`` in an example is replaced by the tiny
random judge's folder (``tiny_model_dir``); each block runs alone in an empty folder. Top-level
``await`` (as in a notebook) is allowed.

Bash blocks: a page's blocks run in page order in one temporary folder per page (a reader
following the page), holding a copy of the repository's ``examples/``; one test per page. Each
command (backslash continuations joined, comments dropped by :mod:`shlex`) must be
``autorubric-local ...`` or ``.venv/bin/autorubric-local ...`` (run in-process with click's
``CliRunner`` on ``autorubric_local.cli.main``) or ``sqlite-utils ...`` (sqlite-utils' own click
CLI, in-process), and must exit 0. An unmarked block with any other command, or a shell operator
(``&&``, ``|``, ``>``, ...), fails naming its page and line. The embedded default judge
(``smollm2-135m-instruct``: ``grade`` without ``--model``, ``examples/judges.yaml``) is the tiny
random judge here: a user preset of that name (``$AUTORUBRIC_LOCAL_MODELS``, which wins over the
built-in presets) points at ``tiny_model_dir``. The commands are checked to run as written, not
for what a real judge answers (the embedded judge's own runs: tests/test_spec_examples.py, ``slow``).
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import re
import shlex
import shutil
import traceback
from pathlib import Path

import pytest
import sqlite_utils.cli
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.judges import engines
from autorubric_local.judges.presets import resolve_model

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.*?)\s*-->\s*$")
PROGRAMS = {"autorubric-local": main, ".venv/bin/autorubric-local": main, "sqlite-utils": sqlite_utils.cli.cli}
"""The commands a bash block may run, each to the click command run in-process for it."""


def blocks(language: str) -> list[tuple[Path, int, str, str | None]]:
    """(page, line of the fence, source, reason it is not run or None) for every ```language block."""
    fence = re.compile(rf"^```{language}\n(.*?)^```", re.S | re.M)
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in fence.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marked = NOT_RUN.search(before)
            found.append((page, text.count("\n", 0, match.start()) + 1, match.group(1),
                          marked.group(1) if marked else None))
    return found


def name(page: Path, line: int) -> str:
    return f"{page.relative_to(REPO)}:{line}"


def commands(page: Path, line: int, source: str) -> list[tuple[str, list[str]]]:
    """(page:line, argv) for each command of a bash block; AssertionError if one cannot run here."""
    found = []
    logical, start = "", line + 1
    for number, text in enumerate(source.splitlines(), start=line + 1):
        if not logical:
            start = number
        if text.endswith("\\"):
            logical += text[:-1] + " "
            continue
        logical, text = "", logical + text
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)  # '#' outside quotes: a comment
        lexer.whitespace_split = True
        argv = list(lexer)
        if not argv:
            continue
        where = name(page, start)
        operators = [token for token in argv if token and set(token) <= set(lexer.punctuation_chars)]
        assert argv[0] in PROGRAMS and not operators, (
            f"{where}: `{text.strip()}` cannot run in tests/test_docs_examples.py (only "
            f"{', '.join(PROGRAMS)} commands, without shell operators): mark the block with "
            "`<!-- not-run: why -->` on the line before its fence, or make it runnable")
        found.append((where, argv))
    assert not logical, f"{name(page, start)}: the block ends inside a backslash continuation"
    return found


PYTHON = blocks("python")
BASH = blocks("bash")
BASH_PAGES = sorted({page for page, _, _, reason in BASH if reason is None})
NOT_RUN_BASH = [(name(page, line), reason) for page, line, _, reason in BASH if reason is not None]


def test_the_docs_have_examples_to_run() -> None:
    run = [name(page, line) for page, line, _, reason in PYTHON if reason is None]
    assert len(run) >= 4, f"only {run} run"
    run = [name(page, line) for page, line, _, reason in BASH if reason is None]
    assert len(run) >= 4, f"only {run} run"


@pytest.mark.parametrize(("page", "line", "source", "reason"), PYTHON,
                         ids=[name(page, line) for page, line, _, _ in PYTHON])
def test_docs_example_runs(page: Path, line: int, source: str, reason: str | None, tiny_model_dir: Path,
                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = name(page, line)
    if reason is not None:
        pytest.skip(f"not run ({where}): {reason}")
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    code = compile(source.replace('"smollm2-135m-instruct"', repr(str(tiny_model_dir))), where, "exec",
                   flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)  # not this file's __future__
    before = engines.cached_engine_ids()
    try:
        outcome = eval(code, {"__name__": "__docs_example__"})  # noqa: S307 - the docs' own examples
        if inspect.iscoroutine(outcome):
            asyncio.run(outcome)
    finally:  # an example's grader keeps its judge loaded (as a user's would): released here, so a
        # later test in this process that needs load_engine's cache empty finds it so
        for engine in engines.loaded_engines():
            if id(engine) not in before:
                engines.release_engine(engine)


@pytest.mark.parametrize(("where", "reason"), NOT_RUN_BASH, ids=[where for where, _ in NOT_RUN_BASH])
def test_docs_shell_example_not_run(where: str, reason: str) -> None:
    pytest.skip(f"not run ({where}): {reason}")


@pytest.fixture
def tiny_default_judge(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The preset ``smollm2-135m-instruct`` is the tiny random judge: a user preset folder."""
    folder = tmp_path_factory.mktemp("presets")
    (folder / "smollm2-135m-instruct.yaml").write_text(
        "name: smollm2-135m-instruct\n"
        "description: the tiny random test judge, standing in for the embedded judge in the docs' examples\n"
        f"weights:\n  paths: [{json.dumps(str(tiny_model_dir))}]\n"
        "backend: transformers\n", encoding="utf-8")
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(folder))
    assert resolve_model("smollm2-135m-instruct").path == tiny_model_dir


@pytest.mark.parametrize("page", BASH_PAGES, ids=[str(page.relative_to(REPO)) for page in BASH_PAGES])
@pytest.mark.usefixtures("tiny_default_judge")
def test_docs_shell_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's unmarked bash blocks, in page order, in one folder holding a copy of ``examples/``."""
    runnable = [command for path, line, source, reason in BASH if path == page and reason is None
                for command in commands(path, line, source)]  # every block checked before any runs
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for where, argv in runnable:
        result = CliRunner().invoke(PROGRAMS[argv[0]], argv[1:], catch_exceptions=True)
        raised = "" if result.exc_info is None or isinstance(result.exception, SystemExit) else \
            "".join(traceback.format_exception(*result.exc_info))
        assert result.exit_code == 0, (f"{where}: `{shlex.join(argv)}` exited {result.exit_code}:\n"
                                       f"{result.output}{raised}")
