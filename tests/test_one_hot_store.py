"""One-hot label probabilities (``LabelScores.one_hot``: the backend returned no log-probabilities)
carried to votes, ``judgments.one_hot`` (migration 13), the ``judge_votes`` view, ``show --votes``
and ``export``; runs stored before migration 13 read as not one-hot. Scripted engines only."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from test_audit_tables import DEPTH, POSITIVE, dataset
from test_cli import invoke

import autorubric_local.store.schema as schema_module
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.engine.hosted.labels import one_hot
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import EvalConfig, EvalRunner, load_result
from autorubric_local.store import MIGRATIONS, Store, open_db


def answered_only(request: ScoreRequest) -> LabelScores:
    """A judge that names its answer (the second label) without probabilities, as a hosted model
    without ``top_logprobs`` does."""
    return LabelScores(one_hot(len(request.labels), 1), one_hot=True)


def with_logprobs(request: ScoreRequest) -> LabelScores:
    return LabelScores(tuple(math.log(1.0 / len(request.labels)) for _ in request.labels))


def grade_run(db_path: Path, policy: object, name: str = "onehot", **grader_kwargs: object) -> str:
    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine(policy=policy)), **grader_kwargs)
    config = EvalConfig(db_path=db_path, experiment_name=name, show_progress=False)
    return EvalRunner(dataset(2), grader, config).run_sync().run_id


def graded_report(policy: object, **grader_kwargs: object) -> object:
    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine(policy=policy)), **grader_kwargs)
    (graded,) = grader.grade_batch([GradeItem(submission="x", rubric=(POSITIVE, DEPTH), item_id="a")])
    return graded.report


@pytest.mark.parametrize("permutations", ["single", "cyclic"])
def test_votes_carry_the_flag_binary_and_multi_choice(permutations: str) -> None:
    binary, choice = graded_report(answered_only, permutations=permutations).report  # type: ignore[attr-defined]
    assert binary.votes[0].one_hot and binary.votes[0].label_probabilities["UNMET"] == 1.0
    assert choice.multi_choice_votes[0].one_hot  # cyclic: every averaged order was one-hot
    plain = graded_report(with_logprobs, permutations=permutations).report  # type: ignore[attr-defined]
    assert not any(v.one_hot for c in plain for v in [*c.votes, *c.multi_choice_votes])


def test_rows_view_show_and_export_carry_it(tmp_path: Path) -> None:
    db_path = tmp_path / "r.sqlite"
    run_id = grade_run(db_path, answered_only)
    store = Store.open(db_path)
    rows = store.judgments(run_id)
    assert len(rows) == 6 and {row["one_hot"] for row in rows} == {1}
    votes = list(store.db.query("select one_hot from judge_votes where run_id = ?", [run_id]))
    assert [v["one_hot"] for v in votes] == [1] * 6
    store.close()
    loaded, _ = load_result(db_path, "onehot")
    assert all(v.one_hot for item in loaded.item_results for c in item.report.report
               for v in [*c.votes, *c.multi_choice_votes])

    runner = CliRunner(env={"COLUMNS": "200"})
    table = invoke(runner, "show", "onehot", "--db", db_path, "--votes")
    assert table.exit_code == 0, table.output
    assert table.stdout.count("one-hot: no logprobs") == 6
    lines = [json.loads(line) for line in invoke(runner, "show", "onehot", "--db", db_path, "--votes",
                                                 "--json").stdout.splitlines()]
    assert [line["one_hot"] for line in lines] == [1] * 6
    frame = pd.read_csv(io.StringIO(invoke(runner, "export", "onehot", "--db", db_path).stdout))
    assert list(frame["one_hot"]) == [1] * 6


def test_a_failed_judgment_row_has_no_flag_and_a_read_one_has_zero(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=with_logprobs)
    engine.enqueue_scores("infrastructure: out of memory")
    grader = CriterionGrader(LLMConfig(model="scripted", engine=engine), shuffle_options=False)
    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="mixed", show_progress=False)
    run_id = EvalRunner(dataset(1), grader, config).run_sync().run_id
    rows = Store.open(tmp_path / "r.sqlite").judgments(run_id)
    assert sorted((row["error"] is None, row["one_hot"]) for row in rows) == [(False, None), (True, 0), (True, 0)]


def as_before_migration_13(path: Path) -> None:
    """Turn a file into what the code of migration 12 wrote: no ``judgments.one_hot``, the
    ``judge_votes`` view of migration 11, reports without the votes' ``one_hot`` key."""
    db = open_db(path)
    db.execute("drop view judge_votes")
    db.execute("alter table judgments drop column one_hot")
    db.create_view("judge_votes", schema_module._JUDGE_VOTES_11)
    db.execute("delete from _migrations where number = 13")
    for row in list(db.query("select run_id, item_id, report_json from items")):
        report = json.loads(row["report_json"])
        for criterion in report["report"]:
            for vote in [*criterion["votes"], *criterion["multi_choice_votes"]]:
                del vote["one_hot"]
        db.execute("update items set report_json = ? where run_id = ? and item_id = ?",
                   [json.dumps(report), row["run_id"], row["item_id"]])
    db.conn.commit()
    db.close()


def test_a_run_stored_before_migration_13_reads_as_not_one_hot(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    run_id = grade_run(path, answered_only, name="old")  # one-hot, but stored without the flag
    as_before_migration_13(path)
    db = open_db(path)
    assert [m["number"] for m in db["_migrations"].rows] == [number for number, _, _ in MIGRATIONS]
    assert [row["one_hot"] for row in db.query("select one_hot from judge_votes")] == [None] * 6
    db.close()
    loaded, _ = load_result(path, "old")
    assert not any(v.one_hot for item in loaded.item_results for c in item.report.report
                   for v in [*c.votes, *c.multi_choice_votes])
    table = invoke(CliRunner(env={"COLUMNS": "200"}), "show", "old", "--db", path, "--votes")
    assert table.exit_code == 0 and "one-hot" not in table.stdout
    # the upgraded file takes a new run with the flag beside the old one
    new_id = grade_run(path, answered_only, name="new")
    store = Store.open(path)
    assert {row["one_hot"] for row in store.judgments(new_id)} == {1}
    assert {row["one_hot"] for row in store.judgments(run_id)} == {None}
