"""The package works as a user installs it: a wheel built from this checkout's files, installed (not
editable) into a fresh virtual environment, lists the built-in model presets and resolves the
embedded judge. Dependencies come from the test environment's site-packages (added as a plain
path, so its editable install of this package is not seen); the wheel's own files must carry
everything else, the presets included."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

REPO = Path(__file__).resolve().parent.parent

CHECK = """
import json, autorubric_local
from autorubric_local import LLMConfig
from autorubric_local.judges.presets import list_presets, resolve_model
resolved = resolve_model("smollm2-135m-instruct")
LLMConfig(model="smollm2-135m-instruct")
print(json.dumps({
    "package_file": autorubric_local.__file__,
    "presets": [p.name for p in list_presets()],
    "kind": resolved.kind,
    "path": str(resolved.path),
    "exists": resolved.path.is_file(),
}))
"""


def run(*args: str | Path, cwd: Path) -> str:
    # PYTHONPATH (a checkout under test) must not reach the fresh venv: it would hide the wheel.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel of this checkout; returns its folder."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"  # a clean copy: no build/ folder left from an earlier build
    files = run("git", "ls-files", "--cached", "--others", "--exclude-standard", cwd=REPO).splitlines()
    for name in files:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    dist = base / "dist"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, source, cwd=base)
    (wheel,) = dist.glob("autorubric_local-*.whl")
    env = base / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=base).strip())
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "test_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n", encoding="utf-8")
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=base)
    return env


def test_installed_wheel_lists_presets_and_resolves_the_embedded_judge(installed: Path) -> None:
    report = json.loads(run(installed / "bin" / "python", "-c", CHECK, cwd=installed))
    assert Path(report["package_file"]).is_relative_to(installed), report["package_file"]
    assert {"smollm2-135m-instruct", "qwen2.5-7b-instruct"} <= set(report["presets"])
    assert report["kind"] == "gguf" and report["exists"], report
    assert report["path"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")


def test_installed_cli_lists_the_presets(installed: Path) -> None:
    out = run(installed / "bin" / "autorubric-local", "models", cwd=installed)
    assert "smollm2-135m-instruct" in out and "qwen2.5-7b-instruct" in out
