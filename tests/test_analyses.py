"""``autorubric_local.analyses``: every analysis of a stored run called one way (issue 55).

Each method of :class:`RunAnalyses` must give what the library call it stands for gives on the
same run (the in-memory form on the loaded run, or the path-and-name form), store what the
command stores, and use the labels the handle was opened with."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import pytest
from test_threshold_calibration import graded_run

from autorubric_local.analyses import open_run
from autorubric_local.calibration import calibrate_run
from autorubric_local.core.errors import InputError
from autorubric_local.estimates.api import estimate_run
from autorubric_local.estimates.labels import PartlyLabelledWarning
from autorubric_local.indeterminacy import analyse_runs
from autorubric_local.metrics import compute_metrics


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("analyses") / "r.sqlite"
    graded_run(path)  # 20 items with ground truth, run "run"
    return path


def _rows(db: Path, table: str) -> int:
    with sqlite3.connect(db) as connection:
        return connection.execute(f"select count(*) from {table}").fetchone()[0]


def test_each_analysis_is_its_library_call_on_the_same_run(db: Path, tmp_path: Path) -> None:
    from autorubric_local.runner import load_result

    run = open_run(db, "run")
    assert (run.name, run.run_id.startswith("run-")) == ("run", True)
    result, dataset = load_result(db, "run")
    before = _rows(db, "metrics")
    assert run.metrics(per_judge=True).model_dump() == compute_metrics(result, dataset, per_judge=True).model_dump()
    assert _rows(db, "metrics") == before + 1  # stored, as the command stores it
    run.metrics(save=False)
    assert _rows(db, "metrics") == before + 1
    fitted, stored = run.calibrate("platt", test_size=0.3, seed=1, n_folds=3)
    expected = calibrate_run(result, dataset, "platt", test_size=0.3, seed=1, n_folds=3)
    assert fitted.calibration == expected.calibration and fitted.test_ids == expected.test_ids
    assert isinstance(stored, int)
    assert repr(run.estimates(confidence=0.8)) == repr(estimate_run(db, "run", confidence=0.8))  # nan != nan
    report, analysis = run.indeterminacy(save=False)
    assert analysis is None
    assert report.model_dump() == analyse_runs([db], ["run"])[0].model_dump()
    page = run.report(tmp_path / "report")
    assert page == tmp_path / "report" / "index.html" and "run" in page.read_text(encoding="utf-8")


def test_a_labels_file_is_chosen_once_for_every_analysis(db: Path, tmp_path: Path) -> None:
    """Labels from a file replace the ground truth in metrics and calibration alike; a partly
    labelled item is left out with a warning that says so."""
    labels = tmp_path / "labels.jsonl"
    # every item labelled the other way round on the first criterion, item i00 only partly
    lines = [{"id": f"i{i:02d}", "ground_truth": ["UNMET" if i % 2 else "MET", "MET", "Vague"]} for i in range(1, 20)]
    lines.append({"id": "i00", "ground_truth": ["MET", None, None]})
    labels.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    run = open_run(db, "run", labels_file=labels)
    with pytest.warns(PartlyLabelledWarning, match="1 partly labelled item"):
        flipped = run.metrics(save=False)
    plain = open_run(db, "run").metrics(save=False)
    density = {c.name: c for c in flipped.per_criterion}["density"]
    assert density.support == 19 and density.accuracy < plain.per_criterion[0].accuracy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartlyLabelledWarning)
        stored = open_run(db, "run", label_source=str(labels.resolve())).metrics(save=False)
    assert stored.model_dump() == flipped.model_dump()  # the file's labels were stored under its path
    other = tmp_path / "other.jsonl"  # a file no analysis has read: report() stores it, then shows it
    other.write_text(labels.read_text(encoding="utf-8"), encoding="utf-8")
    page = open_run(db, "run", labels_file=other).report(tmp_path / "report")
    with sqlite3.connect(db) as connection:
        (stored_rows,), = connection.execute("select count(*) from labels where source = ?", (str(other.resolve()),))
    assert stored_rows > 0 and str(other.resolve()) in page.read_text(encoding="utf-8")


def test_bad_opens_are_refused_naming_what_is_missing(db: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no run named 'nope' \(runs: 'run'\)"):
        open_run(db, "nope")
    with pytest.raises(InputError, match="not both"):
        open_run(db, "run", labels_file=tmp_path / "a.jsonl", label_source="x")
    with pytest.raises(InputError):
        open_run(tmp_path / "missing.sqlite")
