"""`estimate` and `label select/power` on runs graded by `grade` with the tiny random judge.

The figures are checked against independent paths: the labels' own mean, the judge's
probabilities as stored in SQL (``item_criteria``), and ``ppi_py`` (the PPI authors' package)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlite_utils
from click.testing import CliRunner, Result
from test_cli import invoke, invoke_grade

RUBRIC = [
    {"name": "cites_source", "weight": 2.0, "requirement": "Cites a \"source\" <by name>"},
    {"name": "rude", "weight": -1.0, "requirement": "Is rude to the reader"},
    {"name": "clarity", "weight": 1.0, "requirement": "How clear is it?", "scale_type": "ordinal",
     "options": [{"label": "clear", "value": 1.0}, {"label": "muddled", "value": 0.5},
                 {"label": "unreadable", "value": 0.0}]},
]
TRUTH: list[list[str] | None] = [
    ["MET", "UNMET", "clear"], ["UNMET", "UNMET", "muddled"], ["MET", "MET", "unreadable"],
    ["CANNOT_ASSESS", "UNMET", "clear"], ["MET", "UNMET", "muddled"], ["UNMET", "MET", "clear"],
    ["MET", "UNMET", "clear"], ["UNMET", "UNMET", "unreadable"], None, None, None, None,
]
N_ITEMS = len(TRUTH)


def write_dataset(path: Path, truth: list[list[str] | None]) -> Path:
    items = [{"id": f"s{i}", "submission": f"Answer {i}: batteries store {i * 7} Wh per kg.",
              "ground_truth": t} for i, t in enumerate(truth)]
    path.write_text(json.dumps({"name": "mini", "prompt": "Explain battery energy density.",
                                "rubric": RUBRIC, "items": items}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    """Runs `mini` (12 items, 8 labelled) and `mini-again` (the same items, the same option
    shuffles: one seed) in one database."""
    folder = tmp_path_factory.mktemp("estimate")
    data = write_dataset(folder / "mini.json", TRUTH)
    db = folder / "results.sqlite"
    for run in ("mini", "mini-again"):
        result = invoke_grade(CliRunner(), data, "--model", tiny_model_dir, "--db", db, "--run", run,
                              "--seed", "5", "--no-progress", "--allow-failures")
        assert result.exit_code == 0, result.output
    return db


def estimate(db: Path, *args: str | Path) -> Result:
    return invoke(CliRunner(), "estimate", *args, "--db", db)


def rows_of(result: Result) -> dict[tuple[str, str], dict[str, Any]]:
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines() if line.strip()]
    return {(r["target"], r["method"]): r for r in rows}


def stored_f(db: Path, run: str, criterion: str) -> np.ndarray:
    """The judge's P(MET | MET or UNMET) per item as stored in SQL, in item order."""
    query = ("select ic.label_probabilities_json from item_criteria ic join runs r on r.id = ic.run_id "
             "where r.name = ? and ic.criterion_name = ? order by cast(substr(ic.item_id, 2) as integer)")
    probs = [json.loads(row["label_probabilities_json"]) for row in sqlite_utils.Database(db).query(query, [run, criterion])]
    return np.array([p["MET"] / (p["MET"] + p["UNMET"]) for p in probs])


def test_estimate_json_has_every_target_and_method_with_the_interface_fields(graded: Path) -> None:
    rows = rows_of(estimate(graded, "mini", "--json"))
    targets = {"cites_source", "rude", "clarity", "clarity=clear", "clarity=muddled", "clarity=unreadable", "score"}
    assert {t for t, _ in rows} == targets
    for method in ("classical", "judge", "ppi", "rogan_gladen"):
        assert ("cites_source", method) in rows
    assert ("clarity", "rogan_gladen") not in rows  # binary criteria only
    for row in rows.values():
        for key in ("target", "method", "estimate", "ci_low", "ci_high", "n_labelled", "n_unlabelled"):
            assert key in row
    assert rows[("cites_source", "judge")]["ci_low"] is None  # the judge alone has no valid interval
    # cites_source: 8 labelled items, one CANNOT_ASSESS excluded -> 7 labels, 4 MET
    assert rows[("cites_source", "classical")]["n_labelled"] == 7
    assert rows[("cites_source", "classical")]["n_unlabelled"] == N_ITEMS - 7
    assert rows[("cites_source", "classical")]["estimate"] == pytest.approx(4 / 7)
    assert rows[("rude", "classical")]["estimate"] == pytest.approx(2 / 8)
    assert rows[("clarity", "classical")]["estimate"] == pytest.approx((1 + 0.5 + 0 + 1 + 0.5 + 1 + 1 + 0) / 8)
    assert rows[("clarity=clear", "classical")]["estimate"] == pytest.approx(4 / 8)


def test_judge_and_ppi_match_sql_and_ppi_py(graded: Path) -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rows = rows_of(estimate(graded, "mini", "--json", "--confidence", "0.8"))
    f = stored_f(graded, "mini", "rude")
    assert rows[("rude", "judge")]["estimate"] == pytest.approx(f.mean(), abs=1e-12)
    y = np.array([0.0 if t[1] == "UNMET" else 1.0 for t in TRUTH if t is not None])
    labelled = np.arange(N_ITEMS) < 8
    low, high = ppi_py.ppi_mean_ci(y, f[labelled], f[~labelled], alpha=0.2)
    point = ppi_py.ppi_mean_pointestimate(y, f[labelled], f[~labelled])
    row = rows[("rude", "ppi")]
    assert row["estimate"] == pytest.approx(float(np.ravel(point)[0]), abs=1e-9)
    assert row["ci_low"] == pytest.approx(max(float(np.ravel(low)[0]), 0.0), abs=1e-9)
    assert row["ci_high"] == pytest.approx(min(float(np.ravel(high)[0]), 1.0), abs=1e-9)


def test_labels_file_replaces_the_dataset_labels_and_is_stored(graded: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    lines = [{"id": f"s{i}", "ground_truth": ["MET", None, "clear"], "note": "ignored"} for i in range(8, 12)]
    labels.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rows = rows_of(estimate(graded, "mini", "--json", "--labels", labels))
    assert rows[("cites_source", "classical")]["estimate"] == 1.0
    assert rows[("cites_source", "classical")]["n_labelled"] == 4
    assert rows[("rude", "classical")]["n_labelled"] == 0 and rows[("rude", "ppi")]["estimate"] is None
    assert "too few labels" in rows[("rude", "ppi")]["note"]
    stored = list(sqlite_utils.Database(graded).query("select source, count(*) as n from labels group by source"))
    assert stored == [{"source": str(labels.resolve()), "n": 8}]
    again = rows_of(estimate(graded, "mini", "--json", "--label-source", str(labels.resolve())))
    assert again[("cites_source", "classical")] == rows[("cites_source", "classical")]


@pytest.mark.parametrize(("line", "message"), [
    # an id not in the run is skipped with a warning (issue 51, test_labels_everywhere.py); one labelled
    # twice, or no item id, still refuses the file
    ({"id": "s0", "ground_truth": ["MET", "MET", "clear"]}, "line 2: item 's0' is labelled twice in the file"),
    ({"id": ["s1"], "ground_truth": ["MET", "MET", "clear"]}, "line 2: field 'id': expected an item id"),
    ({"id": "s1", "ground_truth": ["MET", "MET", "shiny"]}, "line 2: field 'ground_truth'[2]: label 'shiny' not an option"),
    ({"id": "s1", "ground_truth": ["MET", "MET"]}, "line 2: field 'ground_truth': has 2 value(s)"),
    ({"id": "s1", "ground_truth": ["MAYBE", "MET", "clear"]}, "line 2: field 'ground_truth'[0]: verdict 'MAYBE'"),
])
def test_bad_labels_name_file_line_and_field_and_write_nothing(graded: Path, tmp_path: Path,
                                                              line: dict[str, Any], message: str) -> None:
    labels = tmp_path / "bad.jsonl"
    good = {"id": "s0", "ground_truth": ["MET", "MET", "clear"]}
    labels.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    before = sqlite_utils.Database(graded)["labels"].count
    result = estimate(graded, "mini", "--json", "--labels", labels)
    assert result.exit_code == 1
    assert str(labels) in result.output and message in result.output
    assert sqlite_utils.Database(graded)["labels"].count == before


def test_label_studio_exports_read_as_the_jsonl(graded: Path, tmp_path: Path) -> None:
    chosen = {"s8": ["MET", "UNMET", "muddled"], "s9": ["UNMET", "UNMET", "clear"], "s10": ["MET", "MET", "clear"]}
    jsonl = tmp_path / "l.jsonl"
    jsonl.write_text("".join(json.dumps({"id": k, "ground_truth": v}) + "\n" for k, v in chosen.items()))
    full = [{"id": n, "data": {"item_id": k}, "annotations": [
        {"id": 1, "was_cancelled": True, "result": [{"from_name": "c0", "to_name": "submission", "type": "choices",
                                                     "value": {"choices": ["CANNOT_ASSESS"]}}]},
        {"id": 2, "result": [{"from_name": f"c{j}", "to_name": "submission", "type": "choices",
                              "value": {"choices": [label]}} for j, label in enumerate(v)]}]}
        for n, (k, v) in enumerate(chosen.items())]
    minimal = [{"id": n, "item_id": k, **{f"c{j}": label for j, label in enumerate(v)}}
               for n, (k, v) in enumerate(chosen.items())]
    (tmp_path / "full.json").write_text(json.dumps(full))
    (tmp_path / "min.json").write_text(json.dumps(minimal))
    expected = rows_of(estimate(graded, "mini", "--json", "--labels", jsonl))
    for name in ("full.json", "min.json"):
        got = rows_of(estimate(graded, "mini", "--json", "--labels", tmp_path / name))
        assert {k: v["estimate"] for k, v in got.items()} == {k: v["estimate"] for k, v in expected.items()}


def test_a_run_without_labels_is_refused(tmp_path: Path, tiny_model_dir: Path) -> None:
    data = write_dataset(tmp_path / "unlabelled.json", [None] * 3)
    db = tmp_path / "u.sqlite"
    assert invoke_grade(CliRunner(), data, "--model", tiny_model_dir, "--db", db, "--run", "u",
                        "--no-progress").exit_code == 0
    result = estimate(db, "u")
    assert result.exit_code == 1 and "has no labels" in result.output
    assert invoke(CliRunner(), "estimate", "u", "--db", db, "--cannot-assess", "as_category").exit_code == 2


def test_label_select_stores_the_design_and_estimate_weights_by_it(graded: Path, tmp_path: Path) -> None:
    out, tasks = tmp_path / "to_label.jsonl", tmp_path / "tasks.json"
    result = invoke(CliRunner(), "label", "select", "mini", "--db", graded, "--budget", "5", "--seed", "7",
                    "--out", out, "--label-studio", tasks)
    assert result.exit_code == 0, result.output
    db = sqlite_utils.Database(graded)
    selection = list(db.query("select * from label_selections order by id desc limit 1"))[0]
    items = list(db.query("select * from label_selection_items where selection_id = ?", [selection["id"]]))
    assert len(items) == N_ITEMS and sum(r["inclusion_probability"] for r in items) == pytest.approx(5.0)
    drawn = sorted(r["item_id"] for r in items if r["drawn"])
    template = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["id"] for r in template) == drawn
    assert all(r["ground_truth"] == [None, None, None] for r in template)
    assert template[0]["criteria"] == [  # each place of ground_truth named, with what it allows
        {"name": "cites_source", "allowed": ["MET", "UNMET", "CANNOT_ASSESS"]},
        {"name": "rude", "allowed": ["MET", "UNMET", "CANNOT_ASSESS"]},
        {"name": "clarity", "allowed": ["clear", "muddled", "unreadable"]}]
    config = ET.fromstring(tasks.with_suffix(".xml").read_text())  # criterion text with quotes and <> escaped
    assert [c.get("name") for c in config.iter("Choices")] == ["c0", "c1", "c2"]
    assert "predictions" not in json.loads(tasks.read_text())[0]  # labellers are not anchored on the judge
    # the same seed draws the same items
    invoke(CliRunner(), "label", "select", "mini", "--db", graded, "--budget", "5", "--seed", "7", "--out", out)
    assert sorted(r["id"] for r in map(json.loads, out.read_text().splitlines())) == drawn
    # fill the template in; the estimate is weighted by the stored design
    filled = tmp_path / "filled.jsonl"
    filled.write_text("".join(json.dumps({**r, "ground_truth": ["MET", "UNMET", "clear"]}) + "\n" for r in template))
    rows = rows_of(estimate(graded, "mini", "--json", "--labels", filled))
    assert rows[("score", "ppi")]["sampling"].startswith("active (selection")
    assert rows[("score", "ppi")]["n_labelled"] == len(drawn)
    assert rows[("score", "ppi")]["n_unlabelled"] == N_ITEMS - len(drawn)
    # the dataset's own labels were not drawn by the selection: they stay a uniform sample
    assert rows_of(estimate(graded, "mini", "--json"))[("score", "ppi")]["sampling"] == "uniform"
    missing = tmp_path / "missing.jsonl"
    missing.write_text(json.dumps({"id": template[0]["id"], "ground_truth": [None, None, None]}) + "\n")
    if len(template) > 0:
        result = estimate(graded, "mini", "--labels", missing)
        assert result.exit_code == 1 and "drawn by label selection" in result.output


def test_compare_paired_runs_of_one_judge_differ_by_zero(graded: Path) -> None:
    rows = rows_of(estimate(graded, "mini", "--compare", "mini-again", "--json"))
    for method in ("classical", "judge", "ppi"):
        row = rows[("score", method)]
        assert row["sampling"] == "paired"
        assert row["estimate"] == pytest.approx(0.0, abs=1e-12)


def test_label_power_is_never_worse_with_the_judge(graded: Path) -> None:
    result = invoke(CliRunner(), "label", "power", "mini", "--db", graded, "--width", "0.2", "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert {r["target"] for r in rows} >= {"cites_source", "score"}
    for row in rows:
        assert row["basis"] == "pilot" and 2 <= row["ppi"] <= row["classical"]
