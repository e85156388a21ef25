"""``grade --contextual-calibration``: verdicts read from the corrected distribution, the judges'
own distributions in ``--json`` and in the database, priors stored. The judge is a
ScriptedEngine swapped in for the model loader; it answers by submission text."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from autorubric_local.cli import main
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import criterion_grader
from autorubric_local.store import Store

RUBRIC_YAML = "- name: density\n  weight: 10\n  requirement: States the energy density\n"
DATA_JSONL = '{"id": "a", "submission": "NMC is dense."}\n{"id": "b", "submission": "LFP is denser."}\n'
# Raw (MET, UNMET, CANNOT_ASSESS): content-free prior (0.8, 0.14, 0.06); item a stays MET after
# the correction, item b (0.7, 0.28, 0.02) becomes UNMET: q = (21, 48, 8) / 77.
ANSWERS = {"": (0.8, 0.15, 0.05), "N/A": (0.35, 0.1, 0.05), "[SUBMISSION]": (0.9, 0.07, 0.03),
           "NMC is dense.": (0.95, 0.04, 0.01), "LFP is denser.": (0.7, 0.28, 0.02)}


def policy(request: ScoreRequest) -> LabelScores:
    found = re.search(r"<submission>\n(.*?)\n</submission>", request.prefix, flags=re.DOTALL)
    assert found is not None
    return LabelScores(tuple(math.log(p) for p in ANSWERS[found.group(1)]))


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
    return CliRunner(env={"COLUMNS": "240"}).invoke(main, ["grade", *[str(a) for a in args], "--no-progress"])


def test_grade_reads_verdicts_from_the_corrected_distribution(files: tuple[Path, Path, Path]) -> None:
    rubric, data, db = files
    result = grade(rubric, data, "--db", db, "--json", "--contextual-calibration")
    assert result.exit_code == 0, result.output
    a, b = json.loads(result.stdout)
    assert a["criteria"][0]["verdict"] == "MET" and a["score"] == 1.0
    assert b["criteria"][0]["verdict"] == "UNMET" and b["score"] == 0.0
    (vote,) = b["criteria"][0]["votes"]
    assert vote["label_probabilities"] == pytest.approx({"MET": 21 / 77, "UNMET": 48 / 77, "CANNOT_ASSESS": 8 / 77})
    assert vote["uncalibrated_label_probabilities"] == pytest.approx({"MET": 0.7, "UNMET": 0.28, "CANNOT_ASSESS": 0.02})
    assert "contextual calibration: verdicts read from each judge's distribution divided by its label prior" in (
        result.stderr)
    assert "'', 'N/A', '[SUBMISSION]'" in result.stderr
    store = Store.open(db)
    run_id = store.find_run()["id"]  # type: ignore[index]
    (prior,) = store.contextual_priors(run_id)
    assert json.loads(prior["prior_json"]) == pytest.approx({"MET": 0.8, "UNMET": 0.14, "CANNOT_ASSESS": 0.06})
    assert json.loads(store.find_run()["grader_json"])["contextual_calibration"]["method"] == "zhao2021-diagonal"  # type: ignore[index]


def test_without_the_flag_the_judges_own_verdicts_stand(files: tuple[Path, Path, Path]) -> None:
    rubric, data, db = files
    result = grade(rubric, data, "--db", db, "--json")
    assert result.exit_code == 0, result.output
    a, b = json.loads(result.stdout)
    assert (a["criteria"][0]["verdict"], b["criteria"][0]["verdict"]) == ("MET", "MET")
    assert b["criteria"][0]["votes"][0]["uncalibrated_label_probabilities"] is None
    assert "contextual calibration" not in result.stderr


def test_explain_mode_verdict_first_is_refused_before_grading(files: tuple[Path, Path, Path]) -> None:
    rubric, data, db = files
    result = grade(rubric, data, "--db", db, "--contextual-calibration", "--mode", "explain", "--verdict-first")
    assert result.exit_code == 1
    assert "contextual_calibration does not work with mode='explain' and the verdict first" in result.output
    assert not db.exists()
