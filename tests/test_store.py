"""Store and open_db: schema after migrations, WAL, and how graded items are recorded
(one row per judgment, original option indices, errors stored as errors, idempotent writes,
runs kept apart). Graded items come from a ScriptedEngine: no model is loaded."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

import autorubric_local.graders.records as records_module
import autorubric_local.store.schema as schema_module
from autorubric_local.core.errors import AutorubricError, InputError
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader, GradedItem
from autorubric_local.graders.planning import GradeItem
from autorubric_local.graders.records import graded_item_records
from autorubric_local.store import MIGRATIONS, SCHEMA_VERSION, Store, open_db
from fake_judge import fake_grader

EXPECTED_COLUMNS: dict[str, dict[str, str]] = {
    "_migrations": {"number": "INTEGER", "name": "TEXT", "applied_utc": "TEXT"},
    "runs": {
        "id": "TEXT",
        "name": "TEXT",
        "started_utc": "TEXT",
        "finished_utc": "TEXT",
        "status": "TEXT",
        "judges_json": "TEXT",
        "grader_json": "TEXT",
        "rubric_json": "TEXT",
        "data_path": "TEXT",
        "package_version": "TEXT",
        "content_hash": "TEXT",
        "dataset_json": "TEXT",
        "total_items": "INTEGER",
        "wall_seconds": "REAL",
    },
    "items": {
        "run_id": "TEXT",
        "item_id": "TEXT",
        "item_index": "INTEGER",
        "submission": "TEXT",
        "query": "TEXT",
        "reference_submission": "TEXT",
        "score": "REAL",
        "raw_score": "REAL",
        "cannot_assess_count": "INTEGER",
        "error": "TEXT",
        "prompt_tokens": "INTEGER",
        "completion_tokens": "INTEGER",
        "cached_tokens": "INTEGER",
        "item_json": "TEXT",
        "ground_truth_json": "TEXT",
        "item_hash": "TEXT",
        "report_json": "TEXT",
        "engine_seconds": "REAL",
        "judgment_count": "INTEGER",
        "graded_utc": "TEXT",
    },
    "judgments": {
        "run_id": "TEXT",
        "item_id": "TEXT",
        "criterion_index": "INTEGER",
        "criterion_name": "TEXT",
        "judge_id": "TEXT",
        "model_id": "TEXT",
        "permutation_index": "INTEGER",
        "shuffle_order_json": "TEXT",
        "verdict": "TEXT",
        "selected_index": "INTEGER",
        "selected_label": "TEXT",
        "label_probabilities_json": "TEXT",
        "explanation": "TEXT",
        "explanation_truncated": "INTEGER",
        "prompt_tokens": "INTEGER",
        "completion_tokens": "INTEGER",
        "cached_tokens": "INTEGER",
        "duration_ms": "REAL",
        "error": "TEXT",
        "explanation_error": "TEXT",
        "label_logprobs_json": "TEXT",
        "off_label_mass": "REAL",
        "uncalibrated_label_probabilities_json": "TEXT",
        "contextual_prior_id": "TEXT",
        "prompt_prefix_id": "TEXT",
        "prompt_suffix_id": "TEXT",
        "one_hot": "INTEGER",
    },
    "prompt_texts": {"id": "TEXT", "text": "TEXT"},
    "item_criteria": {
        "run_id": "TEXT",
        "item_id": "TEXT",
        "criterion_index": "INTEGER",
        "criterion_name": "TEXT",
        "requirement": "TEXT",
        "weight": "REAL",
        "scale_type": "TEXT",
        "verdict": "TEXT",
        "selected_index": "INTEGER",
        "selected_label": "TEXT",
        "score_value": "REAL",
        "is_na": "INTEGER",
        "passed": "INTEGER",
        "contribution": "REAL",
        "agreement": "REAL",
        "final_reason": "TEXT",
        "label_probabilities_json": "TEXT",
        "error": "TEXT",
    },
    "contextual_priors": {
        "run_id": "TEXT",
        "prior_id": "TEXT",
        "judge_id": "TEXT",
        "criterion_name": "TEXT",
        "criterion_json": "TEXT",
        "option_order_json": "TEXT",
        "content_free_inputs_json": "TEXT",
        "content_free_label_probabilities_json": "TEXT",
        "prior_json": "TEXT",
        "error": "TEXT",
    },
    "threshold_calibrations": {
        "id": "INTEGER",
        "run_id": "TEXT",
        "fitted_utc": "TEXT",
        "method": "TEXT",
        "settings_json": "TEXT",
        "train_item_ids_json": "TEXT",
        "test_item_ids_json": "TEXT",
        "calibration_json": "TEXT",
        "held_out_json": "TEXT",
    },
    "sweep_judgments": {
        "sweep_id": "TEXT",
        "item_id": "TEXT",
        "item_index": "INTEGER",
        "criterion_index": "INTEGER",
        "criterion_name": "TEXT",
        "judge_id": "TEXT",
        "variant": "TEXT",
        "rotation": "INTEGER",
        "option_order_json": "TEXT",
        "chosen_position": "INTEGER",
        "chosen_option": "INTEGER",
        "probabilities_json": "TEXT",
        "prompt_tokens": "INTEGER",
        "cached_tokens": "INTEGER",
        "duration_ms": "REAL",
        "error": "TEXT",
        "label_probabilities_json": "TEXT",
        "label_logprobs_json": "TEXT",
        "off_label_mass": "REAL",
    },
    "run_leases": {
        "run_id": "TEXT",
        "owner": "TEXT",
        "pid": "INTEGER",
        "host": "TEXT",
        "acquired_utc": "TEXT",
        "heartbeat_utc": "TEXT",
    },
}
EXPECTED_PKS: dict[str, list[str]] = {
    "_migrations": ["number"],
    "run_leases": ["run_id"],
    "contextual_priors": ["run_id", "prior_id"],
    "threshold_calibrations": ["id"],
    "runs": ["id"],
    "items": ["run_id", "item_id"],
    "judgments": ["run_id", "item_id", "criterion_index", "judge_id", "permutation_index"],
    "sweep_judgments": ["sweep_id", "item_id", "criterion_index", "judge_id", "variant", "rotation"],
    "prompt_texts": ["id"],
    "item_criteria": ["run_id", "item_id", "criterion_index"],
}

POSITIVE = Criterion(name="density", weight=10.0, requirement="States the energy density")
NEGATIVE = Criterion(name="density_error", weight=-15.0, requirement="Claims LFP is denser")
DEPTH = Criterion(
    name="depth",
    weight=6.0,
    requirement="How deep is the comparison?",
    scale_type="ordinal",
    options=[
        CriterionOption(label="Vague", value=0.0),
        CriterionOption(label="Basic", value=0.33),
        CriterionOption(label="Solid", value=0.67),
        CriterionOption(label="Expert", value=1.0),
    ],
)
RUBRIC = (POSITIVE, NEGATIVE, DEPTH)
SUBMISSIONS = (
    "NMC cells reach 250-300 Wh/kg; LFP lasts longer.",
    "LFP is cheaper and cobalt-free.",
    "Batteries store energy.",
)
BINARY_LABELS = ("MET", "UNMET", "CANNOT_ASSESS")


def lp(*probabilities: float) -> list[float]:
    return [math.log(p) for p in probabilities]


def policy(request: ScoreRequest) -> list[float]:
    """Binary: P(MET)=0.7. Multi-choice: the option shown second is the most likely."""
    if len(request.labels) == 3:
        return lp(0.7, 0.2, 0.1)
    weights = [1.0] * len(request.labels)
    weights[1] = 5.0
    total = sum(weights)
    return lp(*(w / total for w in weights))


def make_grader(engine: ScriptedEngine, seed: int = 3) -> CriterionGrader:
    return fake_grader(engine, seed=seed)


def make_items(ids: Sequence[str] = ("a", "b", "c")) -> list[GradeItem]:
    return [
        GradeItem(submission=text, rubric=RUBRIC, query="Compare NMC and LFP.", item_id=item_id)
        for text, item_id in zip(SUBMISSIONS, ids)
    ]


def grade(engine: ScriptedEngine | None = None, ids: Sequence[str] = ("a", "b", "c")) -> list[GradedItem]:
    engine = engine or ScriptedEngine(model_id="scripted-judge", policy=policy)
    return make_grader(engine).grade_batch(make_items(ids))


def start(store: Store, name: str | None = None) -> str:
    return store.start_run(
        name=name,
        judges=[{"judge_id": "scripted", "model": "scripted", "model_id": "scripted-judge"}],
        grader={"mode": "score", "seed": 3},
        rubric=[c.model_dump() for c in RUBRIC],
        data_path="subs.jsonl",
    )


MODEL_IDS = {"scripted": "scripted-judge"}


def record(store: Store, run_id: str, graded: Sequence[GradedItem], model_ids: dict[str, str], **kwargs: Any) -> None:
    """Record graded items as the runner does: the grader's records, then the store's write."""
    store.record_items(run_id, *graded_item_records(graded, model_ids, **kwargs))


@pytest.fixture
def db() -> Iterator[sqlite_utils.Database]:
    database = open_db(":memory:")
    yield database
    database.close()


@pytest.fixture
def store(db: sqlite_utils.Database) -> Store:
    return Store(db)


@pytest.fixture(params=["file", "memory"])
def any_path(request: Any, tmp_path: Path) -> str:
    return str(tmp_path / "results.sqlite") if request.param == "file" else ":memory:"


# ------------------------------------------------------------------------------ schema


def test_schema_after_migrations(any_path: str) -> None:
    db = open_db(any_path)
    assert set(db.table_names()) >= set(EXPECTED_COLUMNS)
    for table, columns in EXPECTED_COLUMNS.items():
        assert {c.name: c.type for c in db[table].columns} == columns, table
        assert db[table].pks == EXPECTED_PKS[table], table
    fks = {(fk.column, fk.other_table, fk.other_column) for fk in db["judgments"].foreign_keys}
    assert fks == {("run_id", "runs", "id")}
    assert any(idx.columns == ["run_id", "item_id"] for idx in db["judgments"].indexes)
    migrations = list(db["_migrations"].rows)
    assert [m["number"] for m in migrations] == [number for number, _, _ in MIGRATIONS]
    assert migrations[-1]["number"] == SCHEMA_VERSION
    assert all(m["applied_utc"] for m in migrations)


def test_opening_twice_applies_nothing_new(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    first = open_db(path)
    before = list(first["_migrations"].rows)
    first.close()
    second = open_db(path)
    assert list(second["_migrations"].rows) == before
    assert second["_migrations"].count == len(MIGRATIONS)


def test_open_db_sets_a_busy_timeout(tmp_path: Path) -> None:
    assert open_db(tmp_path / "a.sqlite").execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    db = open_db(tmp_path / "b.sqlite", busy_timeout_seconds=2.5)
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 2_500


def test_file_db_uses_wal(tmp_path: Path) -> None:
    db = open_db(tmp_path / "results.sqlite")
    assert db.journal_mode == "wal"
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_not_a_database_raises(tmp_path: Path) -> None:
    path = tmp_path / "not.sqlite"
    path.write_bytes(b"this is not an sqlite file at all" * 200)
    with pytest.raises(InputError, match=f"^{re.escape(str(path))}: not an SQLite results database"):
        open_db(path)


def test_failed_migration_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(db: sqlite_utils.Database) -> None:
        db["half_done"].create({"a": int})
        raise RuntimeError("migration failed halfway")

    monkeypatch.setattr(schema_module, "MIGRATIONS", (*MIGRATIONS, (len(MIGRATIONS) + 1, "broken", broken)))
    path = tmp_path / "results.sqlite"
    with pytest.raises(RuntimeError, match="halfway"):
        open_db(path)
    db = sqlite_utils.Database(path)
    assert "half_done" not in db.table_names()
    assert db["_migrations"].count == len(MIGRATIONS)


# ------------------------------------------------------------------------------ recording


def test_one_row_per_item_and_criterion(store: Store) -> None:
    graded = grade()
    run_id = start(store)
    record(store, run_id, graded, MODEL_IDS)
    rows = store.judgments(run_id)
    assert len(rows) == len(graded) * len(RUBRIC)
    assert [(r["item_id"], r["criterion_index"]) for r in rows] == [
        (item_id, c) for item_id in ("a", "b", "c") for c in range(len(RUBRIC))
    ]
    for row in rows:
        assert row["criterion_name"] == RUBRIC[row["criterion_index"]].name
        assert row["judge_id"] == "scripted"
        assert row["model_id"] == "scripted-judge"
        assert row["permutation_index"] == 0
        assert row["error"] is None
        assert row["explanation"] is None
        assert row["explanation_truncated"] == 0
    items = list(store.db["items"].rows_where("run_id = ?", [run_id], order_by="item_index"))
    assert [i["item_id"] for i in items] == ["a", "b", "c"]
    assert [i["item_index"] for i in items] == [0, 1, 2]
    assert [i["submission"] for i in items] == list(SUBMISSIONS)
    assert all(i["query"] == "Compare NMC and LFP." for i in items)
    for item, entry in zip(items, graded):
        assert item["score"] == pytest.approx(entry.report.score)
        assert item["raw_score"] == pytest.approx(entry.report.raw_score)
        assert item["cannot_assess_count"] == entry.report.cannot_assess_count
        assert item["error"] is None


def test_binary_rows_store_verdict_and_probabilities(store: Store) -> None:
    graded = grade()
    run_id = start(store)
    record(store, run_id, graded, MODEL_IDS)
    rows = {(r["item_id"], r["criterion_index"]): r for r in store.judgments(run_id)}
    for entry in graded:
        for index in (0, 1):
            row = rows[(entry.item.item_id, index)]
            report = entry.report.report[index]
            assert row["verdict"] == report.final_verdict.value == "MET"
            assert row["selected_index"] is None and row["selected_label"] is None
            assert row["shuffle_order_json"] is None
            stored = json.loads(row["label_probabilities_json"])
            assert stored == pytest.approx(report.label_probabilities)
            assert list(stored) == list(BINARY_LABELS)
            assert stored["MET"] == pytest.approx(0.7)


def test_multi_choice_rows_store_original_index(store: Store) -> None:
    graded = grade()
    run_id = start(store)
    record(store, run_id, graded, MODEL_IDS)
    rows = {(r["item_id"], r["criterion_index"]): r for r in store.judgments(run_id)}
    orders = []
    for entry in graded:
        row = rows[(entry.item.item_id, 2)]
        order = json.loads(row["shuffle_order_json"])
        orders.append(order)
        assert sorted(order) == [0, 1, 2, 3]
        assert order == list(entry.results[2].task.option_order)
        # The judge preferred the option shown second: stored is its ORIGINAL index.
        assert row["selected_index"] == order[1]
        assert row["selected_label"] == DEPTH.options[order[1]].label
        assert row["verdict"] is None
        stored = json.loads(row["label_probabilities_json"])
        assert stored == pytest.approx(entry.report.report[2].label_probabilities)
        assert list(stored) == [o.label for o in DEPTH.options]  # original option order
        assert stored[row["selected_label"]] == pytest.approx(5 / 8)
    # With this seed at least one shuffle is not the identity, so the mapping is exercised.
    assert any(order != [0, 1, 2, 3] for order in orders)


def test_token_counts_are_recorded(store: Store) -> None:
    graded = grade()
    run_id = start(store)
    record(store, run_id, graded, MODEL_IDS)
    rows = {(r["item_id"], r["criterion_index"]): r for r in store.judgments(run_id)}
    for entry in graded:
        for result in entry.results:
            row = rows[(entry.item.item_id, result.task.criterion_index)]
            assert row["prompt_tokens"] == result.usage.prompt_tokens > 0
            assert row["completion_tokens"] == result.usage.completion_tokens
            assert row["cached_tokens"] == result.usage.cache_read_input_tokens
            assert row["duration_ms"] == pytest.approx(result.seconds * 1000.0)
    items = {i["item_id"]: i for i in store.db["items"].rows}
    for entry in graded:
        item = items[entry.item.item_id]
        usage = entry.report.token_usage
        assert item["prompt_tokens"] == usage.prompt_tokens
        assert item["prompt_tokens"] == sum(r.usage.prompt_tokens for r in entry.results)
        assert item["completion_tokens"] == usage.completion_tokens
        assert item["cached_tokens"] == usage.cache_read_input_tokens


def test_failed_judgment_is_an_error_row_without_verdict(store: Store) -> None:
    engine = ScriptedEngine(model_id="scripted-judge", policy=policy)
    # Requests arrive item-major then criterion: fail item "b" on the positive and the
    # multi-choice criterion; its negative criterion is judged normally.
    engine.enqueue_scores(
        lp(0.7, 0.2, 0.1), lp(0.7, 0.2, 0.1), lp(0.1, 0.6, 0.2, 0.1),
        "infrastructure: context overflow", lp(0.2, 0.7, 0.1), "unknown: engine crashed",
    )
    graded = grade(engine)
    run_id = start(store)
    record(store, run_id, graded, MODEL_IDS)
    rows = {(r["item_id"], r["criterion_index"]): r for r in store.judgments(run_id)}

    binary = rows[("b", 0)]
    assert binary["error"] == "infrastructure: context overflow"
    assert binary["verdict"] is None  # the report's conservative UNMET is not stored as a verdict
    assert graded[1].report.report[0].final_verdict is not None
    assert binary["label_probabilities_json"] is None
    assert binary["label_logprobs_json"] is None and binary["off_label_mass"] is None

    choice = rows[("b", 2)]
    assert choice["error"] == "unknown: engine crashed"
    assert choice["selected_index"] is None and choice["selected_label"] is None
    assert choice["label_probabilities_json"] is None
    assert choice["label_logprobs_json"] is None and choice["off_label_mass"] is None

    ok = rows[("b", 1)]
    assert ok["error"] is None and ok["verdict"] == "UNMET"

    item = store.db["items"].get((run_id, "b"))
    assert item["error"] is None  # not every judgment failed
    assert item["score"] == pytest.approx(graded[1].report.score)
    # Conservative: the failed positive criterion counts as UNMET, the failed multi-choice as
    # its worst case, so only the (UNMET) negative criterion was judged: score 0.
    assert item["score"] == pytest.approx(0.0)


def test_item_whose_judgments_all_failed(store: Store) -> None:
    engine = ScriptedEngine(model_id="scripted-judge")  # no policy: every request fails
    graded = grade(engine, ids=("a",))
    run_id = start(store)
    record(store, run_id, graded, MODEL_IDS)
    item = store.db["items"].get((run_id, "a"))
    assert item["score"] is None
    assert item["error"].startswith("all 3 judgments failed")
    rows = store.judgments(run_id)
    assert len(rows) == 3
    assert all(r["error"].startswith("unknown:") for r in rows)
    assert all(r["verdict"] is None and r["selected_index"] is None for r in rows)


def test_recording_twice_replaces(store: Store) -> None:
    run_id = start(store)
    record(store, run_id, grade(), MODEL_IDS)
    engine = ScriptedEngine(
        model_id="scripted-judge", policy=lambda r: lp(0.1, 0.8, 0.1) if len(r.labels) == 3 else policy(r)
    )
    record(store, run_id, grade(engine), MODEL_IDS)
    rows = store.judgments(run_id)
    assert len(rows) == 3 * len(RUBRIC)
    assert store.db["items"].count_where("run_id = ?", [run_id]) == 3
    assert {r["verdict"] for r in rows if r["criterion_index"] in (0, 1)} == {"UNMET"}


def test_start_and_finish_run(store: Store) -> None:
    run_id = start(store, name="nightly")
    assert run_id.startswith("run-")
    run = store.db["runs"].get(run_id)
    assert run["name"] == "nightly"
    assert run["status"] == "running"
    assert run["finished_utc"] is None
    assert run["started_utc"]
    assert json.loads(run["judges_json"]) == [
        {"judge_id": "scripted", "model": "scripted", "model_id": "scripted-judge"}
    ]
    assert json.loads(run["grader_json"]) == {"mode": "score", "seed": 3}
    assert [c["name"] for c in json.loads(run["rubric_json"])] == [c.name for c in RUBRIC]
    assert run["data_path"] == "subs.jsonl"
    assert run["package_version"]

    store.finish_run(run_id)
    run = store.db["runs"].get(run_id)
    assert run["status"] == "finished"
    assert run["finished_utc"] is not None and run["finished_utc"] >= run["started_utc"]

    failed = start(store)
    assert store.db["runs"].get(failed)["name"] == failed  # unnamed runs are named by their id
    store.finish_run(failed, status="failed")
    assert store.db["runs"].get(failed)["status"] == "failed"


def test_two_runs_never_mix(store: Store) -> None:
    first = start(store, name="first")
    second = start(store, name="second")
    assert first != second
    record(store, first, grade(), MODEL_IDS)
    record(store, second, grade(ids=("a", "x", "y"))[:2], MODEL_IDS)
    assert len(store.judgments(first)) == 3 * len(RUBRIC)
    assert len(store.judgments(second)) == 2 * len(RUBRIC)
    assert {r["run_id"] for r in store.judgments(first)} == {first}
    assert {r["item_id"] for r in store.judgments(second)} == {"a", "x"}
    assert store.db["items"].count_where("run_id = ?", [first]) == 3
    assert store.db["items"].count_where("run_id = ?", [second]) == 2
    store.finish_run(second)
    assert store.db["runs"].get(first)["status"] == "running"


def test_file_db_persists_across_connections(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    db = open_db(path)
    store = Store(db)
    run_id = start(store)
    record(store, run_id, grade(), MODEL_IDS)
    store.finish_run(run_id)
    db.close()
    reopened = Store(open_db(path))
    assert len(reopened.judgments(run_id)) == 3 * len(RUBRIC)
    assert reopened.db["runs"].get(run_id)["status"] == "finished"


def test_record_is_one_transaction(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    graded = grade()
    run_id = start(store)

    def bad_row(*args: object) -> dict[str, object]:
        return {"run_id": run_id, "no_such_column": 1}

    monkeypatch.setattr(records_module, "_judgment_row", bad_row)
    with pytest.raises(sqlite3.OperationalError):
        record(store, run_id, graded, MODEL_IDS)
    assert store.db["items"].count_where("run_id = ?", [run_id]) == 0


def test_batches_of_items_without_ids_are_not_lost(store: Store) -> None:
    run_id = start(store)
    first = grade(ids=("", "", ""))[:2]
    second = grade(ids=("", "", ""))[2:]
    try:
        record(store, run_id, first, MODEL_IDS)
        record(store, run_id, second, MODEL_IDS)
    except AutorubricError:
        return  # refusing id-less items is an acceptable fix too
    submissions = {i["submission"] for i in store.db["items"].rows_where("run_id = ?", [run_id])}
    assert submissions == set(SUBMISSIONS)
    assert len(store.judgments(run_id)) == 3 * len(RUBRIC)


# ------------------------------------------------------------------------ checkpoints (migration 2)


def test_version_1_database_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    old = sqlite_utils.Database(path)
    old["_migrations"].create({"number": int, "name": str, "applied_utc": str}, pk="number")
    schema_module._migration_1(old)
    old["_migrations"].insert({"number": 1, "name": "runs, items, judgments", "applied_utc": "2026-01-01T00:00:00+00:00"})
    old["runs"].insert({"id": "run-old", "name": "old", "started_utc": "2026-01-01T00:00:00+00:00", "status": "finished"})
    old.close()
    db = open_db(path)
    assert [m["number"] for m in db["_migrations"].rows][:2] == [1, 2]
    assert db["runs"].get("run-old")["content_hash"] is None
    assert "report_json" in {c.name for c in db["items"].columns}


def test_planned_items_keep_their_reports(store: Store) -> None:
    planned = [{"item_id": k, "item_index": i, "submission": s, "ground_truth_json": None}
               for i, (k, s) in enumerate(zip("abc", SUBMISSIONS))]
    run_id = store.start_run(name="r", judges=[], grader={}, rubric=None, data_path=None,
                             content_hash="sha256:v1:00", items=planned)
    assert store.db["runs"].get(run_id)["total_items"] == 3
    assert store.done_item_ids(run_id) == set()
    graded = grade()[:1]
    record(store, run_id, graded, MODEL_IDS, item_extras=[{"report_json": graded[0].report.model_dump_json()}])
    assert store.done_item_ids(run_id) == {"a"}
    store.plan_items(run_id, [{**planned[0], "ground_truth_json": '["MET"]'}])
    row = store.db["items"].get((run_id, "a"))
    assert row["ground_truth_json"] == '["MET"]' and row["report_json"] is not None
    assert [r["item_id"] for r in store.item_rows(run_id)] == ["a", "b", "c"]


def test_find_run_by_name_id_or_latest(store: Store) -> None:
    assert store.find_run() is None
    first = start(store, name="same")
    second = start(store, name="same")
    other = start(store, name="other")
    assert store.find_run("same")["id"] == second
    assert store.find_run(first)["id"] == first
    assert store.find_run()["id"] == other
    assert store.find_run("missing") is None
    assert store.run_names() == ["same", "same", "other"]


def test_finish_run_adds_wall_seconds_and_checks_status(store: Store) -> None:
    run_id = start(store)
    store.finish_run(run_id, "interrupted", wall_seconds=1.5)
    store.update_run(run_id, status="running")
    store.finish_run(run_id, wall_seconds=2.0)
    row = store.db["runs"].get(run_id)
    assert row["status"] == "finished" and row["wall_seconds"] == pytest.approx(3.5)
    with pytest.raises(AutorubricError, match="status"):
        store.finish_run(run_id, "done")


def test_recording_an_item_again_drops_its_old_judgments(store: Store) -> None:
    run_id = start(store)
    record(store, run_id, grade(), MODEL_IDS)
    store.db["judgments"].insert({**store.judgments(run_id)[0], "permutation_index": 7})
    record(store, run_id, grade(), MODEL_IDS)
    assert len(store.judgments(run_id)) == 3 * len(RUBRIC)


def test_the_write_ahead_log_is_cut_back_after_a_large_transaction(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction larger than the limit grows the ``-wal`` file; once checkpointed, the next
    write cuts it back to the limit instead of keeping it at the largest transaction's size."""
    from autorubric_local.store import schema
    from autorubric_local.store.transaction import write_transaction

    monkeypatch.setattr(schema, "WAL_SIZE_LIMIT", 2**20)
    db = schema.open_db(tmp_path / "r.sqlite")
    wal = tmp_path / "r.sqlite-wal"
    db.execute("create table blobs (n integer, body text)")
    with write_transaction(db):  # one transaction of ~8 MB
        db.conn.executemany("insert into blobs values (?, ?)", ((i, "x" * 10_000) for i in range(800)))
    grown = wal.stat().st_size
    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    with write_transaction(db):
        db.execute("insert into blobs values (-1, 'y')")
    kept = wal.stat().st_size
    db.close()
    assert grown > 6 * 2**20 and kept <= 2**20
