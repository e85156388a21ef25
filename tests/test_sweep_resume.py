"""Sweeps on the runner's path: chunks of whole items committed one by one, resume after a kill
(SIGKILL) to the same rows as an uninterrupted sweep, failed chunks recorded per rotation, a
changed sweep refused, one writer per sweep, and the CLI's ``--run`` / ``--name`` /
``--chunk-judgments``.

The kill test runs tests/sweep_crash_worker.py, which blocks (holding the sweep) after a known
number of committed chunks, so the kill lands between chunks every time."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from click.testing import CliRunner

from autorubric_local.bias import run_sweep
from autorubric_local.bias import stored as stored_module
from autorubric_local.bias import sweep as sweep_module
from autorubric_local.bias.executors import LocalSweepExecutor
from autorubric_local.bias.stored import run_stored_sweep
from autorubric_local.bias.sweep import plan_sweep, sweep_chunks
from autorubric_local.bias.unrelated import sample_unrelated_options
from autorubric_local.cli import main
from autorubric_local.core.errors import InputError, RunLockedError
from autorubric_local.core.types import CriterionOption
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import EvalInterruptedError
from autorubric_local.runner.config import EvalConfig
from autorubric_local.store import Store
from autorubric_local.store.leases import LeaseOwner

sys.path.insert(0, str(Path(__file__).parent))
import sweep_crash_worker as worker

WORKER = Path(__file__).parent / "sweep_crash_worker.py"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PER_ITEM = worker.ROTATIONS_PER_ITEM


class CountingEngine(ScriptedEngine):
    """Scripted engine counting ``score`` calls; ``fail_calls`` (1-based) raise RuntimeError."""

    def __init__(self, model_id: str = "a", fail_calls: Sequence[int] = ()) -> None:
        super().__init__(model_id=model_id, policy=worker.hashed(model_id))
        self.calls = 0
        self.fail_calls = set(fail_calls)

    def score(self, requests: Sequence[ScoreRequest]) -> list[Any]:
        self.calls += 1
        if self.calls in self.fail_calls:
            raise RuntimeError("CUDA out of memory")
        return super().score(requests)


def spec(engine: ScriptedEngine) -> JudgeSpec:
    return JudgeSpec(LLMConfig(model="scripted", engine=engine), engine.model_id)


def config(db_path: Path, name: str = "s", **kwargs: Any) -> EvalConfig:
    return EvalConfig(db_path=db_path, experiment_name=name, chunk_judgments=PER_ITEM, show_progress=False, **kwargs)


def table(db_path: Path, name: str, drop: Sequence[str] = ("sweep_id",)) -> list[tuple[Any, ...]]:
    """Every row of a sweep table without ``drop`` columns, in key order."""
    db = sqlite_utils.Database(db_path)
    columns = [c.name for c in db[name].columns if c.name not in drop]
    order = ", ".join(c for c in ("judge_id", "item_id", "criterion_index", "variant", "rotation") if c in columns)
    return [tuple(row) for row in db.execute(f"select {', '.join(columns)} from {name} order by {order}").fetchall()]


# ------------------------------------------------------------------------------ chunks


def test_chunks_hold_whole_items_and_share_each_items_prefix() -> None:
    engine = CountingEngine()
    planned = plan_sweep(worker.ITEMS, "a", engine.format_chat, worker.SETTINGS,
                         sample_unrelated_options(worker.ITEMS, worker.SETTINGS.seed))
    assert [len(c) for c in sweep_chunks(planned, 2 * PER_ITEM + 1)] == [2 * PER_ITEM, 2 * PER_ITEM, 2 * PER_ITEM]
    assert [len(c) for c in sweep_chunks(planned, 5)] == [PER_ITEM] * 6  # an item larger than a chunk: alone
    for chunk in sweep_chunks(planned, 40):
        assert all(task.item_index == chunk[0][0].item_index for task, _ in chunk[:PER_ITEM])
    run_sweep(worker.ITEMS, [spec(engine)], worker.SETTINGS, chunk_judgments=2 * PER_ITEM)
    assert engine.calls == 3
    prefixes = [{r.prefix for r in engine.history[k * PER_ITEM:(k + 1) * PER_ITEM]} for k in range(6)]
    assert all(len(p) == 1 for p in prefixes) and len(set.union(*prefixes)) == 6


def test_stored_sweep_equals_the_in_memory_sweep(tmp_path: Path) -> None:
    db_path = tmp_path / "r.sqlite"
    chunks: list[tuple[str, int, int, int]] = []
    stored = run_stored_sweep(worker.ITEMS, worker.judges(), worker.SETTINGS, config(db_path),
                              on_chunk=lambda c: chunks.append((c.judge_id, c.chunk_index, c.rotations,
                                                                c.completed_items)))
    memory = run_sweep(worker.ITEMS, worker.judges(), worker.SETTINGS)
    assert stored.result.aggregates == memory.aggregates
    assert [c.scores for c in stored.result.cells] == [c.scores for c in memory.cells]
    assert chunks == [(j, k, PER_ITEM, k + 1) for j in ("a", "b") for k in range(6)]
    db = sqlite_utils.Database(db_path)
    (row,) = db["sweeps"].rows
    assert (row["name"], row["status"], row["total_items"]) == ("s", "finished", 6)
    assert row["content_hash"].startswith("sha256:v1:") and row["wall_seconds"] > 0
    assert db["sweep_judgments"].count == 2 * 6 * PER_ITEM and db["sweep_scores"].count == 2 * 6 * 4
    assert db["sweep_aggregates"].count == 2 * 4 and db["sweep_leases"].count == 0  # lease given back


# ------------------------------------------------------------------------- kill and resume


def start_worker(db_path: Path, name: str, hold_after: int) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, str(WORKER), str(db_path), name, str(hold_after)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_sigkill_mid_sweep_then_resume_gives_the_uninterrupted_rows(tmp_path: Path) -> None:
    reference = tmp_path / "reference.sqlite"
    worker.sweep(str(reference), "crashy")
    db_path = tmp_path / "crashed.sqlite"
    process = start_worker(db_path, "crashy", hold_after=3)  # judge a, items e0-e2 committed
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line.strip())
        if line.strip() == "holding":
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL, (lines, process.stderr.read() if process.stderr else "")
    assert lines == ["committed a 0", "committed a 1", "committed a 2", "holding"]
    db = sqlite_utils.Database(db_path)
    assert db["sweep_judgments"].count == 3 * PER_ITEM  # whole chunks only
    assert db["sweep_aggregates"].count == 0
    (row,) = db["sweeps"].rows
    assert row["status"] == "running" and db["sweep_leases"].count == 1  # left by the killed writer

    resumed = subprocess.run([sys.executable, str(WORKER), str(db_path), "crashy", "0"], capture_output=True,
                             text=True, timeout=120, check=False, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert resumed.returncode == 0, resumed.stderr
    # The resume starts where the kill stopped: judge a's last 3 items, then all of judge b's.
    assert resumed.stdout.split() == " ".join(
        [f"committed a {k}" for k in range(3)] + [f"committed b {k}" for k in range(6)] + ["done"]).split()
    assert "taking over a stale lease" in resumed.stderr
    assert sqlite_utils.Database(db_path)["sweeps"].count == 1
    for name in ("sweep_scores", "sweep_aggregates"):
        assert table(db_path, name) == table(reference, name), name
        assert len(table(db_path, name)) == {"sweep_scores": 2 * 6 * 4, "sweep_aggregates": 2 * 4}[name]
    timings = ("sweep_id", "duration_ms")
    assert table(db_path, "sweep_judgments", timings) == table(reference, "sweep_judgments", timings)
    (row,) = sqlite_utils.Database(db_path)["sweeps"].rows
    assert row["status"] == "finished" and sqlite_utils.Database(db_path)["sweep_leases"].count == 0


# ---------------------------------------------------------------------- failed chunks


def test_an_engine_error_fails_only_its_chunk_and_a_resume_judges_it_again(tmp_path: Path) -> None:
    db_path = tmp_path / "r.sqlite"
    engine = CountingEngine(fail_calls=[2])  # the chunk of item e1
    stored = run_stored_sweep(worker.ITEMS, [spec(engine)], worker.SETTINGS, config(db_path))
    assert engine.calls == 6
    db = sqlite_utils.Database(db_path)
    rows = list(db["sweep_judgments"].rows)
    failed = [r for r in rows if r["error"] is not None]
    assert {r["item_id"] for r in failed} == {"e1"} and len(failed) == PER_ITEM
    assert {r["error"] for r in failed} == {
        "infrastructure: engine score call failed: RuntimeError: CUDA out of memory"}
    assert all(r["chosen_position"] is None for r in failed)
    assert all(r["chosen_position"] is not None for r in rows if r["item_id"] != "e1")
    scores = {(r["item_id"], r["criterion_index"], r["variant"]): r for r in db["sweep_scores"].rows}
    assert (scores[("e1", 1, "base")]["n_rotations"], scores[("e1", 1, "base")]["n_dropped"]) == (0, 4)
    assert (scores[("e0", 1, "base")]["n_rotations"], scores[("e0", 1, "base")]["n_dropped"]) == (4, 0)
    dropped = {(a.criterion_name, a.variant.value): a.n_dropped for a in stored.result.aggregates}
    assert dropped == {("depth", "base"): 4, ("depth", "unrelated"): 5, ("tone", "base"): 3,
                       ("tone", "unrelated"): 4}
    assert [a.n_items for a in stored.result.aggregates] == [6] * 4
    assert next(iter(db["sweeps"].rows))["status"] == "finished"

    retry = CountingEngine()
    again = run_stored_sweep(worker.ITEMS, [spec(retry)], worker.SETTINGS, config(db_path))
    assert retry.calls == 1 and len(retry.history) == PER_ITEM  # only e1 again
    assert again.resumed_rotations == 6 * PER_ITEM
    assert db.execute("select count(*) from sweep_judgments where error is not null").fetchone()[0] == 0
    assert again.result.aggregates == run_sweep(worker.ITEMS, [spec(CountingEngine())], worker.SETTINGS).aggregates


def test_a_non_engine_error_of_a_chunk_is_recorded_on_its_rotations(tmp_path: Path) -> None:
    class Refusing(CountingEngine):
        def score(self, requests: Sequence[ScoreRequest]) -> list[Any]:
            self.calls += 1
            if self.calls == 1:
                raise InputError("label 'Vague' cannot be tokenized")
            return ScriptedEngine.score(self, requests)

    stored = run_stored_sweep(worker.ITEMS[:2], [spec(Refusing())], worker.SETTINGS, config(tmp_path / "r.sqlite"))
    errors = [r.error for cell in stored.result.cells for r in cell.results]
    assert errors == ["unknown: sweep chunk failed: InputError: label 'Vague' cannot be tokenized"] * PER_ITEM \
        + [None] * PER_ITEM


# ------------------------------------------------------------------------- refusals


def test_a_changed_rubric_or_setting_is_refused_naming_what_changed(tmp_path: Path) -> None:
    db_path = tmp_path / "r.sqlite"
    run_stored_sweep(worker.ITEMS[:2], worker.judges(), worker.SETTINGS, config(db_path))
    depth = worker.RUBRIC[1].model_copy(update={"options": [CriterionOption(label="Shallow", value=0.0),
                                                            *worker.RUBRIC[1].options[1:]]})
    changed = [dataclasses.replace(item, rubric=(worker.RUBRIC[0], depth, worker.RUBRIC[2]))
               for item in worker.ITEMS[:2]]
    with pytest.raises(InputError, match=r"sweep 's' \(sweep-[^)]+\) cannot be resumed: the rubric changed "
                                         r"\(.*\)\. Give a new sweep name \(--run\)"):
        run_stored_sweep(changed, worker.judges(), worker.SETTINGS, config(db_path))
    with pytest.raises(InputError, match=r"cannot be resumed: settings changed: seed \(3 -> 4\)"):
        run_stored_sweep(worker.ITEMS[:2], worker.judges(), dataclasses.replace(worker.SETTINGS, seed=4),
                         config(db_path))
    with pytest.raises(InputError, match=r"the data has 3 items, the sweep has 2"):
        run_stored_sweep(worker.ITEMS[:3], worker.judges(), worker.SETTINGS, config(db_path))
    db = sqlite_utils.Database(db_path)
    assert db["sweeps"].count == 1 and db["sweep_leases"].count == 0  # refused: nothing written, lease back
    other = run_stored_sweep(changed, worker.judges(), worker.SETTINGS, config(db_path, resume=False))
    assert db["sweeps"].count == 2 and other.resumed_rotations == 0


def test_a_second_live_writer_is_refused(tmp_path: Path) -> None:
    db_path = tmp_path / "r.sqlite"
    run_stored_sweep(worker.ITEMS[:1], worker.judges(), worker.SETTINGS, config(db_path))
    store = Store.open(db_path)
    sweep_id = store.find_sweep("s")["id"]  # type: ignore[index]
    live = LeaseOwner.for_this_process()  # another writer in a live process (this one)
    assert store.acquire_sweep_lease(sweep_id, live) is None
    with pytest.raises(RunLockedError, match=r"sweep 's' \(sweep-.*\) is being written by another process: pid "):
        run_stored_sweep(worker.ITEMS[:1], worker.judges(), worker.SETTINGS, config(db_path))
    assert store.sweep_lease_holder(sweep_id).owner == live.owner  # type: ignore[union-attr]
    store.close()


def test_a_locked_or_changed_sweep_is_refused_before_any_judge_loads(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """As a run is: a stored sweep's lease and content are checked before its judges load, so a
    refusal starts no model and no Ray actor; a sweep that can resume then loads them once."""
    db_path = tmp_path / "r.sqlite"

    def interrupt(chunk: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_stored_sweep(worker.ITEMS[:2], worker.judges(), worker.SETTINGS, config(db_path), on_chunk=interrupt)
    loads: list[int] = []
    load = LocalSweepExecutor.load
    monkeypatch.setattr(LocalSweepExecutor, "load", lambda self, *a, **k: loads.append(1) or load(self, *a, **k))
    with pytest.raises(InputError, match=r"settings changed: seed \(3 -> 4\)"):
        run_stored_sweep(worker.ITEMS[:2], worker.judges(), dataclasses.replace(worker.SETTINGS, seed=4),
                         config(db_path))
    store = Store.open(db_path)
    sweep_id = store.find_sweep("s")["id"]  # type: ignore[index]
    live = LeaseOwner.for_this_process()
    assert store.acquire_sweep_lease(sweep_id, live) is None
    with pytest.raises(RunLockedError, match=r"is being written by another process"):
        run_stored_sweep(worker.ITEMS[:2], worker.judges(), worker.SETTINGS, config(db_path))
    assert loads == []
    assert store.release_sweep_lease(sweep_id, live)
    store.close()
    resumed = run_stored_sweep(worker.ITEMS[:2], worker.judges(), worker.SETTINGS, config(db_path))
    assert loads == [1] and resumed.resumed_rotations == PER_ITEM


def test_a_writer_that_lost_the_lease_commits_nothing_more(tmp_path: Path) -> None:
    db_path = tmp_path / "r.sqlite"
    thief = LeaseOwner.for_this_process()

    def steal(chunk: Any) -> None:
        if chunk.chunk_index == 0:
            other = Store.open(db_path)
            other.db["sweep_leases"].update(chunk.sweep_id, {"owner": thief.owner})
            other.close()

    with pytest.raises(RunLockedError, match=r"lost the sweep's lease to another process"):
        run_stored_sweep(worker.ITEMS[:3], worker.judges()[:1], worker.SETTINGS, config(db_path), on_chunk=steal)
    db = sqlite_utils.Database(db_path)
    assert db["sweep_judgments"].count == PER_ITEM  # the first chunk only
    (row,) = db["sweeps"].rows
    assert row["status"] == "running" and next(iter(db["sweep_leases"].rows))["owner"] == thief.owner


class ReplayingSweepExecutor(LocalSweepExecutor):
    """Judges like the local executor, but hands each judge's chunk 0 back a second time, with
    every rotation failed (as a buggy executor might)."""

    def judged_chunks(self, judge_index: int, chunks: Sequence[Sequence[Any]],
                      stop: threading.Event) -> Iterator[tuple[int, list[JudgmentResult]]]:
        for index, results in super().judged_chunks(judge_index, chunks, stop):
            yield index, results
            if index == 0:
                yield index, [dataclasses.replace(r, error="engine: replayed") for r in results]


def test_a_chunk_handed_back_twice_is_committed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """As a run's: the repeat is dropped with a warning, so its rotations are not rewritten and
    its items not counted twice."""
    db_path = tmp_path / "r.sqlite"
    monkeypatch.setattr(stored_module, "sweep_executor", lambda config: ReplayingSweepExecutor())
    chunks: list[tuple[str, int, int, int]] = []
    with caplog.at_level(logging.WARNING, logger="autorubric_local.runner.job"):
        stored = run_stored_sweep(worker.ITEMS[:3], worker.judges(), worker.SETTINGS, config(db_path),
                                  on_chunk=lambda c: chunks.append((c.judge_id, c.chunk_index, c.failed_rotations,
                                                                    c.completed_items)))
    assert chunks == [(j, k, 0, k + 1) for j in ("a", "b") for k in range(3)]
    assert "sweep 's', judge 'a': chunk 0 was handed back twice; kept the first" in caplog.text
    assert "sweep 's', judge 'b': chunk 0 was handed back twice; kept the first" in caplog.text
    db = sqlite_utils.Database(db_path)
    assert db["sweep_judgments"].count == 2 * 3 * PER_ITEM
    assert db.execute("select count(*) from sweep_judgments where error is not null").fetchone()[0] == 0
    memory = run_sweep(worker.ITEMS[:3], worker.judges(), worker.SETTINGS)
    assert stored.result.aggregates == memory.aggregates


def test_a_sweep_stops_on_request_after_the_chunk_in_flight_and_resumes(tmp_path: Path) -> None:
    """As :meth:`EvalRunner.stop` stops a run: setting ``stop`` (here from ``on_chunk``, after
    judge 'a''s first chunk) starts no new chunk, marks the sweep interrupted and keeps what
    was committed; running it again finishes it with the uninterrupted rows."""
    db_path = tmp_path / "r.sqlite"
    stop = threading.Event()
    chunks: list[tuple[str, int]] = []

    def stop_after_first(chunk: Any) -> None:
        chunks.append((chunk.judge_id, chunk.chunk_index))
        stop.set()

    with pytest.raises(EvalInterruptedError, match=r"sweep 's' stopped after 1 of 3 items of judge 'a'; run it again"):
        run_stored_sweep(worker.ITEMS[:3], worker.judges(), worker.SETTINGS, config(db_path), on_chunk=stop_after_first,
                         stop=stop)
    assert chunks == [("a", 0)]
    db = sqlite_utils.Database(db_path)
    (row,) = db["sweeps"].rows
    assert row["status"] == "interrupted" and db["sweep_leases"].count == 0
    assert db["sweep_judgments"].count == PER_ITEM
    resumed = run_stored_sweep(worker.ITEMS[:3], worker.judges(), worker.SETTINGS, config(db_path))
    assert resumed.resumed_rotations == PER_ITEM
    assert next(iter(db["sweeps"].rows))["status"] == "finished"
    assert resumed.result.aggregates == run_sweep(worker.ITEMS[:3], worker.judges(), worker.SETTINGS).aggregates


# ------------------------------------------------------------------------------- CLI


@pytest.fixture
def scripted_judge(monkeypatch: pytest.MonkeyPatch) -> list[CountingEngine]:
    """Every judge the CLI loads is a scripted engine (no model), recorded in the list."""
    engines: list[CountingEngine] = []

    def load(llm_config: LLMConfig) -> CountingEngine:
        engines.append(CountingEngine(model_id=llm_config.model))
        return engines[-1]

    monkeypatch.setattr(sweep_module, "load_engine", load)
    return engines


def sweep_cli(*args: str | Path) -> Any:
    files = (EXAMPLES / "battery_rubric.yaml", EXAMPLES / "battery_submissions.jsonl")
    return CliRunner().invoke(main, ["sweep", *map(str, files), *map(str, args)], catch_exceptions=False)


def test_cli_run_chunks_and_resume(tmp_path: Path, scripted_judge: list[CountingEngine]) -> None:
    db_path = tmp_path / "r.sqlite"
    first = sweep_cli("--run", "bias-v1", "--db", db_path, "--chunk-judgments", "1", "--limit", "2", "--json")
    assert first.exit_code == 0, first.output
    assert scripted_judge[0].calls == 2  # one chunk per item
    assert "judge smollm2-135m-instruct: chunk 1: 7 rotations committed (1/2 items)" in first.stderr
    payload = json.loads(first.stdout)
    (row,) = sqlite_utils.Database(db_path)["sweeps"].rows
    assert (row["name"], row["id"]) == ("bias-v1", payload["sweep_id"])
    again = sweep_cli("--run", "bias-v1", "--db", db_path, "--limit", "2", "--json")
    assert again.exit_code == 0, again.output
    assert scripted_judge[1].calls == 0 and "14 rotations from the checkpoint" in again.stderr
    assert json.loads(again.stdout)["results"] == payload["results"]
    refused = sweep_cli("--run", "bias-v1", "--db", db_path, "--limit", "2", "--seed", "9")
    assert refused.exit_code == 1 and "cannot be resumed: settings changed: seed (0 -> 9)" in refused.output
    assert sweep_cli("--run", "bad name", "--db", db_path).exit_code == 2


def test_cli_name_is_a_deprecated_alias_of_run(tmp_path: Path, scripted_judge: list[CountingEngine]) -> None:
    db_path = tmp_path / "r.sqlite"
    result = sweep_cli("--name", "old style name", "--db", db_path, "--limit", "1")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == "note: --name is deprecated; use --run NAME"
    assert next(iter(sqlite_utils.Database(db_path)["sweeps"].rows))["name"] == "old style name"
    assert "--name" not in CliRunner().invoke(main, ["sweep", "--help"]).output
    both = sweep_cli("--name", "x", "--run", "y", "--db", db_path)
    assert both.exit_code == 2 and "--name is a deprecated alias of --run" in both.output
