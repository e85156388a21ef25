"""``autorubric-local metrics`` with a stubbed stored run (the command is a thin wrapper over
``autorubric_local.analyses``; the streamed reading of a real stored run is tested in
``test_metrics_stream.py``, the handle in ``test_analyses.py``)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from test_metrics_support import BIN, ORD, make_run, stub_stored_run

from autorubric_local.cli import main
from autorubric_local.metrics import load_metrics
from autorubric_local.store import open_db


@pytest.fixture
def stored_run(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    db_path = tmp_path / "results.sqlite"
    open_db(db_path).close()
    res, ds = make_run([BIN, ORD], [["MET", "L1"], ["UNMET", "L2"], ["MET", "L3"], ["UNMET", "L0"]],
                       [["MET", "L1"], ["MET", "L2"], ["MET", "L2"], ["UNMET", "L1"]],
                       p_met=[[0.8, None], [0.6, None], [0.9, None], [0.1, None]])
    res.run_id, res.db_path = "run-x", str(db_path)
    calls: list = []
    stub_stored_run(monkeypatch, res, ds, calls)
    return db_path, calls


def test_help_has_example() -> None:
    out = CliRunner().invoke(main, ["metrics", "--help"])
    assert out.exit_code == 0 and "Example:" in out.output


def test_prints_summary_saves_and_plots(stored_run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db_path, calls = stored_run
    out = CliRunner().invoke(main, ["metrics", "r1", "--db", str(db_path), "--bootstrap",
                                    "--n-bootstrap", "30", "--seed", "1",
                                    "--plot", str(tmp_path / "plots")])
    assert out.exit_code == 0, out.output
    assert "Accuracy:" in out.output and "Bootstrap CIs" in out.output
    assert calls == [(str(db_path), "r1")]
    assert load_metrics(open_db(db_path), "run-x") is not None
    assert (tmp_path / "plots" / "reliability.png").exists()


def test_json_and_no_save(stored_run) -> None:  # type: ignore[no-untyped-def]
    db_path, _ = stored_run
    out = CliRunner().invoke(main, ["metrics", "--db", str(db_path), "--json", "--no-save"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["n_items"] == 4
    assert load_metrics(open_db(db_path), "run-x") is None


def test_library_error_is_clean(stored_run) -> None:  # type: ignore[no-untyped-def]
    db_path, _ = stored_run
    out = CliRunner().invoke(main, ["metrics", "missing", "--db", str(db_path)])
    assert out.exit_code == 1
    assert "no run named 'missing'" in out.output and "Traceback" not in out.output


def test_the_deprecated_order_prints_the_same_json_with_a_note(stored_run) -> None:  # type: ignore[no-untyped-def]
    db_path, calls = stored_run
    new = CliRunner().invoke(main, ["metrics", "r1", "--db", str(db_path), "--json", "--no-save"])
    old = CliRunner().invoke(main, ["metrics", str(db_path), "--run", "r1", "--json", "--no-save"])
    assert new.exit_code == old.exit_code == 0, old.output
    assert json.loads(old.stdout) == json.loads(new.stdout) and json.loads(new.stdout)["n_items"] == 4
    assert old.stderr == "note: 'metrics DB --run RUN' is deprecated; use 'metrics RUN --db DB'\n"
    assert new.stderr == ""
    assert calls == [(str(db_path), "r1")] * 2
