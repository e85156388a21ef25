"""The README's estimates walk-through on the bundled example, with the tiny random judge:
grade, `label select`, `estimate --labels examples/battery_labels.jsonl`, `label power`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_cli import DATA_FILE, RUBRIC_FILE, invoke, invoke_grade

from autorubric_local.core.rubric import Rubric

LABELS = RUBRIC_FILE.parent / "battery_labels.jsonl"


def test_the_readme_walk_through_runs(tmp_path: Path, tiny_model_dir: Path) -> None:
    db = tmp_path / "results.sqlite"
    graded = invoke_grade(CliRunner(), RUBRIC_FILE, DATA_FILE, "--model", tiny_model_dir, "--db", db,
                          "--run", "battery-v1", "--no-progress", "--allow-failures")
    assert graded.exit_code == 0, graded.output
    out = tmp_path / "to_label.jsonl"
    selected = invoke(CliRunner(), "label", "select", "battery-v1", "--db", db, "--budget", "4", "--seed", "0",
                      "--out", out, "--label-studio", tmp_path / "tasks.json")
    assert selected.exit_code == 0, selected.output
    drawn = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert drawn and (tmp_path / "tasks.xml").is_file()
    result = invoke(CliRunner(), "estimate", "battery-v1", "--db", db, "--labels", LABELS, "--json",
                    "--target", "score")
    assert result.exit_code == 0, result.output
    rows = {r["method"]: r for r in map(json.loads, result.output.splitlines())}
    assert rows["ppi"]["sampling"].startswith("active (selection")
    assert rows["ppi"]["n_labelled"] == len(drawn)  # only the drawn items' labels count
    # every item of the example is labelled in the shipped file, against every criterion
    labels = [json.loads(line) for line in LABELS.read_text().splitlines()]
    assert sorted(x["id"] for x in labels) == sorted(json.loads(line)["id"] for line in DATA_FILE.read_text().splitlines())
    plain = invoke(CliRunner(), "estimate", "battery-v1", "--db", db, "--labels", LABELS, "--selection", "none",
                   "--json")
    assert plain.exit_code == 0, plain.output
    uniform = {(r["target"], r["method"]): r for r in map(json.loads, plain.output.splitlines())}
    # the labels' own scores by the rubric's formula: the classical estimate of the score
    rubric = Rubric.from_file(str(RUBRIC_FILE))
    scores = [rubric.compute_score(x["ground_truth"]) for x in labels]
    assert uniform[("score", "classical")]["estimate"] == pytest.approx(sum(scores) / len(scores))
    assert uniform[("score", "classical")]["n_labelled"] == 8 and uniform[("score", "classical")]["n_unlabelled"] == 0
    # 2 of the 8 answers meet nmc_energy_density in the shipped labels (excellent, good-incomplete)
    assert uniform[("nmc_energy_density", "classical")]["estimate"] == pytest.approx(2 / 8)
    power = invoke(CliRunner(), "label", "power", "battery-v1", "--db", db, "--width", "0.1", "--target", "score",
                   "--labels", LABELS)
    assert power.exit_code == 0 and power.output.startswith("score: classical"), power.output
