"""Browsing a comparison (issue 50): the views ``comparison_judgments`` and ``comparison_pairs``
(migration 16) and the comparison canned queries, on comparisons judged by a scripted judge with a
pull to slot 1 (so some pairs are position-inconsistent) and one failed judgment, on the 3- and
5-point scales; every value checked by hand and against ``comparisons/preferences.py`` as the
stored comparison reads it back; tie-breaking of the verdicts and labels on crafted probabilities;
migration 16 on a file already at migration 15."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.browse import CANNED_QUERIES, DESCRIPTIONS, browse_metadata
from autorubric_local.comparisons.data import ComparisonPrompt
from autorubric_local.comparisons.judging import COMPARISON_FORMAT, load_comparison, run_comparison
from autorubric_local.comparisons.preferences import (
    LABELS5,
    consistent,
    graded_preference,
    graded_probabilities,
    hard_label,
    hard_verdict,
    system_probabilities,
)
from autorubric_local.comparisons.prompts import Question, overall_question
from autorubric_local.comparisons.ranking import position_bias
from autorubric_local.core.errors import InputError
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.runner.config import EvalConfig
from autorubric_local.store import open_db
from autorubric_local.store.schema import _COMPARISON_FORMAT
from fake_judge import fake_judge

QUALITY = {"good": 2.0, "fair": 1.0, "bad": 0.0}
PROMPTS = [ComparisonPrompt(p, f"Question {p}?", {s: f"{s} answer to {p}" for s in QUALITY}) for p in ("p1", "p2")]
PRIMACY = 1.5
"""Added to slot 1 on the overall question: a quality gap of 1 then loses to the pull of slot 1
in order ba (d = -1 + 1.5 > 0), a gap of 2 does not (d = -0.5)."""
ACCURACY = Question("accuracy", "Which response is more accurate?", 1.0)
FAILURE = "infrastructure: the engine fell over"


def log_softmax(values: list[float]) -> list[float]:
    top = max(values)
    total = top + math.log(sum(math.exp(v - top) for v in values))
    return [v - total for v in values]


def gap(request: ScoreRequest) -> float:
    """Quality of the response in slot 1 minus that of slot 2."""
    found = re.search(r"<response 1>\n(\w+) answer.*?<response 2>\n(\w+) answer", request.suffix, re.S)
    assert found is not None
    return QUALITY[found.group(1)] - QUALITY[found.group(2)]


def three_point(request: ScoreRequest) -> list[float]:
    """Prefers the better response; on the overall question adds PRIMACY to slot 1."""
    d = gap(request) + (0.0 if "more accurate" in request.prefix + request.suffix else PRIMACY)
    return log_softmax([d, -d, -abs(d) - 0.5])


def five_point(request: ScoreRequest) -> list[float]:
    """A 5-point judge: strongly for a gap of 2; with a pull of 1.5 to slot 1's side."""
    d = gap(request) + PRIMACY
    return log_softmax([2 * (d - 1.5), 2 * (1 - abs(d - 1)), 1 - abs(d) * 2, 2 * (1 - abs(d + 1)), 2 * (-d - 1.5)])


def judge(policy: Any) -> tuple[ScriptedEngine, JudgeSpec]:
    engine = ScriptedEngine("s", policy=policy)
    return engine, fake_judge(engine=engine, judge_id="s").spec


def config(db: Path, name: str) -> EvalConfig:
    return EvalConfig(db_path=db, experiment_name=name, chunk_judgments=100, show_progress=False)


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Comparison ``cmp`` (3-point, questions overall and accuracy, the first judgment failed),
    ``cmp5`` (5-point, overall) and ``nway`` (N-way) in one file."""
    path = tmp_path_factory.mktemp("browse-comparisons") / "results.sqlite"
    engine, spec = judge(three_point)
    engine.enqueue_scores(FAILURE)
    run_comparison(PROMPTS, [spec], [overall_question(), ACCURACY], config(path, "cmp"))
    run_comparison(PROMPTS, [judge(five_point)[1]], config=config(path, "cmp5"), scale=5)
    run_comparison(PROMPTS, [judge(lambda request: log_softmax([0.0, 1.0, 2.0]))[1]], config=config(path, "nway"),
                   n_way=True)
    return path


def rows(path: Path, sql: str, **params: str) -> list[dict[str, Any]]:
    with closing(sqlite3.connect(path)) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute(sql, params)]


def canned(path: Path, name: str, **params: str) -> list[dict[str, Any]]:
    """Rows of canned query ``name`` (blank parameters as Datasette sends them)."""
    sql = CANNED_QUERIES[name]["sql"]
    return rows(path, sql, **{p: params.get(p, "") for p in re.findall(r":(\w+)", sql)})


def judgments_of(path: Path, comparison: str) -> dict[tuple[str, str], Any]:
    """The stored comparison's PairJudgments by (item id, question)."""
    return {(j.item_id, j.question): j for j in load_comparison(path, comparison).judgments}


def test_the_store_knows_the_comparison_format() -> None:
    assert _COMPARISON_FORMAT == COMPARISON_FORMAT


# ------------------------------------------------------------------------------ comparison_judgments


def test_each_judgment_and_slot_order_shows_its_systems_and_probabilities(db_path: Path) -> None:
    shown = rows(db_path, "select * from comparison_judgments where comparison_name = 'cmp' "
                          "order by item_index, criterion_index, rotation")
    assert len(shown) == 2 * 3 * 2 * 2  # prompts x pairs x questions x orders
    first, second = shown[0], shown[1]  # p1 good vs fair, overall, orders ab and ba
    assert (first["prompt_id"], first["question"], first["judge_id"], first["scale"]) == ("p1", "overall", "s", 3)
    assert (first["slot_order"], first["slot_1_system"], first["slot_2_system"]) == ("ab", "good", "fair")
    assert (second["slot_order"], second["slot_1_system"], second["slot_2_system"]) == ("ba", "fair", "good")
    assert first["error"] == FAILURE and first["p_slot_1"] is None and first["verdict"] is None
    d = -1.0 + PRIMACY  # order ba: fair (1) in slot 1, good (2) in slot 2, plus the pull
    expected = [math.exp(v) for v in log_softmax([d, -d, -abs(d) - 0.5])]
    assert [second["p_slot_1"], second["p_slot_2"], second["p_tie"]] == pytest.approx(expected, abs=1e-12)
    assert second["verdict"] == "1" and second["error"] is None and second["label"] is None
    assert second["p_1_much_better"] is None and second["p_2_much_better"] is None
    assert {r["question"] for r in shown} == {"overall", "accuracy"}
    by_key = judgments_of(db_path, "cmp")
    for row in shown[2:]:
        judgment = by_key[(row["item_id"], row["question"])]
        stored = judgment.ab if row["rotation"] == 0 else judgment.ba
        assert [row["p_slot_1"], row["p_slot_2"], row["p_tie"]] == pytest.approx(
            [stored["1"], stored["2"], stored["tie"]], abs=1e-12)
        assert row["verdict"] == hard_verdict(stored)


def test_five_point_judgments_show_the_five_labels_and_the_most_probable(db_path: Path) -> None:
    shown = rows(db_path, "select * from comparison_judgments where comparison_name = 'cmp5' "
                          "order by item_index, rotation")
    assert len(shown) == 2 * 3 * 2 and {r["scale"] for r in shown} == {5}
    by_key = judgments_of(db_path, "cmp5")
    for row in shown:
        judgment = by_key[(row["item_id"], "overall")]
        stored = judgment.ab if row["rotation"] == 0 else judgment.ba
        five = [row[c] for c in ("p_1_much_better", "p_1_better", "p_same", "p_2_better", "p_2_much_better")]
        assert five == pytest.approx([stored[label] for label in LABELS5], abs=1e-12)
        assert row["p_slot_1"] is None and row["p_tie"] is None
        assert row["label"] == hard_label(stored)
    # good vs bad (gap 2, +1.5): 1>>2 in order ab; in order ba d = -0.5: the five logits by hand
    ab, ba = shown[2], shown[3]
    assert (ab["slot_1_system"], ab["label"], ab["verdict"]) == ("good", "1>>2", "1")
    logits = [2 * (-0.5 - 1.5), 2 * (1 - 1.5), 1 - 1.0, 2 * (1 - 0.5), 2 * (0.5 - 1.5)]  # [-4, -1, 0, 1, -2]
    assert ba["p_2_better"] == pytest.approx(math.exp(log_softmax(logits)[3]), abs=1e-12)
    assert (ba["slot_1_system"], ba["label"], ba["verdict"]) == ("bad", "2>1", "2")


def test_an_n_way_comparison_has_no_rows(db_path: Path) -> None:
    assert rows(db_path, "select count(*) as n from sweep_judgments j join sweeps s on s.id = j.sweep_id "
                         "where s.name = 'nway'")[0]["n"] == 2 * 3  # prompts x rotations
    for view in ("comparison_judgments", "comparison_pairs"):
        assert rows(db_path, f"select count(*) as n from {view} where comparison_name = 'nway'")[0]["n"] == 0


# ------------------------------------------------------------------------------ comparison_pairs


def test_each_pair_maps_both_orders_to_systems_and_flags_position_consistency(db_path: Path) -> None:
    pairs = rows(db_path, "select * from comparison_pairs where comparison_name = 'cmp' "
                          "order by item_index, criterion_index")
    assert len(pairs) == 2 * 3 * 2
    # By hand: on the overall question a gap of 1 (good-fair, fair-bad) loses to the pull of slot 1 in
    # order ba, so both orders pick slot 1: inconsistent; a gap of 2 (good-bad) is consistent. The
    # accuracy question has no pull: every pair consistent. p1 good vs fair's order ab failed.
    flags = {(r["prompt_id"], r["system_a"], r["system_b"], r["question"]): r["consistent"] for r in pairs}
    assert flags == {
        ("p1", "good", "fair", "overall"): None, ("p1", "good", "fair", "accuracy"): 1,
        ("p1", "good", "bad", "overall"): 1, ("p1", "good", "bad", "accuracy"): 1,
        ("p1", "fair", "bad", "overall"): 0, ("p1", "fair", "bad", "accuracy"): 1,
        ("p2", "good", "fair", "overall"): 0, ("p2", "good", "fair", "accuracy"): 1,
        ("p2", "good", "bad", "overall"): 1, ("p2", "good", "bad", "accuracy"): 1,
        ("p2", "fair", "bad", "overall"): 0, ("p2", "fair", "bad", "accuracy"): 1,
    }
    failed = pairs[0]
    assert failed["error_ab"] == FAILURE and failed["error_ba"] is None
    assert failed["p_a"] is None and failed["p_a_ab"] is None and failed["swap_winner"] is None
    assert failed["p_a_ba"] is not None and failed["winner_ba"] == "fair"  # slot 1 of order ba holds fair
    inconsistent = next(r for r in pairs if r["prompt_id"] == "p2" and r["system_a"] == "good"
                        and r["question"] == "overall")
    assert (inconsistent["verdict_ab"], inconsistent["verdict_ba"]) == ("1", "1")
    assert (inconsistent["winner_ab"], inconsistent["winner_ba"]) == ("good", "fair")
    assert inconsistent["swap_winner"] == "tie"
    d_ab, d_ba = 1.0 + PRIMACY, -1.0 + PRIMACY
    ab = [math.exp(v) for v in log_softmax([d_ab, -d_ab, -abs(d_ab) - 0.5])]
    ba = [math.exp(v) for v in log_softmax([d_ba, -d_ba, -abs(d_ba) - 0.5])]
    assert (inconsistent["p_a_ab"], inconsistent["p_b_ab"], inconsistent["p_a_ba"], inconsistent["p_b_ba"]) == \
        pytest.approx((ab[0], ab[1], ba[1], ba[0]), abs=1e-12)
    assert inconsistent["p_a"] == pytest.approx((ab[0] + ba[1]) / 2, abs=1e-12)
    assert inconsistent["p_tie"] == pytest.approx((ab[2] + ba[2]) / 2, abs=1e-12)
    by_key = judgments_of(db_path, "cmp")
    for row in pairs[1:]:
        judgment = by_key[(row["item_id"], row["question"])]
        first = system_probabilities(judgment.ab, swapped=False)
        second = system_probabilities(judgment.ba, swapped=True)
        assert [row["p_a_ab"], row["p_tie_ab"], row["p_b_ab"]] == pytest.approx(
            [first["a"], first["tie"], first["b"]], abs=1e-12)
        assert [row["p_a_ba"], row["p_tie_ba"], row["p_b_ba"]] == pytest.approx(
            [second["a"], second["tie"], second["b"]], abs=1e-12)
        assert [row["p_a"], row["p_tie"], row["p_b"]] == pytest.approx(
            [judgment.preference[k] for k in ("a", "tie", "b")], abs=1e-12)
        assert (row["verdict_ab"], row["verdict_ba"]) == judgment.verdicts
        assert row["consistent"] == consistent(*judgment.verdicts)
        systems = {"a": judgment.system_a, "b": judgment.system_b, "tie": "tie"}
        assert row["swap_winner"] == systems[judgment.swap_verdict]


def test_five_point_pairs_use_the_balanced_grades(db_path: Path) -> None:
    pairs = rows(db_path, "select * from comparison_pairs where comparison_name = 'cmp5' order by item_index")
    assert len(pairs) == 2 * 3
    by_key = judgments_of(db_path, "cmp5")
    for row in pairs:
        judgment = by_key[(row["item_id"], "overall")]
        first = graded_preference(graded_probabilities(judgment.ab, swapped=False))
        second = graded_preference(graded_probabilities(judgment.ba, swapped=True))
        assert [row["p_a_ab"], row["p_tie_ab"], row["p_b_ab"], row["p_a_ba"], row["p_tie_ba"], row["p_b_ba"]] == \
            pytest.approx([first["a"], first["tie"], first["b"], second["a"], second["tie"], second["b"]], abs=1e-12)
        assert [row["p_a"], row["p_tie"], row["p_b"]] == pytest.approx(
            [judgment.preference[k] for k in ("a", "tie", "b")], abs=1e-12)
        assert (row["label_ab"], row["label_ba"]) == judgment.labels
        assert row["consistent"] == consistent(*judgment.verdicts)
    # By hand: good vs bad (gap 2) is 1>>2 in order ab and 2>1 in order ba (d = -0.5): consistent, for good;
    # a gap of 1 is 1>>2 in order ab (d = 2.5) and 1>2 in order ba (d = 0.5): inconsistent.
    assert [(r["system_a"], r["system_b"], r["label_ab"], r["label_ba"], r["consistent"]) for r in pairs[:3]] == [
        ("good", "fair", "1>>2", "1>2", 0), ("good", "bad", "1>>2", "2>1", 1), ("fair", "bad", "1>>2", "1>2", 0)]
    assert pairs[1]["swap_winner"] == "good"


CRAFTED_3 = [
    [0.4, 0.4, 0.2],  # slots equally probable: a tie
    [0.45, 0.1, 0.45],  # the tie as probable as slot 1: a tie
    [0.5, 0.2, 0.3],
    [1, 0, 0],  # one-hot, stored as integers
    [0.2, 0.6, 0.6],  # not normalised: renormalised, a tie
]
CRAFTED_5 = [
    [0.3, 0.3, 0.1, 0.2, 0.1],  # equal maxima: the weaker claim, 1>2
    [0.35, 0.0, 0.3, 0.0, 0.35],  # equally far from 1=2: the first, 1>>2
    [0.1, 0.25, 0.25, 0.25, 0.15],  # 1=2 among the maxima
    [0.1, 0.1, 0.1, 0.3, 0.4],
    [0, 0, 0, 0, 1],  # one-hot, stored as integers
]


@pytest.mark.parametrize("name, crafted", [("cmp", CRAFTED_3), ("cmp5", CRAFTED_5)])
def test_verdicts_labels_and_preferences_on_crafted_probabilities_are_the_python_ones(
        db_path: Path, tmp_path: Path, name: str, crafted: list[list[float]]) -> None:
    """Ties between labels and unnormalised or integer probabilities: the views' verdicts, labels,
    consistency and preferences equal what the Python code reads from the same stored rows."""
    copy = tmp_path / "crafted.sqlite"
    with closing(sqlite3.connect(db_path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
    with closing(sqlite3.connect(copy)) as db:
        judged = db.execute("select j.rowid from sweep_judgments j join sweeps s on s.id = j.sweep_id "
                            "where s.name = ? and j.error is null order by j.rowid", (name,)).fetchall()
        for k, (rowid,) in enumerate(judged):
            db.execute("update sweep_judgments set probabilities_json = ? where rowid = ?",
                       (json.dumps(crafted[k % len(crafted)]), rowid))
        db.commit()
    by_key = judgments_of(copy, name)
    pairs = rows(copy, "select * from comparison_pairs where comparison_name = :name and consistent is not null",
                 name=name)
    assert len(pairs) == len([j for j in by_key.values() if j.complete]) > 0
    for row in pairs:
        judgment = by_key[(row["item_id"], row["question"])]
        assert (row["verdict_ab"], row["verdict_ba"]) == judgment.verdicts
        assert row["consistent"] == consistent(*judgment.verdicts)
        if name == "cmp5":
            assert (row["label_ab"], row["label_ba"]) == judgment.labels
        assert [row["p_a"], row["p_tie"], row["p_b"]] == pytest.approx(
            [judgment.preference[k] for k in ("a", "tie", "b")], abs=1e-12)
    labels = {r["label"] for r in rows(copy, "select label from comparison_judgments where comparison_name = :name",
                                       name=name)}
    if name == "cmp5":
        assert {hard_label(dict(zip(LABELS5, c, strict=True))) for c in CRAFTED_5} == {"1>2", "1>>2", "1=2", "2>>1"}
        assert labels >= {"1>2", "1>>2", "1=2", "2>>1"}
    else:
        assert [hard_verdict(dict(zip(("1", "2", "tie"), c, strict=True))) for c in CRAFTED_3] == \
            ["tie", "tie", "1", "1", "tie"]


# ------------------------------------------------------------------------------ browse


def test_views_are_described_and_faceted_on_comparison_question_verdict_and_judge(db_path: Path) -> None:
    db = open_db(db_path)
    tables = browse_metadata(db, "results")["databases"]["results"]["tables"]
    db.close()
    assert tables["comparison_judgments"]["facets"] == ["comparison_name", "question", "verdict", "judge_id"]
    assert tables["comparison_pairs"]["facets"] == ["comparison_name", "question", "consistent", "judge_id"]
    assert tables["sweep_judgments"]["facets"] == ["sweep_id", "criterion_name", "judge_id"]  # as before
    for view in ("comparison_judgments", "comparison_pairs"):
        assert tables[view]["title"] == DESCRIPTIONS[view][0] and tables[view]["description"]


def test_position_inconsistent_pairs_of_one_comparison_or_every_one(db_path: Path) -> None:
    found = canned(db_path, "position_inconsistent_pairs", comparison="cmp")
    assert [(r["prompt_id"], r["system_a"], r["system_b"], r["question"], r["winner_ab"], r["winner_ba"])
            for r in found] == [("p1", "fair", "bad", "overall", "fair", "bad"),
                                ("p2", "good", "fair", "overall", "good", "fair"),
                                ("p2", "fair", "bad", "overall", "fair", "bad")]
    every = canned(db_path, "position_inconsistent_pairs")
    assert [(r["comparison_name"], r["prompt_id"], r["system_a"], r["system_b"]) for r in every] == [
        ("cmp", "p1", "fair", "bad"), ("cmp", "p2", "good", "fair"), ("cmp", "p2", "fair", "bad"),
        ("cmp5", "p1", "good", "fair"), ("cmp5", "p1", "fair", "bad"),
        ("cmp5", "p2", "good", "fair"), ("cmp5", "p2", "fair", "bad")]
    assert canned(db_path, "position_inconsistent_pairs", comparison="no such") == []


def test_position_consistency_per_judge_and_question_is_rankings(db_path: Path) -> None:
    found = canned(db_path, "comparison_position_consistency")
    assert [(r["comparison_name"], r["question"], r["n"]) for r in found] == [
        ("cmp", "overall", 5), ("cmp", "accuracy", 6), ("cmp5", "overall", 6)]
    # By hand, cmp overall: 5 complete pairs, 3 inconsistent, each verdict of theirs slot 1.
    assert (found[0]["consistency"], found[0]["conflict_rate"], found[0]["primacy"], found[0]["recency"]) == \
        pytest.approx((2 / 5, 3 / 5, 1.0, 0.0))
    assert found[1]["consistency"] == 1.0 and found[1]["primacy"] is None
    for row in found:
        measures = position_bias(load_comparison(db_path, row["comparison_name"]), judge_id=row["judge_id"],
                                 question=row["question"], n_bootstrap=0).measures
        assert (row["n"], row["consistency"], row["conflict_rate"], row["primacy"], row["recency"]) == (
            measures.n, measures.consistency, measures.conflict_rate, measures.primacy, measures.recency)
    assert [r["comparison_name"] for r in canned(db_path, "comparison_position_consistency", comparison="cmp5")] \
        == ["cmp5"]


# ------------------------------------------------------------------------------ migration 16


def test_migration_16_adds_the_views_to_a_file_at_migration_15_and_changes_no_data(db_path: Path,
                                                                                  tmp_path: Path) -> None:
    copy = tmp_path / "v15.sqlite"
    with closing(sqlite3.connect(db_path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
        target.execute("drop view comparison_pairs")
        target.execute("drop view comparison_judgments")
        target.execute("delete from _migrations where number = 16")
        target.commit()
    before = rows(copy, "select * from sweep_judgments order by rowid")
    db = open_db(copy)
    assert 16 in {r["number"] for r in db["_migrations"].rows}
    assert {"comparison_judgments", "comparison_pairs"} <= set(db.view_names())
    db.close()
    assert rows(copy, "select * from sweep_judgments order by rowid") == before
    assert rows(copy, "select * from comparison_pairs order by sweep_id, item_index, criterion_index") == \
        rows(db_path, "select * from comparison_pairs order by sweep_id, item_index, criterion_index")
    again = open_db(copy)  # an up-to-date file: nothing applied twice
    assert [r["number"] for r in again["_migrations"].rows].count(16) == 1
    again.close()


def test_probabilities_the_python_code_refuses_are_null_never_a_verdict(db_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "refused.sqlite"
    with closing(sqlite3.connect(db_path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
    refused = {"[1.5, 0, 0]": "must lie in", "[0, 0, 0]": "sum to 0", "[-0.1, 0.6, 0.5]": "must lie in"}
    with closing(sqlite3.connect(copy)) as db:
        judged = db.execute("select j.rowid from sweep_judgments j join sweeps s on s.id = j.sweep_id "
                            "where s.name = 'cmp' and j.error is null order by j.rowid limit 3").fetchall()
        for (rowid,), values in zip(judged, refused, strict=True):
            db.execute("update sweep_judgments set probabilities_json = ? where rowid = ?", (values, rowid))
        db.commit()
    for values, message in refused.items():
        with pytest.raises(InputError, match=message):
            hard_verdict(dict(zip(("1", "2", "tie"), json.loads(values), strict=True)))
    shown = rows(copy, "select * from comparison_judgments where comparison_name = 'cmp' and error is null "
                       "order by item_index, criterion_index, rotation")
    nulls = [r for r in shown if r["p_slot_1"] is None]
    assert len(nulls) == 3 and all(r["verdict"] is None and r["p_tie"] is None for r in nulls)


def test_a_comparison_stored_without_a_scale_is_read_as_three_point(db_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "no-scale.sqlite"
    with closing(sqlite3.connect(db_path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
        target.execute("update sweeps set rubric_json = json_remove(rubric_json, '$.scale') where name = 'cmp'")
        target.commit()
    query = "select * from comparison_pairs where comparison_name = 'cmp' order by item_index, criterion_index"
    assert rows(copy, "select json_extract(rubric_json, '$.scale') as s from sweeps where name = 'cmp'") == [{"s": None}]
    assert rows(copy, query) == rows(db_path, query) and len(rows(copy, query)) == 12


# ------------------------------------------------------------------------------ N-way (migration 17)

NWAY_P = [math.exp(v) for v in log_softmax([0.0, 1.0, 2.0])]
"""The nway judge's probability of slots 1, 2, 3 in every rotation: slot 3 always chosen."""


def test_each_nway_judgment_shows_its_systems_slots_and_probabilities_as_the_library_reads_them(
        db_path: Path) -> None:
    shown = rows(db_path, "select * from comparison_slot_judgments where comparison_name = 'nway' "
                          "order by item_index, rotation, slot")
    assert len(shown) == 2 * 3 * 3  # prompts x rotations x slots
    assert [r["probability"] for r in shown] == pytest.approx(NWAY_P * 6, abs=1e-12)
    assert [r["chosen"] for r in shown] == [0, 0, 1] * 6 and {r["n_systems"] for r in shown} == {3}
    for judgment in load_comparison(db_path, "nway").nway:
        for rotation, probabilities in enumerate(judgment.rotations):
            mine = {r["system"]: r["probability"] for r in shown
                    if r["item_id"] == judgment.item_id and r["rotation"] == rotation}
            assert mine == pytest.approx(probabilities, abs=1e-12)  # each system in the slot the library maps it to
    first = {(r["slot"], r["system"]) for r in shown if r["item_index"] == 0}
    assert first == {(slot, system) for slot in (1, 2, 3) for system in QUALITY}  # each system in each slot once
    assert rows(db_path, "select count(*) as n from comparison_slot_judgments where comparison_name != 'nway'")[0][
        "n"] == 0  # pairwise comparisons are migration 16's


def test_each_system_gets_the_balanced_preference_and_is_chosen_once(db_path: Path) -> None:
    found = rows(db_path, "select * from comparison_nway_preferences order by item_index, system")
    assert len(found) == 2 * 3
    assert all(r["rotations_judged"] == 3 and r["times_chosen"] == 1 and r["chosen_in_slots"] == "3" for r in found)
    assert [r["preference"] for r in found] == pytest.approx([sum(NWAY_P) / 3] * 6, abs=1e-12)  # each slot once
    library = {(j.item_id, s): p for j in load_comparison(db_path, "nway").nway for s, p in j.preference.items()}
    assert {(r["item_id"], r["system"]): r["preference"] for r in found} == pytest.approx(library, abs=1e-12)


def test_slot_choices_show_the_pull_to_slot_3(db_path: Path) -> None:
    found = canned(db_path, "nway_slot_choices", comparison="nway")
    assert [(r["slot"], r["chosen"], r["judgments"], r["share"]) for r in found] == [
        (1, 0, 6, 0.0), (2, 0, 6, 0.0), (3, 6, 6, 1.0)]
    assert found[0]["share_without_bias"] == pytest.approx(1 / 3)
    assert canned(db_path, "nway_slot_choices", comparison="cmp") == []
    db = open_db(db_path)
    tables = browse_metadata(db, "results")["databases"]["results"]["tables"]
    db.close()
    assert tables["comparison_slot_judgments"]["facets"] == ["comparison_name", "question", "judge_id"]
    for view in ("comparison_slot_judgments", "comparison_nway_preferences"):
        assert tables[view]["title"] == DESCRIPTIONS[view][0]


def test_a_failed_nway_rotation_is_null_and_leaves_no_preference(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    engine, spec = judge(lambda request: log_softmax([0.0, 1.0, 2.0]))
    engine.enqueue_scores(FAILURE)
    run_comparison(PROMPTS[:1], [spec], config=config(path, "nway"), n_way=True)
    failed = rows(path, "select * from comparison_slot_judgments where error is not null")
    assert len(failed) == 3 and {(r["probability"], r["chosen"]) for r in failed} == {(None, None)}
    found = rows(path, "select * from comparison_nway_preferences")
    assert {(r["rotations_judged"], r["preference"]) for r in found} == {(2, None)}
    assert sum(r["times_chosen"] for r in found) == 2
