"""``grade`` checks every input before a judge loads (issue 12): ``--db``, ``--run``, files;
and its exit status: 3 when items or judgments failed (0 with ``--allow-failures``), 130 on
Ctrl-C. Judges are ScriptedEngines swapped in for the model loader, so nothing is loaded."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from autorubric_local.bias import sweep as bias_sweep
from autorubric_local.cli import main
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders import criterion_grader
from autorubric_local.judges import engines

RUBRIC_YAML = (
    "- name: density\n  weight: 10\n  requirement: States the energy density\n"
    "- name: depth\n  weight: 4\n  requirement: How deep is it?\n  scale_type: ordinal\n"
    "  options:\n    - {label: Vague, value: 0}\n    - {label: Expert, value: 1}\n"
)
DATA_JSONL = '{"id": "a", "submission": "NMC is dense."}\n{"id": "b", "submission": "poison"}\n'


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(RUBRIC_YAML, encoding="utf-8")
    data = tmp_path / "subs.jsonl"
    data.write_text(DATA_JSONL, encoding="utf-8")
    return rubric, data


@pytest.fixture
def no_judge(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Fail the test if any judge is loaded; the list stays empty."""
    loaded: list[Any] = []

    def refuse(config: Any) -> Any:
        loaded.append(config)
        pytest.fail(f"a judge was loaded: {config.model}")

    for module in (engines, criterion_grader, bias_sweep):  # every place a judge is loaded from
        monkeypatch.setattr(module, "load_engine", refuse)
    return loaded


def scripted(monkeypatch: pytest.MonkeyPatch, policy: Any) -> ScriptedEngine:
    engine = ScriptedEngine(policy=policy)
    monkeypatch.setattr(criterion_grader, "load_engine", lambda config: engine)
    return engine


def fair(request: ScoreRequest) -> list[float]:
    return [math.log(1 / len(request.labels))] * len(request.labels)


def grade(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["grade", *[str(a) for a in args], "--no-progress"])


def assert_clean_refusal(result: Result, code: int, *needles: str) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for needle in needles:
        assert needle in result.output


# ---------------------------------------------------------------------------- --db


def test_db_that_is_not_sqlite_is_refused_before_any_judge(
    tmp_path: Path, files: tuple[Path, Path], no_judge: list[Any]
) -> None:
    db = tmp_path / "notes.sqlite"
    db.write_text("these are my notes, not a database\n", encoding="utf-8")
    result = grade(*files, "--db", db)
    assert_clean_refusal(result, 2, "not an SQLite database", "notes.sqlite")
    assert db.read_text(encoding="utf-8") == "these are my notes, not a database\n"


def test_corrupt_sqlite_is_refused(tmp_path: Path, files: tuple[Path, Path], no_judge: list[Any]) -> None:
    db = tmp_path / "broken.sqlite"
    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    assert_clean_refusal(grade(*files, "--db", db), 2, "broken.sqlite", "cannot be read as an SQLite database")


def test_directory_as_db_is_refused(tmp_path: Path, files: tuple[Path, Path], no_judge: list[Any]) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    assert_clean_refusal(grade(*files, "--db", folder), 2, "results", "is a directory")


def test_db_under_a_file_is_refused(tmp_path: Path, files: tuple[Path, Path], no_judge: list[Any]) -> None:
    assert_clean_refusal(grade(*files, "--db", files[0] / "r.sqlite"), 2, "cannot be created")


@pytest.mark.parametrize("kind", ["new", "new-folder", "empty", "sqlite"])
def test_usable_databases_are_accepted(
    tmp_path: Path, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    db = tmp_path / ("sub/dir/r.sqlite" if kind == "new-folder" else "r.sqlite")
    if kind == "empty":
        db.write_bytes(b"")
    if kind == "sqlite":
        with sqlite3.connect(db) as connection:
            connection.execute("CREATE TABLE mine (x)")
    scripted(monkeypatch, fair)
    result = grade(*files, "--db", db, "--run", "ok-1")
    assert result.exit_code == 0, result.output
    assert db.is_file()


# ---------------------------------------------------------------------------- --run


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("x" * 129, "too long (129 characters; at most 128)"),
        ("tab\there", "must be printable"),
        ("bell\x07", "must be printable"),
        ("two words", "letters, digits"),
        ("-leading", "letters, digits"),
    ],
)
def test_bad_run_names_are_usage_errors(
    tmp_path: Path, files: tuple[Path, Path], no_judge: list[Any], name: str, needle: str
) -> None:
    db = tmp_path / "r.sqlite"
    assert_clean_refusal(grade(*files, "--db", db, "--run", name), 2, "--run", needle)
    assert not db.exists()


# ---------------------------------------------------------------------------- files


@pytest.mark.parametrize(
    ("which", "text", "needle"),
    [
        ("rubric", "- requirement: x\n  weigth: 2\n", "unknown field 'weigth' (did you mean 'weight'?)"),
        ("rubric", "- requirement: x\n  aggregation: median\n", "aggregation: "),
        ("data", '{"submission": "x", "quary": "q"}\n', "unknown field 'quary' (did you mean 'query'?)"),
        ("data", '{"text": "x"}\n', "field 'submission': missing"),
        ("judges", "judges: [{model: m, wieght: 1}]\n", "unknown field 'wieght' (did you mean 'weight'?)"),
        ("judges", "judges: [{model: m, weight: .nan}]\n", "field 'weight'"),
    ],
)
def test_bad_files_fail_before_any_judge(
    tmp_path: Path, files: tuple[Path, Path], no_judge: list[Any], which: str, text: str, needle: str
) -> None:
    rubric, data = files
    path = {"rubric": rubric, "data": data, "judges": tmp_path / "judges.yaml"}[which]
    path.write_text(text, encoding="utf-8")
    extra = ["--judges", path] if which == "judges" else []
    db = tmp_path / "r.sqlite"
    result = grade(rubric, data, "--db", db, *extra)
    assert_clean_refusal(result, 1, str(path), needle)
    assert not db.exists()


def test_directory_as_data_is_a_usage_error(tmp_path: Path, files: tuple[Path, Path], no_judge: list[Any]) -> None:
    assert_clean_refusal(grade(files[0], tmp_path, "--db", tmp_path / "r.sqlite"), 2, "is a directory")


# ---------------------------------------------------------------------------- exit status


def test_success_exits_0(tmp_path: Path, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    scripted(monkeypatch, fair)
    result = grade(*files, "--db", tmp_path / "r.sqlite")
    assert result.exit_code == 0, result.output
    assert "failed" not in result.stderr


def poisoned(request: ScoreRequest) -> Any:
    if "poison" in request.prefix:
        return "infrastructure: prompt longer than the judge's context"
    return fair(request)


def one_bad_judgment(request: ScoreRequest) -> Any:
    if "poison" in request.prefix and "Vague" in request.suffix:
        return "unknown: scripted failure"
    return fair(request)


@pytest.mark.parametrize(
    ("policy", "counts"),
    [(poisoned, "1 of 2 items failed, 2 judgments failed"), (one_bad_judgment, "0 of 2 items failed, 1 judgments failed")],
)
def test_failures_exit_3_unless_allowed(
    tmp_path: Path, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, policy: Any, counts: str
) -> None:
    scripted(monkeypatch, policy)
    result = grade(*files, "--db", tmp_path / "r.sqlite", "--run", "first")
    assert result.exit_code == 3, result.output
    assert f"{counts}; exit status 3" in result.stderr
    assert "b" in result.stdout  # the results are still printed
    allowed = grade(*files, "--db", tmp_path / "r.sqlite", "--run", "second", "--allow-failures", "--json")
    assert allowed.exit_code == 0, allowed.output
    assert f"{counts}; exit status 0 (--allow-failures)" in allowed.stderr


def test_ctrl_c_exits_130(tmp_path: Path, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from autorubric_local.runner import EvalRunner

    def interrupted(self: Any) -> Any:
        raise KeyboardInterrupt

    scripted(monkeypatch, fair)
    monkeypatch.setattr(EvalRunner, "run_to_store", interrupted)
    result = grade(*files, "--db", tmp_path / "r.sqlite")
    assert result.exit_code == 130
    assert "interrupted" in result.stderr


def test_help_documents_exit_status_and_allow_failures() -> None:
    result = CliRunner().invoke(main, ["grade", "--help"])
    assert result.exit_code == 0
    for needle in ("--allow-failures", "Exit status:", "3    some items or judgments failed", "130  interrupted"):
        assert needle in result.output


def test_sweep_checks_db_and_name_before_any_judge(
    tmp_path: Path, files: tuple[Path, Path], no_judge: list[Any]
) -> None:
    db = tmp_path / "notes.sqlite"
    db.write_text("not a database", encoding="utf-8")
    result = CliRunner().invoke(main, ["sweep", *map(str, files), "--db", str(db)])
    assert_clean_refusal(result, 2, "not an SQLite database")
    result = CliRunner().invoke(main, ["sweep", *map(str, files), "--name", "x" * 200])
    assert_clean_refusal(result, 2, "too long")
