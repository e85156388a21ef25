"""The example SQL queries of docs/results.md ("Querying results in SQL") run on a database written by a
real runner run of a two-judge ensemble (ScriptedEngines that disagree on purpose), and give
what the same question answered in Python from the stored rows gives."""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from pathlib import Path

import sqlite_utils

from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import EvalConfig, EvalRunner

sys.path.insert(0, str(Path(__file__).parent))
import crash_worker  # noqa: E402

README = Path(__file__).resolve().parent.parent / "docs" / "results.md"  # moved from the README (issue 31)


def readme_queries() -> list[str]:
    section = README.read_text(encoding="utf-8").split("## Querying results in SQL", 1)[1].split("\n#", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, flags=re.S)


def leaning(p_met: float):
    """A judge that says MET with ``p_met`` (binary) and prefers the first shown option."""

    def policy(request: ScoreRequest) -> list[float]:
        if len(request.labels) == 3:
            return [math.log(p) for p in (p_met, (1 - p_met) * 0.9, (1 - p_met) * 0.1)]
        weights = [3.0] + [1.0] * (len(request.labels) - 1)
        return [math.log(w / sum(weights)) for w in weights]

    return policy


def graded_database(tmp_path: Path) -> Path:
    judges = [JudgeSpec(LLMConfig(model="scripted", engine=ScriptedEngine(model_id=name, policy=leaning(p))), name,
                        weight)
              for name, p, weight in (("yes-judge", 0.8, 2.0), ("no-judge", 0.2, 1.0))]
    grader = CriterionGrader(judges=judges, seed=1)
    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="battery-v1", show_progress=False)
    EvalRunner(crash_worker.build_dataset(4), grader, config).run_sync()
    return tmp_path / "r.sqlite"


def test_the_readme_has_two_queries() -> None:
    assert len(readme_queries()) == 2


def test_failing_criteria_query(tmp_path: Path) -> None:
    db = sqlite_utils.Database(graded_database(tmp_path))
    rows = list(db.query(readme_queries()[0]))
    criteria = list(db["item_criteria"].rows)
    failed = Counter(row["criterion_name"] for row in criteria if row["passed"] == 0)
    assert {row["criterion_name"]: row["failed"] for row in rows} == {
        name: failed.get(name, 0) for name in {row["criterion_name"] for row in criteria}}
    assert all(row["items"] == 4 for row in rows)
    assert [row["failed"] for row in rows] == sorted((row["failed"] for row in rows), reverse=True)
    by_name = {row["criterion_name"]: row["mean_contribution"] for row in rows}
    for name, value in by_name.items():
        contributions = [row["contribution"] for row in criteria if row["criterion_name"] == name]
        assert value == round(sum(contributions) / len(contributions), 3)


def test_disagreement_query(tmp_path: Path) -> None:
    db = sqlite_utils.Database(graded_database(tmp_path))
    rows = list(db.query(readme_queries()[1]))
    final = {(r["item_id"], r["criterion_index"]): r["verdict"] or r["selected_label"] for r in db["item_criteria"].rows}
    expected = [
        (j["item_id"], j["criterion_name"], j["judge_id"], j["verdict"] or j["selected_label"])
        for j in db["judgments"].rows
        if (j["verdict"] or j["selected_label"]) != final[(j["item_id"], j["criterion_index"])]
    ]
    assert expected  # the two judges disagree on binary criteria: the weighted vote sides with one
    assert sorted((r["item_id"], r["criterion_name"], r["judge_id"], r["vote"]) for r in rows) == sorted(expected)
    assert all(r["prompt"] and "<submission>" in r["prompt"] for r in rows)
