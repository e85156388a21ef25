"""``metrics``, ``calibrate`` and ``indeterminacy`` take the run first and the database with
``--db`` (``show``'s order, issue 55); the old ``COMMAND DB --run RUN`` order still works, with a
note on stderr, for one release.

The commands' loaders are stubbed: each records what it was asked to read and raises an
``InputError``, so these tests check only how the arguments are read (the analyses themselves
are tested in ``test_metrics_cli.py``, ``test_threshold_calibration.py`` and
``test_indeterminacy_runs.py``, and the deprecated form on real databases in
``test_database_faults.py`` and ``test_labels_everywhere.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from autorubric_local.cli import main
from autorubric_local.core.errors import InputError
from autorubric_local.store import open_db

STUB = "stub: nothing analysed"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, object]]:
    """What each command's loader was asked for: ``(database(s), run(s))`` per call."""
    seen: list[tuple[object, object]] = []

    def one_run(path: object, run: object = None, **labels: object) -> object:
        seen.append((str(path), run))
        raise InputError(STUB)

    def many_runs(paths: object, runs: object, settings: object = None, **labels: object) -> object:
        seen.append(([str(p) for p in paths], list(runs)))  # type: ignore[attr-defined]
        raise InputError(STUB)

    monkeypatch.setattr("autorubric_local.analyses.open_run", one_run)  # metrics, calibrate
    monkeypatch.setattr("autorubric_local.indeterminacy.analyse_runs", many_runs)
    return seen


def database(path: Path) -> Path:
    open_db(path).close()
    return path


def deprecation(command: str) -> str:
    return f"note: '{command} DB --run RUN' is deprecated; use '{command} RUN --db DB'"


ONE_RUN = ["metrics", "calibrate"]


@pytest.mark.parametrize("command", ONE_RUN)
def test_the_run_comes_first_and_the_database_with_db(command: str, tmp_path: Path, calls: list) -> None:
    db = database(tmp_path / "a.sqlite")
    done = invoke(command, "r1", "--db", db)
    assert done.exit_code == 1 and STUB in done.stderr, done.output
    assert "deprecated" not in done.stderr
    latest = invoke(command, "--db", db)  # no RUN: the latest run, as the old --run default
    assert latest.exit_code == 1 and "deprecated" not in latest.stderr, latest.output
    assert calls == [(str(db), "r1"), (str(db), None)]


@pytest.mark.parametrize("command", ONE_RUN)
def test_the_database_defaults_to_results_sqlite(command: str, tmp_path: Path, calls: list,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    missing = invoke(command, "r1")
    assert missing.exit_code == 1 and calls == []
    assert "results.sqlite: no such results database" in missing.stderr, missing.output
    database(tmp_path / "results.sqlite")
    assert invoke(command, "r1").exit_code == 1
    assert calls == [("results.sqlite", "r1")]


@pytest.mark.parametrize("command", ONE_RUN)
def test_the_old_order_still_works_and_says_it_is_deprecated(command: str, tmp_path: Path, calls: list) -> None:
    db = database(tmp_path / "a.sqlite")
    done = invoke(command, db, "--run", "r1")
    assert done.exit_code == 1 and STUB in done.stderr, done.output
    assert done.stderr.splitlines()[0] == deprecation(command)
    assert deprecation(command) not in done.stdout  # stdout stays the command's output (JSON, for --json)
    without_run = invoke(command, db)
    assert deprecation(command) in without_run.stderr
    assert calls == [(str(db), "r1"), (str(db), None)]


@pytest.mark.parametrize("command", ONE_RUN)
def test_with_db_an_existing_file_given_as_run_is_a_run_name(command: str, tmp_path: Path, calls: list) -> None:
    db = database(tmp_path / "a.sqlite")
    other = database(tmp_path / "b.sqlite")
    done = invoke(command, other, "--db", db)
    assert "deprecated" not in done.stderr and calls == [(str(db), str(other))]


@pytest.mark.parametrize("command", ONE_RUN)
def test_a_missing_db_is_an_error_naming_it(command: str, tmp_path: Path, calls: list) -> None:
    missing = tmp_path / "nowhere.sqlite"
    done = invoke(command, "r1", "--db", missing)
    assert done.exit_code == 1 and calls == []
    assert f"{missing}: no such results database" in done.stderr, done.output
    assert "Traceback" not in done.output
    folder = invoke(command, "r1", "--db", tmp_path)
    assert folder.exit_code == 2 and "is a directory" in folder.output and calls == []


@pytest.mark.parametrize("command", ONE_RUN)
def test_run_given_twice_is_a_usage_error_and_run_alone_a_deprecated_alias(command: str, tmp_path: Path,
                                                                           calls: list) -> None:
    db = database(tmp_path / "a.sqlite")
    twice = invoke(command, "r1", "--run", "r2", "--db", db)
    assert twice.exit_code == 2 and "give the run once" in twice.output and calls == []
    alias = invoke(command, "--run", "r2", "--db", db)
    assert f"note: '--run' is deprecated; use '{command} RUN --db DB'" in alias.stderr
    assert calls == [(str(db), "r2")]


def test_indeterminacy_takes_runs_first_from_every_db(tmp_path: Path, calls: list) -> None:
    a, b = database(tmp_path / "a.sqlite"), database(tmp_path / "b.sqlite")
    done = invoke("indeterminacy", "sharp", "flat", "--db", a, "--db", b)
    assert done.exit_code == 1 and STUB in done.stderr and "deprecated" not in done.stderr, done.output
    every = invoke("indeterminacy", "--db", a)  # no RUN: every run
    assert "deprecated" not in every.stderr
    assert calls == [([str(a), str(b)], ["sharp", "flat"]), ([str(a)], [])]


def test_indeterminacy_old_order_still_works(tmp_path: Path, calls: list, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = database(tmp_path / "a.sqlite"), database(tmp_path / "b.sqlite")
    done = invoke("indeterminacy", a, b, "--run", "sharp", "--run", "flat")
    assert done.stderr.splitlines()[0] == deprecation("indeterminacy"), done.output
    assert invoke("indeterminacy", a).stderr.splitlines()[0] == deprecation("indeterminacy")
    monkeypatch.chdir(tmp_path)
    database(tmp_path / "results.sqlite")
    assert "deprecated" not in invoke("indeterminacy", "sharp").stderr
    assert calls == [([str(a), str(b)], ["sharp", "flat"]), ([str(a)], []), (["results.sqlite"], ["sharp"])]


def test_indeterminacy_refuses_files_mixed_with_runs_and_names_a_missing_db(tmp_path: Path, calls: list) -> None:
    a = database(tmp_path / "a.sqlite")
    mixed = invoke("indeterminacy", a, "sharp")
    assert mixed.exit_code == 2 and repr(str(a)) in mixed.output and "--db" in mixed.output
    missing = tmp_path / "b.sqlite"
    done = invoke("indeterminacy", "sharp", "--db", a, "--db", missing)
    assert done.exit_code == 1 and f"{missing}: no such results database" in done.stderr, done.output
    assert calls == []


@pytest.mark.parametrize("command", [*ONE_RUN, "indeterminacy"])
def test_help_says_the_order_and_the_ambiguity_rule(command: str) -> None:
    text = " ".join(invoke(command, "--help").output.split())
    assert "--db" in text and "existing file" in text and "deprecated" in text
    assert f"{command} DB" in text  # the old form it still reads
    assert f"autorubric-local {command} " in text and ".sqlite --run" not in text  # examples in the new order
