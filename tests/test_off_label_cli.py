"""``grade --off-label-threshold``: judgments whose off-label mass exceeds the threshold are
marked in the table and counted in one line; ``--json`` carries each vote's off-label mass and
raw label logprobs. The judge is a ScriptedEngine swapped in for the model loader."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from autorubric_local.cli import main
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import criterion_grader

RUBRIC_YAML = (
    "- name: density\n  weight: 10\n  requirement: States the energy density\n"
    "- name: depth\n  weight: 4\n  requirement: How deep is it?\n  scale_type: ordinal\n"
    "  options:\n    - {label: Vague, value: 0}\n    - {label: Expert, value: 1}\n"
)
DATA_JSONL = '{"id": "a", "submission": "NMC is dense."}\n{"id": "b", "submission": "LFP lasts."}\n'
BINARY_RAW = (math.log(0.1), math.log(0.05), math.log(0.05))  # MET, UNMET, CANNOT_ASSESS: sum 0.2


def policy(request: ScoreRequest) -> LabelScores | list[float]:
    """Item a: binary off-label 0.8, depth 0.3. Item b: binary 0.6, depth not reported."""
    item_a = "NMC is dense." in request.prefix
    if 'MET"' in request.labels:
        return LabelScores(BINARY_RAW, off_label_mass=0.8 if item_a else 0.6)
    logprobs = [math.log(0.6)] + [math.log(0.1)] * (len(request.labels) - 1)  # the first shown option
    return LabelScores(tuple(logprobs), off_label_mass=0.3) if item_a else logprobs


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(RUBRIC_YAML, encoding="utf-8")
    data = tmp_path / "subs.jsonl"
    data.write_text(DATA_JSONL, encoding="utf-8")
    engine = ScriptedEngine(policy=policy)
    monkeypatch.setattr(criterion_grader, "load_engine", lambda config: engine)
    return rubric, data, tmp_path / "r.sqlite"


def grade(*args: str | Path) -> Result:
    return CliRunner(env={"COLUMNS": "240"}).invoke(main, ["grade", *[str(a) for a in args], "--no-progress",
                                                           "--no-shuffle"])


def test_table_marks_judgments_above_the_threshold_and_counts_them(files: tuple[Path, Path, Path]) -> None:
    rubric, data, db = files
    result = grade(rubric, data, "--db", db)
    assert result.exit_code == 0, result.output
    table = result.stdout
    assert "off-label" in table and "! above 50%" in table
    lines = [line for line in table.splitlines() if "density" in line or "depth" in line]
    assert len(lines) == 4  # items a and b, criteria density and depth; last cell: off-label
    a_density, a_depth, b_density, b_depth = (line.split("│")[-2].strip() for line in lines)
    assert (a_density, a_depth, b_density, b_depth) == ("0.80 !", "0.30", "0.60 !", "")
    assert ("2 of 3 judgments put > 50% of the first-step probability outside the allowed labels "
            "(1 more did not report it)") in result.stderr


def test_threshold_option_changes_what_is_flagged(files: tuple[Path, Path, Path]) -> None:
    rubric, data, db = files
    result = grade(rubric, data, "--db", db, "--off-label-threshold", "0.75")
    assert result.exit_code == 0, result.output
    assert "1 of 3 judgments put > 75% of the first-step probability outside the allowed labels" in result.stderr
    assert "0.60 !" not in result.stdout and "0.80 !" in result.stdout
    exact = grade(rubric, data, "--db", db, "--run", "exact", "--off-label-threshold", "0.8")
    assert "0 of 3 judgments put > 80%" in exact.stderr  # above, not at, the threshold


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan-ish"])
def test_threshold_outside_0_1_is_a_usage_error(files: tuple[Path, Path, Path], value: str) -> None:
    rubric, data, db = files
    result = grade(rubric, data, "--db", db, "--off-label-threshold", value)
    assert result.exit_code == 2 and "--off-label-threshold" in result.output
    assert not db.exists()


def test_json_votes_carry_off_label_mass_and_raw_logprobs(files: tuple[Path, Path, Path]) -> None:
    rubric, data, db = files
    result = grade(rubric, data, "--db", db, "--json")
    assert result.exit_code == 0, result.output
    a, b = json.loads(result.stdout)
    (a_vote,) = a["criteria"][0]["votes"]
    assert a_vote["off_label_mass"] == 0.8
    assert a_vote["label_logprobs"] == {"MET": math.log(0.1), "UNMET": math.log(0.05),
                                        "CANNOT_ASSESS": math.log(0.05)}
    assert a_vote["label_probabilities"] == pytest.approx({"MET": 0.5, "UNMET": 0.25, "CANNOT_ASSESS": 0.25})
    (b_depth,) = b["criteria"][1]["votes"]
    assert b_depth["off_label_mass"] is None
    assert list(b_depth["label_logprobs"])[:2] == ["Vague", "Expert"]
    assert b_depth["label_logprobs"]["Vague"] == math.log(0.6)
    assert "2 of 3 judgments put > 50%" in result.stderr


def test_nothing_is_said_when_no_backend_reports_the_mass(files: tuple[Path, Path, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rubric, data, db = files
    engine = ScriptedEngine(policy=lambda r: [math.log(1 / len(r.labels))] * len(r.labels))
    monkeypatch.setattr(criterion_grader, "load_engine", lambda config: engine)
    result = grade(rubric, data, "--db", db)
    assert result.exit_code == 0, result.output
    assert "off-label" not in result.stdout and "outside the allowed labels" not in result.stderr
