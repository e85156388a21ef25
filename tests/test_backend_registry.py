"""Judge backends come from one registry (issue 32): built-in ones and plugins registered through
the ``autorubric_local.backends`` entry point group alike. A toy plugin installed as a
distribution on ``sys.path`` (a ``.dist-info`` folder with ``entry_points.txt``, as pip writes
it) is listed, accepted by ``LLMConfig``, loaded by ``load_engine``, refuses the fields it says it
cannot honour, and grades, in this process and through the CLI; a broken plugin is skipped with
a warning that names it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlite_utils

from autorubric_local.core.errors import InputError
from autorubric_local.judges.backends import Backend, backend_names, registered
from autorubric_local.judges.backends import registry
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.engines import load_engine

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

TOY_MODULE = '''
from autorubric_local.engine import ScriptedEngine
from autorubric_local.judges.backends import Backend


def load(config, resolved):
    # the first label always: MET for a binary criterion
    return ScriptedEngine(model_id=f"toy:{config.model}", policy=lambda r: [0.0] + [-6.0] * (len(r.labels) - 1))


BACKEND = Backend(name="toy", load=load, description="a toy judge for the registry's tests", resolves_model=False,
                  unsupported={"top_p": "toy judges never sample"}, capabilities=frozenset({"logprobs"}))
'''


def install_plugin(root: Path, name: str, entry_points: str, module: str | None = None) -> Path:
    """A distribution ``name`` as pip would leave it in site-packages: its module (if any) and a
    ``.dist-info`` folder with METADATA and ``entry_points.txt``."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[autorubric_local.backends]\n{entry_points}\n", encoding="utf-8")
    if module is not None:
        (root / f"{name.replace('-', '_')}.py").write_text(module, encoding="utf-8")
    return root


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A site folder holding the toy plugin and a broken one, on ``sys.path``; the registry is
    read afresh inside the test and again after it."""
    site = install_plugin(tmp_path / "site", "toy-judges", "toy = toy_judges:BACKEND", TOY_MODULE)
    install_plugin(site, "broken-judges", "broken = broken_judges_missing:BACKEND")
    monkeypatch.syspath_prepend(str(site))
    registry.reset()
    yield site
    monkeypatch.undo()
    sys.modules.pop("toy_judges", None)
    registry.reset()


def test_built_in_backends_are_registered_in_listing_order() -> None:
    assert backend_names()[:4] == ["transformers", "vllm", "llamacpp", "hosted"]
    records = registered()
    assert [b.name for b in registry.auto_candidates()] == ["transformers", "llamacpp"]
    assert records["vllm"].memory_share and not records["transformers"].memory_share
    assert not records["hosted"].local and not records["hosted"].resolves_model
    assert all(records[name].local for name in ("transformers", "vllm", "llamacpp"))


def test_a_plugin_backend_loads_and_grades(plugins: Path, caplog: pytest.LogCaptureFixture) -> None:
    from autorubric_local.core.rubric import Rubric
    from autorubric_local.graders import CriterionGrader
    from autorubric_local.graders.criterion_grader import JudgeSpec

    with caplog.at_level(logging.WARNING, logger="autorubric_local.judges.backends.registry"):
        names = backend_names()
    assert names[:4] == ["transformers", "vllm", "llamacpp", "hosted"] and "toy" in names and "broken" not in names
    assert any("backend plugin broken (broken_judges_missing:BACKEND) could not be loaded: ModuleNotFoundError"
               in r.getMessage() for r in caplog.records)
    config = LLMConfig(model="any-model", backend="toy")
    engine = load_engine(config)
    assert engine.model_id == "toy:any-model"
    rubric = Rubric.from_dict([{"name": "a", "weight": 2.0, "requirement": "States a number."},
                               {"name": "b", "weight": 1.0, "requirement": "Names a use."}])
    grader = CriterionGrader(judges=[JudgeSpec(config, "toy")])
    report = asyncio.run(rubric.grade("NMC stores 250 Wh/kg; LFP suits buses.", grader))
    assert report.error is None and report.score == pytest.approx(1.0)
    assert [cr.final_verdict.value for cr in report.report] == ["MET", "MET"]


def test_a_plugin_backend_refuses_what_its_record_says(plugins: Path) -> None:
    with pytest.raises(InputError) as refused:
        load_engine(LLMConfig(model="any-model", backend="toy", top_p=0.5))
    assert str(refused.value) == "LLMConfig.top_p is not supported by the toy backend (got 0.5); toy judges never sample"


def test_an_unknown_backend_is_refused_with_the_registered_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown backend 'nope'; known: auto, transformers, vllm, llamacpp, hosted"):
        LLMConfig(model="x", backend="nope")


def test_a_record_with_an_unknown_capability_or_name_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown capabilities \\['telepathy'\\]"):
        Backend(name="odd", load=lambda config, resolved: None, capabilities=frozenset({"telepathy"}))  # type: ignore
    with pytest.raises(ValueError, match="not 'auto'"):
        Backend(name="auto", load=lambda config, resolved: None)  # type: ignore


def test_register_refuses_a_second_backend_of_one_name() -> None:
    toy = Backend(name="transformers", load=lambda config, resolved: None)  # type: ignore
    with pytest.raises(ValueError, match="'transformers' is registered already"):
        registry.register(toy)


def test_the_cli_grades_with_a_plugin_backend(plugins: Path, tmp_path: Path) -> None:
    """The installed plugin is a ``--backend`` choice of a fresh ``autorubric-local`` process."""
    db = tmp_path / "r.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "autorubric_local.cli", "grade", str(EXAMPLES / "battery_rubric.yaml"),
                           str(EXAMPLES / "battery_submissions.jsonl"), "--model", "any-model", "--backend", "toy",
                           "--db", str(db), "--limit", "2", "--no-progress", "--jsonl"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    (run,) = sqlite_utils.Database(db)["runs"].rows
    assert [j["model_id"] for j in json.loads(run["judges_json"])] == ["toy:any-model"]
    judgments = list(sqlite_utils.Database(db)["judgments"].rows)
    assert judgments and all(j["error"] is None for j in judgments)
    listed = subprocess.run([sys.executable, "-m", "autorubric_local.cli", "backends", "--json"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in map(json.loads, listed.stdout.splitlines())}
    assert list(rows) == ["transformers", "vllm", "llamacpp", "hosted", "server", "toy"]
    assert rows["toy"] == {"name": "toy", "origin": "plugin toy (toy_judges:BACKEND)",
                           "description": "a toy judge for the registry's tests", "local": True, "auto": False,
                           "memory_share": False, "capabilities": ["logprobs"], "refuses": ["top_p"]}
    assert rows["transformers"]["origin"] == "built-in" and rows["vllm"]["memory_share"]
