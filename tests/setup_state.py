"""One rule for a test whose optional set-up is missing: skip only on a checkout where that set-up
script has never run and ``CI`` is unset; otherwise fail, naming the script.

Each ``scripts/setup*.sh`` writes a stamp when it succeeds (below). A stamp means the set-up was
meant to be there, so a judge, llama.cpp, vLLM venv, Ray or Chromium that is missing is a broken
set-up, never a silent skip that lets a half-failed set-up pass.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]

STAMPS: dict[str, tuple[str, str]] = {
    "setup.sh": ("venv", ".setup-main-*"),
    "setup_llamacpp.sh": ("venv", ".setup-llamacpp-*"),
    "setup_ray.sh": ("venv", ".setup-ray-*"),
    "setup_browser.sh": ("venv", ".browser-ready"),
    "setup_vllm.sh": (".venv-vllm", ".setup-*"),
}
"""Set-up script -> (folder, glob of its stamp). ``venv`` is the environment running the tests
(``.venv`` under README command 2); the others are relative to the checkout."""


def stamp_dir(script: str, root: Path = ROOT, venv: Path | None = None) -> Path:
    folder, _ = STAMPS[script]
    if folder == "venv":
        return venv if venv is not None else Path(sys.prefix)
    return root / folder


def has_run(script: str, root: Path = ROOT, venv: Path | None = None) -> bool:
    """Whether ``scripts/<script>`` has left its stamp (any version of it)."""
    return any(stamp_dir(script, root, venv).glob(STAMPS[script][1]))


def must_fail(script: str, *, root: Path = ROOT, venv: Path | None = None,
              environ: Mapping[str, str] | None = None) -> str | None:
    """Why a missing ``scripts/<script>`` set-up is a failure here (``CI`` or its stamp), or None."""
    if script not in STAMPS:
        raise KeyError(f"unknown set-up script {script!r}; known: {sorted(STAMPS)}")
    environ = os.environ if environ is None else environ
    if environ.get("CI"):
        return "CI is set"
    if has_run(script, root, venv):
        return f"it ran before: {stamp_dir(script, root, venv)}/{STAMPS[script][1]} exists"
    return None


def missing(what: str, script: str, *, root: Path = ROOT, venv: Path | None = None,
            environ: Mapping[str, str] | None = None, allow_module_level: bool = False) -> NoReturn:
    """Skip, or fail once ``scripts/<script>`` has run or under ``CI``: ``what`` is missing."""
    message = f"{what}: run scripts/{script}"
    reason = must_fail(script, root=root, venv=venv, environ=environ)
    if reason is not None:
        pytest.fail(f"{message} ({reason})", pytrace=False)
    pytest.skip(message, allow_module_level=allow_module_level)
