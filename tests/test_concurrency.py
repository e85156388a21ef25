"""Two writers on one database: concurrent opens of a new file (each migration applied exactly
once, nobody fails with "database is locked"), one writer per run (a second EvalRunner or
process is refused before grading anything), takeover of a dead writer's lease, and the lease
heartbeat. Runs use the ScriptedEngine of tests/crash_worker.py; processes are started all at
once through its ``CRASH_WORKER_GO`` barrier."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from autorubric_local.core.errors import InputError, RunLockedError
from autorubric_local.engine import ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import EvalConfig, EvalInterruptedError, EvalRunner
from autorubric_local.runner.job import SWEEP_LEASE, LeaseHeartbeat
from autorubric_local.store import MIGRATIONS, Store
from autorubric_local.store.leases import LeaseOwner
from autorubric_local.store.provenance import utc_now

sys.path.insert(0, str(Path(__file__).parent))
import crash_worker

WORKER = Path(__file__).parent / "crash_worker.py"
N_ITEMS = 40
CHUNK_JUDGMENTS = 9  # 3 items of 3 criteria per chunk
SAFETY_S = 120  # a limit against hangs, never a measured time

OPEN_DB_WORKER = """
import sys, time
from pathlib import Path
import autorubric_local.store.schema as schema

db_path, log, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])

def logged(number, migrate):
    def apply(db):
        migrate(db)
        with open(log, "a") as handle:  # one short append per call: atomic with O_APPEND
            handle.write(f"{number}\\n")
    return apply

schema.MIGRATIONS = tuple((n, name, logged(n, m)) for n, name, m in schema.MIGRATIONS)
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
schema.open_db(db_path).close()
print("opened", flush=True)
"""


def start_together(commands: list[list[str]], go: Path, env: dict[str, str] | None = None) -> list[subprocess.Popen[str]]:
    """Start every command, wait until each printed ``ready``, then let them all go at once."""
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
        for command in commands
    ]
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", process.stderr.read() if process.stderr else ""
    go.touch()
    return processes


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=SAFETY_S)
    return process.returncode, out, err


def test_concurrent_opens_of_a_new_file_apply_each_migration_once(tmp_path: Path) -> None:
    db_path, log, go = tmp_path / "results.sqlite", tmp_path / "applied.log", tmp_path / "go"
    command = [sys.executable, "-c", OPEN_DB_WORKER, str(db_path), str(log), str(go)]
    outcomes = [finish(p) for p in start_together([command] * 4, go)]
    assert all(rc == 0 and out.strip() == "opened" for rc, out, _ in outcomes), [err for _, _, err in outcomes]
    numbers = [number for number, _, _ in MIGRATIONS]
    assert sorted(int(line) for line in log.read_text().split()) == numbers  # each applied exactly once
    db = sqlite_utils.Database(db_path)
    assert [row["number"] for row in db["_migrations"].rows] == numbers
    assert db.journal_mode == "wal"


# ---------------------------------------------------------------------------------- runners


def config(db_path: Path, **kwargs: Any) -> EvalConfig:
    return EvalConfig(db_path=db_path, experiment_name="shared", chunk_judgments=CHUNK_JUDGMENTS, chunk_seconds=None,
                      show_progress=False, **kwargs)


def recording_grader() -> tuple[CriterionGrader, ScriptedEngine]:
    engine = ScriptedEngine(policy=crash_worker.make_policy(0.0))
    return CriterionGrader(LLMConfig(model="scripted", engine=engine), seed=11), engine


def assert_every_judgment_once(db_path: Path) -> None:
    db = sqlite_utils.Database(db_path)
    keys = db.execute("select item_id, criterion_index, judge_id, permutation_index from judgments").fetchall()
    assert len(keys) == N_ITEMS * 3 and len(set(keys)) == len(keys)
    assert db["runs"].count == 1
    assert db["run_leases"].count == 0  # released at the end


def test_second_runner_on_a_leased_run_is_refused_and_grades_nothing(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    intruder, intruder_engine = recording_grader()
    refusals: list[RunLockedError] = []

    def on_chunk(chunk: Any) -> None:
        if chunk.chunk_index == 0:
            with pytest.raises(RunLockedError) as refused:
                EvalRunner(crash_worker.build_dataset(N_ITEMS), intruder, config(db_path)).run_sync()
            refusals.append(refused.value)

    result = EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(), config(db_path),
                        on_chunk=on_chunk).run_sync()
    assert len(refusals) == 1
    message = str(refusals[0])
    for fragment in ("'shared'", result.run_id, f"pid {os.getpid()}", f"host {socket.gethostname()}",
                     "last heartbeat"):
        assert fragment in message
    assert intruder_engine.history == []  # refused before grading anything
    assert result.successful_items == N_ITEMS and result.status == "finished"
    assert_every_judgment_once(db_path)


def test_a_run_whose_holder_was_killed_is_resumed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db_path = tmp_path / "results.sqlite"
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), str(db_path), "shared", str(N_ITEMS), str(CHUNK_JUDGMENTS), "0.02"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert worker.stdout is not None
    for line in worker.stdout:
        if line.startswith("committed"):
            worker.kill()
            break
    worker.wait(timeout=SAFETY_S)
    store = Store.open(db_path)
    run = store.find_run("shared")
    assert run is not None
    holder = store.lease_holder(run["id"])
    store.close()
    assert holder is not None and holder.pid == worker.pid  # the killed writer's lease is left behind

    caplog.set_level(logging.WARNING, logger="autorubric_local.runner.job")
    result = EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(), config(db_path)).run_sync()
    assert result.resumed_items >= 3 and result.successful_items == N_ITEMS
    assert f"taking over a stale lease from pid {worker.pid}" in caplog.text
    assert "has ended" in caplog.text
    assert_every_judgment_once(db_path)


@pytest.mark.parametrize(
    ("pid", "host", "heartbeat_utc", "reason"),
    [
        ("ended", "this", "now", "has ended"),
        ("self", "elsewhere", "2000-01-01T00:00:00+00:00", "heartbeat is"),
    ],
)
def test_a_fake_stale_lease_is_taken_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, pid: str, host: str, heartbeat_utc: str, reason: str
) -> None:
    db_path = tmp_path / "results.sqlite"
    cfg = config(db_path)
    runner = EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(), cfg,
                        on_chunk=lambda chunk: runner.stop())
    with pytest.raises(EvalInterruptedError):
        runner.run_sync()
    store = Store.open(db_path)
    run_id = store.find_run("shared")["id"]  # type: ignore[index]
    if pid == "ended":
        child = subprocess.Popen([sys.executable, "-c", "pass"])
        child.wait(timeout=SAFETY_S)
        fake_pid = child.pid
    else:
        fake_pid = os.getpid()
    fake_host = socket.gethostname() if host == "this" else "another-host"
    beat = utc_now() if heartbeat_utc == "now" else heartbeat_utc
    store.db["run_leases"].insert({"run_id": run_id, "owner": f"{fake_host}:{fake_pid}:0", "pid": fake_pid,
                                   "host": fake_host, "acquired_utc": beat, "heartbeat_utc": beat})
    store.close()

    caplog.set_level(logging.WARNING, logger="autorubric_local.runner.job")
    result = EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(), cfg).run_sync()
    assert result.resumed_items == 3 and result.successful_items == N_ITEMS
    assert f"taking over a stale lease from pid {fake_pid} on host {fake_host}" in caplog.text
    assert reason in caplog.text
    assert_every_judgment_once(db_path)


def test_a_live_fake_lease_refuses_the_resume(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    runner = EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(), config(db_path),
                        on_chunk=lambda chunk: runner.stop())
    with pytest.raises(EvalInterruptedError):
        runner.run_sync()
    store = Store.open(db_path)
    run = store.find_run("shared")
    assert run is not None
    owner = LeaseOwner("another-host:4242:0", 4242, "another-host")
    store.acquire_run_lease(run["id"], owner)
    store.close()
    grader, engine = recording_grader()
    with pytest.raises(RunLockedError, match="pid 4242 on host another-host"):
        EvalRunner(crash_worker.build_dataset(N_ITEMS), grader, config(db_path)).run_sync()
    assert engine.history == []
    store = Store.open(db_path)
    after = store.find_run(run["id"])
    assert after is not None and after["status"] == "interrupted"  # the refused runner changed nothing
    assert store.lease_holder(run["id"]).owner == owner.owner  # type: ignore[union-attr]
    store.close()


@pytest.mark.parametrize("second_starts", ["together", "after_a_chunk"])
def test_two_processes_on_one_run_exactly_one_grades(tmp_path: Path, second_starts: str) -> None:
    """Whoever gets the run commits a chunk and then waits (``CRASH_WORKER_HOLD``), holding the
    lease, until the other process has been refused; so the outcome does not depend on timing."""
    db_path, go, hold = tmp_path / "results.sqlite", tmp_path / "go", tmp_path / "hold"
    command = [sys.executable, str(WORKER), str(db_path), "shared", str(N_ITEMS), str(CHUNK_JUDGMENTS), "0"]
    env = {"CRASH_WORKER_GO": str(go), "CRASH_WORKER_HOLD": str(hold)}
    if second_starts == "together":
        processes = start_together([command, command], go, env)
    else:
        (first,) = start_together([command], go, env)
        assert first.stdout is not None
        line = first.stdout.readline()  # its first chunk is committed: it holds the run
        assert line.startswith("committed"), first.stderr.read() if first.stderr else ""
        second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, "OMP_NUM_THREADS": "1", "CRASH_WORKER_HOLD": str(hold)})
        processes = [first, second]
    deadline = time.monotonic() + SAFETY_S
    while all(p.poll() is None for p in processes) and time.monotonic() < deadline:
        time.sleep(0.01)  # until one of them has ended: the refused one
    hold.touch()
    outcomes = [finish(p) for p in processes]
    graded = [o for o in outcomes if o[0] == 0]
    refused = [o for o in outcomes if o[0] == crash_worker.LOCKED_EXIT]
    assert len(graded) == 1 and len(refused) == 1, outcomes
    assert graded[0][1].strip().endswith("done")
    assert "committed" not in refused[0][1]  # nothing graded by the refused process
    assert "locked: run 'shared'" in refused[0][1] and "being graded by another process" in refused[0][1]
    assert_every_judgment_once(db_path)


# -------------------------------------------------------------------------------- heartbeat


def test_heartbeat_thread_renews_the_lease(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    store = Store.open(db_path)
    owner = LeaseOwner.for_this_process()
    run_id = store.start_run(name="beat", judges=[], grader={}, rubric=None, data_path=None, lease=owner)
    store.db.execute("update run_leases set heartbeat_utc = '2000-01-01T00:00:00+00:00'")
    store.db.conn.commit()
    deadline = time.monotonic() + SAFETY_S
    with LeaseHeartbeat(db_path, run_id, owner, interval_seconds=0.01) as heartbeat:
        while heartbeat.beats == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert heartbeat.beats >= 1
    holder = store.lease_holder(run_id)
    assert holder is not None and holder.heartbeat_utc > "2000-01-01T00:00:00+00:00" and holder.stale_reason(60.0) is None
    store.close()


def test_heartbeat_thread_stops_when_the_lease_is_lost(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db_path = tmp_path / "results.sqlite"
    store = Store.open(db_path)
    run_id = store.start_run(name="beat", judges=[], grader={}, rubric=None, data_path=None,
                             lease=LeaseOwner.for_this_process())
    caplog.set_level(logging.WARNING, logger="autorubric_local.runner.job")
    heartbeat = LeaseHeartbeat(db_path, run_id, LeaseOwner.for_this_process(), interval_seconds=0.01)
    with heartbeat:
        assert heartbeat._thread is not None
        heartbeat._thread.join(timeout=SAFETY_S)
        assert not heartbeat._thread.is_alive()
    assert heartbeat.beats == 0
    assert "no longer holds the run's lease" in caplog.text
    store.close()


def test_the_same_heartbeat_renews_a_sweeps_lease(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    store = Store.open(db_path)
    owner = LeaseOwner.for_this_process()
    sweep_id = store.start_sweep(name="beat", kind="rubric", config={}, judges=[], rubric=None, data_path=None,
                                 lease=owner)
    store.db.execute("update sweep_leases set heartbeat_utc = '2000-01-01T00:00:00+00:00'")
    store.db.conn.commit()
    deadline = time.monotonic() + SAFETY_S
    with LeaseHeartbeat(db_path, sweep_id, owner, interval_seconds=0.01, lease=SWEEP_LEASE) as heartbeat:
        while heartbeat.beats == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert heartbeat.beats >= 1
    holder = store.sweep_lease_holder(sweep_id)
    assert holder is not None and holder.heartbeat_utc > "2000-01-01T00:00:00+00:00" and holder.stale_reason(60.0) is None
    store.close()


def test_in_memory_run_needs_no_heartbeat_thread() -> None:
    with LeaseHeartbeat(":memory:", "run-x", LeaseOwner.for_this_process(), interval_seconds=0.01) as heartbeat:
        assert heartbeat._thread is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"lease_timeout_seconds": 0}, "lease_timeout_seconds"),
        ({"lease_timeout_seconds": float("inf")}, "lease_timeout_seconds"),
        ({"lease_heartbeat_seconds": -1.0}, "lease_heartbeat_seconds"),
        ({"lease_heartbeat_seconds": True}, "lease_heartbeat_seconds"),
        ({"lease_timeout_seconds": 5.0, "lease_heartbeat_seconds": 5.0}, "lease_heartbeat_seconds"),
    ],
)
def test_lease_settings_are_validated(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError, match=f"EvalConfig.{field}"):
        EvalConfig(**kwargs)
