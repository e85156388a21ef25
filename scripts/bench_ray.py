"""Distributed grading on Ray (issue 15): what 2 Ray actors cost against 1 local process on one
machine, the round-trip overhead of one chunk, and how fast the driver commits.

Work: the bundled battery example (``examples/battery_rubric.yaml``, 8 criteria;
``examples/battery_submissions.jsonl``, 8 items) repeated ``--repeat`` times under new ids
(default 2: 16 items, 128 judgments), graded by SmolLM2-135M-Instruct (transformers backend, CPU,
float32), ``--chunk-judgments`` judgments per chunk (default 16: 2 items per chunk, 8 chunks).

Rows:

- ``local 1 process x T threads``: one process, ``EvalRunner`` as ``autorubric-local grade``
  runs it, torch with 2 threads (every core of this machine) and with 1.
- ``ray N actor(s)``: ``EvalConfig(distributed=DistributedConfig(address="local", workers=N,
  num_cpus=C))``: a Ray head started in this process, N actors of C CPUs (Ray gives each
  ``OMP_NUM_THREADS=C``), each loading SmolLM2 itself; this process commits.
  ``startup_seconds`` is Ray's start plus the actors loading the judge (the local row: loading
  the judge); ``grading_seconds`` the rest of the run; judgments/s are of grading time.

Without a model:

- ``round trip per chunk``: one real chunk (its planned items, as the driver sends them)
  to an actor that answers with that chunk's graded items (captured beforehand), one at a
  time, ``--round-trips`` times: Ray's scheduling, pickling and transfer per chunk, both ways.
- ``driver commit rate``: the battery example repeated to ``--commit-items`` items graded by a
  scripted engine (instant label probabilities from a hash) with their graded chunks captured,
  then the same run again into a fresh SQLite file with an executor that hands the captured
  chunks back at once: commits per second (each chunk's items, reports, judgments, criteria and
  prompts in one transaction) at several chunk sizes: the ceiling of a run's throughput, however
  many workers grade.

On a 2-core machine two actors share the cores one process already uses: this measures Ray's
overhead, not a speed-up. The machine is shared with other processes (other agents' jobs); the
load average before and after is printed. The last line printed is one JSON object with every
figure.

Run: ``python scripts/bench_ray.py`` (needs scripts/setup.sh and scripts/setup_ray.sh).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

PRESET = "smollm2-135m-instruct"


def dataset(repeat: int) -> Any:
    from autorubric_local.core.rubric import Rubric
    from autorubric_local.data.submissions import load_grading_data

    rubric = Rubric.from_file(ROOT / "examples" / "battery_rubric.yaml")
    data = load_grading_data(ROOT / "examples" / "battery_submissions.jsonl", rubric)
    items = [dataclasses.replace(item, id=f"{item.id}-{copy}") for copy in range(repeat) for item in data.items]
    return dataclasses.replace(data, items=items)


def smollm2_grader() -> Any:
    from autorubric_local.graders import CriterionGrader
    from autorubric_local.judges.config import LLMConfig

    return CriterionGrader(LLMConfig(model=PRESET, backend="transformers", device="cpu"), seed=0)


def verdicts(result: Any) -> list[Any]:
    return [c.final_verdict if c.error is None else "error" for item in result.item_results
            for c in item.report.report or []]


def end_to_end(data: Any, chunk_judgments: int, workers: int | None, cpus: float) -> dict[str, Any]:
    """One timed run into a fresh database; ``workers=None``: local, with ``cpus`` torch threads."""
    import torch

    from autorubric_local.runner import DistributedConfig, EvalConfig, EvalRunner
    from autorubric_local.runner.distributed import RayExecutor

    threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory() as folder:
        grader = smollm2_grader()
        distributed = None if workers is None else DistributedConfig(workers=workers, num_cpus=cpus)
        config = EvalConfig(db_path=Path(folder) / "bench.sqlite", experiment_name="bench", show_progress=False,
                            chunk_judgments=chunk_judgments, distributed=distributed)
        start = time.perf_counter()
        executor = None
        if distributed is None:
            torch.set_num_threads(int(cpus))
            grader.engine_for(grader.judges[0])
            startup = time.perf_counter() - start
        else:
            executor = RayExecutor(distributed)
        try:
            result = EvalRunner(data, grader, config, executor=executor).run_sync()
        finally:
            torch.set_num_threads(threads)
        total = time.perf_counter() - start
        if executor is not None:
            startup = executor.startup_seconds
    grading = total - startup
    row = {"startup_seconds": round(startup, 2), "grading_seconds": round(grading, 2),
           "total_seconds": round(total, 2), "judgments": result.total_judgments,
           "judgments_per_second": round(result.total_judgments / grading, 3), "verdicts": verdicts(result)}
    if executor is not None:
        row["chunks_by_pid"] = dict(executor.chunks_by_pid)
    return row


class Capturing:
    """The local executor, keeping each chunk's planned items and graded items; the run's end
    is handed on to it (``__exit__`` releases the engines it loaded)."""

    def __init__(self) -> None:
        from autorubric_local.runner.executors import LocalExecutor

        self.inner = LocalExecutor()
        self.chunks: list[tuple[Any, Any]] = []

    def __enter__(self) -> Capturing:
        self.inner.__enter__()
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self.inner.__exit__(kind, exc, tb)

    def engines(self, grader: Any) -> Any:
        return self.inner.engines(grader)

    def fallbacks(self, grader: Any) -> Any:
        return self.inner.fallbacks(grader)

    def graded_chunks(self, grader: Any, chunks: Sequence[Any], progress: Callable[[int], None],
                      stop: threading.Event) -> Iterator[Any]:
        for index, graded in self.inner.graded_chunks(grader, chunks, progress, stop):
            self.chunks.append((chunks[index], graded))
            yield index, graded


class Replaying(Capturing):
    """Hands captured graded chunks back at once (no engine), timing the commits between."""

    def __init__(self, captured: list[tuple[Any, Any]]) -> None:
        super().__init__()
        self.captured = captured
        self.first_yield = 0.0

    def graded_chunks(self, grader: Any, chunks: Sequence[Any], progress: Callable[[int], None],
                      stop: threading.Event) -> Iterator[Any]:
        assert len(chunks) == len(self.captured)
        self.first_yield = time.perf_counter()
        for index, (_, graded) in enumerate(self.captured):
            yield index, graded


def scripted_grader() -> Any:
    import crash_worker

    return crash_worker.build_grader()


def commit_rate(items: int, chunk_judgments: int) -> dict[str, Any]:
    from autorubric_local.runner import EvalConfig, EvalRunner

    data = dataset(max(1, items // 8))
    with tempfile.TemporaryDirectory() as folder:
        capture = Capturing()
        config = EvalConfig(db_path=Path(folder) / "capture.sqlite", experiment_name="capture", show_progress=False,
                            chunk_judgments=chunk_judgments)
        EvalRunner(data, scripted_grader(), config, executor=capture).run_sync()  # type: ignore[arg-type]
        replay = Replaying(capture.chunks)
        last = [0.0]
        config = EvalConfig(db_path=Path(folder) / "replay.sqlite", experiment_name="replay", show_progress=False,
                            chunk_judgments=chunk_judgments)
        result = EvalRunner(data, scripted_grader(), config, executor=replay,  # type: ignore[arg-type]
                            on_chunk=lambda _: last.__setitem__(0, time.perf_counter())).run_sync()
        seconds = last[0] - replay.first_yield
    chunks = len(capture.chunks)
    return {"items": len(data.items), "chunk_judgments": chunk_judgments, "chunks": chunks,
            "judgments": result.total_judgments, "commit_seconds": round(seconds, 3),
            "chunks_per_second": round(chunks / seconds, 1),
            "judgments_per_second": round(result.total_judgments / seconds, 1),
            "ms_per_chunk": round(1000 * seconds / chunks, 2)}


class Echo:
    """An actor that answers any chunk with a fixed graded chunk (no model)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def grade(self, chunk: Any, seed: int) -> tuple[int, Any]:
        return os.getpid(), (self.answer, {})  # as GraderWorker.grade: graded items and fallbacks


def round_trip(chunk_judgments: int, trips: int) -> dict[str, Any]:
    import ray

    from autorubric_local.runner import EvalConfig, EvalRunner

    data = dataset(1)
    with tempfile.TemporaryDirectory() as folder:
        capture = Capturing()
        config = EvalConfig(db_path=Path(folder) / "capture.sqlite", experiment_name="capture", show_progress=False,
                            chunk_judgments=chunk_judgments)
        EvalRunner(data, scripted_grader(), config, executor=capture).run_sync()  # type: ignore[arg-type]
    chunk, graded = capture.chunks[0]
    from autorubric_local.runner.distributed import start_local_ray

    start_local_ray(1)  # the tool's own local head: every service on 127.0.0.1
    try:
        actor = ray.remote(Echo).options(num_cpus=1).remote(graded)
        ray.get(actor.grade.remote(list(chunk), 0))  # warm
        start = time.perf_counter()
        for _ in range(trips):
            ray.get(actor.grade.remote(list(chunk), 0))
        seconds = time.perf_counter() - start
    finally:
        ray.shutdown()
    return {"items_per_chunk": len(chunk), "judgments_per_chunk": sum(len(g.results) for g in graded),
            "sent_bytes": len(pickle.dumps(list(chunk))), "returned_bytes": len(pickle.dumps(graded)),
            "trips": trips, "ms_per_round_trip": round(1000 * seconds / trips, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--chunk-judgments", type=int, default=16)
    parser.add_argument("--round-trips", type=int, default=50)
    parser.add_argument("--commit-items", type=int, default=800)
    parser.add_argument("--skip-model", action="store_true", help="only the rows without a model")
    args = parser.parse_args()
    load_before = os.getloadavg()
    print(f"load average before: {load_before} on {os.cpu_count()} cores (shared with other processes)", flush=True)
    figures: dict[str, Any] = {"judge": PRESET, "cores": os.cpu_count(),
                               "load_average_before": load_before}
    rows: dict[str, Any] = {}
    if not args.skip_model:
        data = dataset(args.repeat)
        for name, workers, cpus in (("local 1 process x 2 threads", None, 2), ("local 1 process x 1 thread", None, 1),
                                    ("ray 2 actors x 1 cpu", 2, 1.0), ("ray 1 actor x 2 cpu", 1, 2.0)):
            rows[name] = end_to_end(data, args.chunk_judgments, workers, cpus)
            row = rows[name]
            print(f"{name}: startup {row['startup_seconds']} s, grading {row['grading_seconds']} s, "
                  f"{row['judgments_per_second']} judgments/s ({row['judgments']} judgments)", flush=True)
        first = next(iter(rows.values()))["verdicts"]
        same = all(row["verdicts"] == first for row in rows.values())
        print(f"same verdicts in every row: {same}", flush=True)
        figures["items"] = len(data.items)
        figures["same_verdicts"] = same
        for row in rows.values():
            row.pop("verdicts")
    figures["end_to_end"] = rows
    trip = round_trip(args.chunk_judgments, args.round_trips)
    print(f"round trip per chunk ({trip['items_per_chunk']} items, {trip['judgments_per_chunk']} judgments, "
          f"{trip['sent_bytes']} B sent, {trip['returned_bytes']} B back): {trip['ms_per_round_trip']} ms", flush=True)
    figures["round_trip"] = trip
    commits = []
    for size in (16, 64, 512):
        row = commit_rate(args.commit_items, size)
        commits.append(row)
        print(f"driver commits, {size} judgments per chunk: {row['chunks_per_second']} chunks/s, "
              f"{row['judgments_per_second']} judgments/s ({row['chunks']} chunks, {row['ms_per_chunk']} ms each)",
              flush=True)
    figures["commit_rate"] = commits
    figures["load_average_after"] = os.getloadavg()
    print(f"load average after: {figures['load_average_after']}", flush=True)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
