"""The documentation site builds with ``mkdocs build --strict`` (warnings are errors): a broken link
or anchor, a page missing from the nav, or a docstring mkdocstrings cannot read fails here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytest.importorskip("mkdocs", reason="the [docs] extra is not installed (scripts/setup.sh installs it)")
pytest.importorskip("mkdocstrings", reason="the [docs] extra is not installed (scripts/setup.sh installs it)")


def test_docs_build_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert done.returncode == 0 and not warnings, done.stderr[-4000:]
    site = tmp_path / "site"
    assert (site / "index.html").exists()
    for page in ("quickstart", "python-api", "cli", "database", "results", "benchmarks"):
        assert (site / page / "index.html").exists(), f"{page} was not built"
    api = (tmp_path / "site" / "python-api" / "index.html").read_text(encoding="utf-8")
    assert "autorubric_local.judges.config.LLMConfig" in api  # mkdocstrings rendered the reference
