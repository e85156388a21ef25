"""Crash safety: a run killed part-way (SIGKILL) or stopped by Ctrl-C (SIGINT) resumes to the
same results as an uninterrupted run, with no duplicate and no missing judgment.

The run happens in a subprocess (tests/crash_worker.py) that prints a line after each committed
chunk; the parent kills it after a known number of chunks, resumes it, and compares every item
report and judgment row with a reference run of the same dataset and seed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from autorubric_local.runner import (
    EvalConfig,
    EvalInterruptedError,
    EvalRunner,
    load_result,
)

sys.path.insert(0, str(Path(__file__).parent))
import crash_worker

WORKER = Path(__file__).parent / "crash_worker.py"
N_ITEMS = 40
CHUNK_JUDGMENTS = 9  # 3 items of 3 criteria per chunk
JUDGMENT_COLUMNS_COMPARED = ("item_id", "criterion_index", "judge_id", "permutation_index", "verdict",
                             "selected_index", "selected_label", "label_probabilities_json",
                             "shuffle_order_json", "error")


def run_reference(db_path: Path) -> None:
    config = EvalConfig(db_path=db_path, experiment_name="reference", chunk_judgments=CHUNK_JUDGMENTS, chunk_seconds=None,
                        show_progress=False)
    EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(), config).run_sync()


def start_worker(db_path: Path, delay: float) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = [sys.executable, str(WORKER), str(db_path), "crashy", str(N_ITEMS), str(CHUNK_JUDGMENTS), str(delay)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def run_until_committed(db_path: Path, chunks: int, sig: signal.Signals) -> subprocess.Popen[str]:
    """Start the worker and send ``sig`` once it has committed ``chunks`` chunks."""
    # 0.1 s per request leaves ~10 s of work after the signal point, so a loaded machine (the
    # parent slow to read the pipe) still signals a running worker.
    worker = start_worker(db_path, delay=0.1)
    assert worker.stdout is not None
    seen = 0
    for line in worker.stdout:
        if line.startswith("committed"):
            seen += 1
            if seen == chunks:
                worker.send_signal(sig)
                break
    worker.wait(timeout=60)
    assert seen == chunks, worker.stderr.read() if worker.stderr else ""
    return worker


def committed_items(db_path: Path) -> int:
    db = sqlite_utils.Database(db_path)
    return db.execute("select count(*) from items where report_json is not null").fetchone()[0]


def comparable(db_path: Path, run: str) -> tuple[list[Any], list[tuple[Any, ...]]]:
    result, dataset = load_result(db_path, run)
    reports = [(r.item_idx, r.item_id, r.report.model_dump()) for r in result.item_results]
    db = sqlite_utils.Database(db_path)
    rows = db.execute(
        f"select {', '.join(JUDGMENT_COLUMNS_COMPARED)} from judgments where run_id = ? "
        "order by item_id, criterion_index, judge_id, permutation_index",
        [result.run_id],
    ).fetchall()
    assert len(dataset) == N_ITEMS
    return reports, rows


def assert_complete_and_equal(db_path: Path, reference: Path) -> None:
    reports, rows = comparable(db_path, "crashy")
    expected_reports, expected_rows = comparable(reference, "reference")
    assert len(reports) == N_ITEMS
    assert len(rows) == N_ITEMS * 3  # no missing judgment
    keys = [(r[0], r[1], r[2], r[3]) for r in rows]
    assert len(set(keys)) == len(keys)  # no duplicate judgment
    assert reports == expected_reports
    assert rows == expected_rows


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reference") / "results.sqlite"
    run_reference(path)
    return path


def resume_in_subprocess(db_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = [sys.executable, str(WORKER), str(db_path), "crashy", str(N_ITEMS), str(CHUNK_JUDGMENTS), "0"]
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_sigkill_then_resume_equals_uninterrupted_run(tmp_path: Path, reference: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    worker = run_until_committed(db_path, chunks=3, sig=signal.SIGKILL)
    assert worker.returncode == -signal.SIGKILL
    done = committed_items(db_path)
    assert 9 <= done < N_ITEMS and done % 3 == 0  # whole chunks only
    db = sqlite_utils.Database(db_path)
    assert db["judgments"].count == done * 3  # a killed chunk leaves nothing behind
    assert next(iter(db["runs"].rows))["status"] == "running"

    resumed = resume_in_subprocess(db_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip().endswith("done")
    first = int(resumed.stdout.split()[1])
    assert first == min(done + 3, N_ITEMS)  # the resume started where the kill stopped
    assert sqlite_utils.Database(db_path)["runs"].count == 1
    assert_complete_and_equal(db_path, reference)


def test_sigint_stops_cleanly_and_resumes(tmp_path: Path, reference: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    worker = run_until_committed(db_path, chunks=2, sig=signal.SIGINT)
    assert worker.returncode == 130
    assert worker.stdout is not None and "interrupted" in worker.stdout.read()
    run = next(iter(sqlite_utils.Database(db_path)["runs"].rows))
    assert run["status"] == "interrupted" and run["wall_seconds"] > 0
    done = committed_items(db_path)
    assert 6 <= done < N_ITEMS and done % 3 == 0

    resumed = resume_in_subprocess(db_path)
    assert resumed.returncode == 0, resumed.stderr
    assert_complete_and_equal(db_path, reference)
    result, _ = load_result(db_path, "crashy")
    assert result.status == "finished"


def test_stop_after_a_chunk_then_resume_in_process(tmp_path: Path, reference: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    config = EvalConfig(db_path=db_path, experiment_name="crashy", chunk_judgments=CHUNK_JUDGMENTS, chunk_seconds=None,
                        show_progress=False)
    runner = EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(), config,
                        on_chunk=lambda chunk: runner.stop() if chunk.chunk_index == 1 else None)
    with pytest.raises(EvalInterruptedError, match="stopped after 6 of 40 items"):
        runner.run_sync()
    result = EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(), config).run_sync()
    assert result.resumed_items == 6
    assert result.successful_items == N_ITEMS
    assert_complete_and_equal(db_path, reference)


def test_cancelling_the_async_run_keeps_the_chunk_in_flight(tmp_path: Path, reference: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    config = EvalConfig(db_path=db_path, experiment_name="crashy", chunk_judgments=CHUNK_JUDGMENTS, chunk_seconds=None,
                        show_progress=False)

    async def cancel_after_first_chunk() -> None:
        loop = asyncio.get_running_loop()
        holder: dict[str, asyncio.Task[Any]] = {}

        def on_chunk(chunk: Any) -> None:
            if chunk.chunk_index == 0:
                loop.call_soon_threadsafe(holder["task"].cancel)

        runner = EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(0.005), config,
                            on_chunk=on_chunk)
        holder["task"] = asyncio.ensure_future(runner.run())
        with pytest.raises(asyncio.CancelledError):
            await holder["task"]

    asyncio.run(cancel_after_first_chunk())
    run = next(iter(sqlite_utils.Database(db_path)["runs"].rows))
    assert run["status"] == "interrupted"
    assert 3 <= committed_items(db_path) < N_ITEMS
    EvalRunner(crash_worker.build_dataset(N_ITEMS), crash_worker.build_grader(), config).run_sync()
    assert_complete_and_equal(db_path, reference)
