"""Labels for everything (issue 51): one way to give human labels, read by every analysis.

``ground_truth`` in the submissions JSONL `grade` reads (before: "unknown field
'ground_truth'"), stored with the run so `metrics` reads it without --labels; `calibrate` and
`indeterminacy` take --labels FILE / --label-source SRC as `metrics` does (before: no such
option); a full labels file serves a `grade --limit` run, its other items skipped with one
warning (before: refused whole, "unknown item"), and a file of another run's items is refused;
`metrics` gives 90% intervals by default, as `estimate` does (before: 95%, no --confidence).

Runs are graded by a scripted judge (no model is loaded).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from click.testing import CliRunner, Result

from autorubric_local.cli import main
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders import criterion_grader

RUBRIC = [
    {"name": "cites", "weight": 2.0, "requirement": "Cites a source by name"},
    {"name": "wrong", "weight": -1.0, "requirement": "States a wrong figure"},
    {"name": "clarity", "weight": 1.0, "requirement": "How clear is it?", "scale_type": "ordinal",
     "options": [{"label": "Clear", "value": 1.0}, {"label": "Muddled", "value": 0.5},
                 {"label": "Unreadable", "value": 0.0}]},
]
N_ITEMS = 12
TRUTH = [["MET" if i % 2 else "UNMET", "MET" if i % 3 == 0 else "UNMET", ("Clear", "Muddled", "Unreadable")[i % 3]]
         for i in range(N_ITEMS)]
LIMIT = 6


def policy(request: ScoreRequest) -> list[float]:
    """Label log-probabilities from a hash of the prompt (the same item, the same answer)."""
    digest = hashlib.sha256((request.prefix + request.suffix).encode()).digest()
    weights = [1.0 + digest[k] % 7 for k in range(len(request.labels))]
    return [math.log(w / sum(weights)) for w in weights]


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def write_subs(path: Path, truth: list[list[str] | None] | None) -> Path:
    rows = []
    for i in range(N_ITEMS):
        row: dict[str, Any] = {"id": f"q{i}", "submission": f"Answer {i}: batteries store {i * 7} Wh per kg."}
        if truth is not None:
            row["ground_truth"] = truth[i]
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_labels(path: Path, ids: range | list[str], truth: list[list[str | None]] | None = None) -> Path:
    path.write_text("".join(json.dumps({"id": i if isinstance(i, str) else f"q{i}",
                                        "ground_truth": (truth or TRUTH)[k]}) + "\n" for k, i in enumerate(ids)),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One database: run ``labelled`` (the submissions carry ground truth), run ``plain`` (the
    same submissions without it; the scripted judge answers alike) and run ``short`` (``plain``'s
    first 6 items, ``--limit``)."""
    folder = tmp_path_factory.mktemp("labels")
    rubric = folder / "rubric.json"
    rubric.write_text(json.dumps(RUBRIC), encoding="utf-8")
    db = folder / "results.sqlite"
    labelled = write_subs(folder / "labelled.jsonl", TRUTH)  # type: ignore[arg-type]
    plain = write_subs(folder / "plain.jsonl", None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(criterion_grader, "load_engine", lambda config: ScriptedEngine(policy=policy))
        runs = (("labelled", labelled, ()), ("plain", plain, ()), ("short", plain, ("--limit", LIMIT)))
        for run, data, extra in runs:
            result = invoke("grade", rubric, data, "--db", db, "--run", run, "--seed", "3", "--no-progress", *extra)
            assert result.exit_code == 0, result.output
    return {"db": db, "folder": folder, "rubric": rubric}


def stderr_lines(result: Result, start: str) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith(start)]


# ---------------------------------------------------------------------- ground_truth in submissions


def test_ground_truth_in_submissions_is_stored_and_metrics_reads_it(graded: dict[str, Path]) -> None:
    db = graded["db"]
    stored = list(sqlite_utils.Database(db).query(
        "select i.item_id, i.ground_truth_json from items i join runs r on r.id = i.run_id where r.name = 'labelled' "
        "order by i.item_index"))
    assert [json.loads(row["ground_truth_json"]) for row in stored] == TRUTH
    result = invoke("metrics", db, "--run", "labelled", "--json", "--no-save")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["n_items"] == N_ITEMS
    support = {c["name"]: c["support"] for c in data["per_criterion"]}
    assert support["clarity"] == N_ITEMS and 0 < support["cites"] <= N_ITEMS  # the judge's CANNOT_ASSESS left out
    # the run without them has nothing to compare with, as before
    assert invoke("metrics", db, "--run", "plain", "--no-save").exit_code == 1


def test_a_wrong_ground_truth_in_submissions_names_file_line_and_field(graded: dict[str, Path],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(criterion_grader, "load_engine", lambda config: pytest.fail("no judge should load"))
    truth: list[list[str] | None] = [list(t) for t in TRUTH]
    truth[1] = ["MET", "UNMET", "Shiny"]
    truth[2] = ["MET", "MAYBE", "Clear"]
    data = write_subs(graded["folder"] / "wrong.jsonl", truth)
    result = invoke("grade", graded["rubric"], data, "--db", graded["folder"] / "wrong.sqlite", "--run", "w",
                    "--no-progress")
    assert result.exit_code != 0
    assert (f"{data}: line 2: field 'ground_truth'[2]: label 'Shiny' not an option of criterion 'clarity'"
            in result.output), result.output
    assert f"{data}: line 3: field 'ground_truth'[1]: verdict 'MAYBE' not valid for binary criterion 'wrong'" \
        in result.output


# ---------------------------------------------------------------------- a full labels file on a --limit run


@pytest.mark.parametrize("command", [
    ("metrics", "{db}", "--run", "short", "--json", "--no-save"),
    ("estimate", "short", "--db", "{db}", "--json", "--selection", "none"),
    ("calibrate", "{db}", "--run", "short", "--json", "--no-save", "--test-size", "0.5"),
    ("indeterminacy", "{db}", "--run", "short", "--json", "--no-save"),
])
def test_a_full_labels_file_serves_a_limit_run_with_one_warning(graded: dict[str, Path], tmp_path: Path,
                                                                 command: tuple[str, ...]) -> None:
    labels = write_labels(tmp_path / "all.jsonl", range(N_ITEMS))
    args = [a.format(db=graded["db"]) for a in command]
    result = invoke(*args, "--labels", labels)
    assert result.exit_code == 0, result.output  # before: "line 7: field 'id': unknown item 'q6'"
    warnings = stderr_lines(result, "warning:")
    assert warnings == [f"warning: {labels}: {N_ITEMS - LIMIT} labelled item(s) not in run 'short' skipped "
                        "(e.g. 'q6', 'q7', 'q8', ...)"], result.stderr
    if command[0] == "metrics":
        assert json.loads(result.stdout)["n_items"] == LIMIT


def test_a_label_studio_export_of_every_item_serves_a_limit_run_too(graded: dict[str, Path], tmp_path: Path) -> None:
    export = tmp_path / "export.json"
    export.write_text(json.dumps([{"id": k, "item_id": f"q{k}", **{f"c{j}": v for j, v in enumerate(TRUTH[k])}}
                                  for k in range(N_ITEMS)]), encoding="utf-8")
    result = invoke("metrics", graded["db"], "--run", "short", "--json", "--no-save", "--labels", export)
    assert result.exit_code == 0, result.output
    assert stderr_lines(result, "warning:") == [f"warning: {export}: {N_ITEMS - LIMIT} labelled item(s) not in run "
                                                "'short' skipped (e.g. 'q6', 'q7', 'q8', ...)"]
    assert json.loads(result.stdout)["n_items"] == LIMIT


@pytest.mark.parametrize("command", ["metrics", "estimate", "calibrate", "indeterminacy"])
def test_a_labels_file_of_none_of_the_runs_items_is_refused(graded: dict[str, Path], tmp_path: Path,
                                                            command: str) -> None:
    labels = write_labels(tmp_path / "other.jsonl", [f"z{i}" for i in range(4)])
    db = graded["db"]
    before = sqlite_utils.Database(db)["labels"].count
    args = ("estimate", "short", "--db", db) if command == "estimate" else (command, db, "--run", "short")
    result = invoke(*args, "--labels", labels)
    assert result.exit_code == 1, result.output
    assert (f"{labels}: none of its 4 labelled item(s) is an item of the run (file: 'z0', 'z1', 'z2', ...; "
            "run: 'q0', 'q1', 'q2', ...)") in result.output
    assert sqlite_utils.Database(db)["labels"].count == before


def test_a_bad_label_of_an_item_of_the_run_is_still_refused(graded: dict[str, Path], tmp_path: Path) -> None:
    labels = write_labels(tmp_path / "bad.jsonl", [f"q{i}" for i in range(N_ITEMS)],
                          [*TRUTH[:3], ["MET", "MET", "Shiny"], *TRUTH[4:]])  # type: ignore[list-item]
    result = invoke("calibrate", graded["db"], "--run", "short", "--labels", labels, "--no-save")
    assert result.exit_code == 1
    assert f"{labels}: line 4: field 'ground_truth'[2]: label 'Shiny' not an option" in result.output


# ---------------------------------------------------------------------- calibrate and indeterminacy take labels


def _without(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys}


def test_calibrate_with_a_labels_file_fits_as_on_the_datasets_ground_truth(graded: dict[str, Path],
                                                                           tmp_path: Path) -> None:
    db = graded["db"]
    expected = invoke("calibrate", db, "--run", "labelled", "--json", "--no-save")
    assert expected.exit_code == 0, expected.output
    labels = write_labels(tmp_path / "labels.jsonl", range(N_ITEMS))
    got = invoke("calibrate", db, "--run", "plain", "--json", "--no-save", "--labels", labels)
    assert got.exit_code == 0, got.output  # before: "No such option: --labels"
    assert _without(json.loads(got.stdout), "run_id") == _without(json.loads(expected.stdout), "run_id")
    # stored under the file's path: --label-source reads them back
    again = invoke("calibrate", db, "--run", "plain", "--json", "--no-save", "--label-source", labels.resolve())
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == json.loads(got.stdout)
    assert invoke("calibrate", db, "--run", "plain", "--no-save").exit_code == 1  # no ground truth of its own


def test_calibrate_leaves_out_partly_labelled_items_and_says_so(graded: dict[str, Path], tmp_path: Path) -> None:
    truth: list[list[str | None]] = [list(t) for t in TRUTH]
    truth[0] = [truth[0][0], None, truth[0][2]]
    labels = write_labels(tmp_path / "partial.jsonl", range(N_ITEMS), truth)
    got = invoke("calibrate", "plain", "--db", graded["db"], "--json", "--no-save", "--labels", labels)
    assert got.exit_code == 0, got.output
    assert stderr_lines(got, "note:") == ["note: 1 partly labelled item(s) left out (an item counts when every "
                                          "criterion of it is labelled)"]
    split = json.loads(got.stdout)
    assert "q0" not in split["test_item_ids"]
    assert sum(r["n_train"] for r in split["calibration"]["rules"].values()) > 0


def test_indeterminacy_with_a_labels_file_equals_the_datasets_ground_truth(graded: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    db = graded["db"]
    expected = invoke("indeterminacy", db, "--run", "labelled", "--json", "--no-save")
    assert expected.exit_code == 0, expected.output
    labels = write_labels(tmp_path / "labels.jsonl", range(N_ITEMS))
    got = invoke("indeterminacy", db, "--run", "plain", "--json", "--no-save", "--labels", labels)
    assert got.exit_code == 0, got.output  # before: "No such option: --labels"
    report, wanted = json.loads(got.stdout), json.loads(expected.stdout)
    assert report["criteria"] and _judges_renamed(report, wanted)
    assert report["warnings"] == wanted["warnings"]
    stored = invoke("indeterminacy", db, "--run", "plain", "--json", "--no-save", "--label-source", labels.resolve())
    assert stored.exit_code == 0, stored.output
    assert json.loads(stored.stdout) == report
    missing = invoke("indeterminacy", db, "--run", "plain", "--no-save", "--label-source", "nowhere.jsonl")
    assert missing.exit_code == 1 and "has no labels from 'nowhere.jsonl'" in missing.output


def _judges_renamed(report: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """The reports are equal once each judge's name (its run's name) is the same."""
    text = json.dumps(report["criteria"], sort_keys=True).replace('"plain', '"labelled')
    return text == json.dumps(wanted["criteria"], sort_keys=True)


# ---------------------------------------------------------------------- metrics' confidence


def test_metrics_intervals_are_90_percent_as_estimates_and_confidence_changes_them(graded: dict[str, Path]) -> None:
    db = graded["db"]
    common = ("metrics", db, "--run", "labelled", "--json", "--no-save", "--bootstrap", "--n-bootstrap", "50",
              "--seed", "0")
    default = invoke(*common)
    assert default.exit_code == 0, default.output
    data = json.loads(default.stdout)
    assert data["bootstrap"]["confidence_level"] == 0.9  # before: 0.95
    assert data["bias"]["ci"]["confidence_level"] == 0.9
    wide = invoke(*common, "--confidence", "0.99")
    assert wide.exit_code == 0, wide.output
    wider = json.loads(wide.stdout)
    assert wider["bootstrap"]["confidence_level"] == 0.99
    assert wider["bias"]["ci"]["upper"] - wider["bias"]["ci"]["lower"] > \
        data["bias"]["ci"]["upper"] - data["bias"]["ci"]["lower"]
    help_text = " ".join(invoke("metrics", "--help").output.split())
    assert "--confidence FLOAT RANGE" in help_text and "[default: 0.9; 0<x<1]" in help_text
