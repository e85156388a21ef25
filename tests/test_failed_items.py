"""An item whose every judgment failed (issue 52): `grade`'s table and `show` list it with its
errors, and show no verdict, agreement or contribution the judge never gave. Before the mend
the grade table showed `agree 1.00` on each failed criterion, and `show` showed the scoring's
placeholder verdicts (`MET` on the negative criteria, contributing -15 and -10)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_report import policy

from autorubric_local.cli import main
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import criterion_grader

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def outage(request: ScoreRequest) -> list[float] | LabelScores:
    if "BROKEN" in request.prefix + request.suffix:
        return LabelScores((), error="infrastructure: scripted outage")
    return policy(request)


def test_a_failed_item_is_listed_with_its_errors_and_no_made_up_verdicts(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "subs.jsonl"
    data.write_text("".join((EXAMPLES / "battery_submissions.jsonl").read_text().splitlines(True)[:2])
                    + '{"id": "broken", "submission": "BROKEN item text"}\n', encoding="utf-8")
    engine = ScriptedEngine(policy=outage)
    monkeypatch.setattr(criterion_grader, "load_engine", lambda config: engine)
    db = tmp_path / "r.sqlite"
    runner = CliRunner()
    graded = runner.invoke(main, ["grade", str(EXAMPLES / "battery_rubric.yaml"), str(data), "--db", str(db),
                                  "--run", "r", "--no-progress", "--allow-failures"])
    assert graded.exit_code == 0, graded.output
    table = graded.stdout.split("broken", 1)[1].split("└", 1)[0]
    rows = [line for line in table.splitlines() if "│" in line]
    assert len(rows) == 8 and all("error: infrastructure: scripted outage" in row for row in rows)
    assert not any("1.00" in row for row in rows)  # no agreement of judgments that did not happen
    shown = runner.invoke(main, ["show", "r", "--db", str(db), "--item", "broken"])
    assert shown.exit_code == 0, shown.output
    assert "item broken: score failed" in shown.stdout
    body = shown.stdout.split("item broken", 1)[1]
    lines = [line for line in body.splitlines() if "scripted outage" in line]
    assert len(lines) == 8
    for line in lines:
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        verdict, contribution = cells[2], cells[5]
        assert (verdict, contribution) == ("", ""), line
