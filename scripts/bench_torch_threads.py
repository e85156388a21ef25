"""Score the bundled example with a real judge at 1 and at 2 torch threads, interleaved.

Why: the test suite pins torch to one thread (``tests/conftest.py``), which is right for the tiny
random judge (thread synchronisation costs more than its small matrices save) but may leave a core
idle for the real judges' long prompts. This measures it on this machine, like with like: the same
judge, the same requests, rounds alternating the thread count.

Usage: ``.venv/bin/python scripts/bench_torch_threads.py [--rounds 3] [--every 1] [--judges PRESET ...]``
Prints one line per timed pass and a median per (judge, threads).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from autorubric_local.core.rubric import Rubric
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.engine import ScoreRequest
from autorubric_local.graders.planning import GradeItem, plan_tasks
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.engines import load_engine

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example_items() -> list[GradeItem]:
    rubric = Rubric.from_file(EXAMPLES / "battery_rubric.yaml")
    data = load_grading_data(EXAMPLES / "battery_submissions.jsonl", rubric)
    return [GradeItem(submission=data[i].submission, rubric=tuple(data.get_item_rubric(i).rubric),
                      query=data.get_item_query(i), reference_submission=data.get_item_reference_submission(i),
                      item_id=data[i].id) for i in range(len(data))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--judges", nargs="+", default=["smollm2-135m-instruct", "gemma3-270m"])
    parser.add_argument("--every", type=int, default=1, help="score every k-th planned request (k=1: all)")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"load average at start {os.getloadavg()[0]:.2f}")
    items = example_items()
    for preset in args.judges:
        engine = load_engine(LLMConfig(model=preset, device="cpu", backend="transformers"))
        tasks = plan_tasks(items, [(preset, engine.format_chat)], seed=0)
        requests = [ScoreRequest(t.prefix, t.suffix, t.labels()) for t in tasks][:: args.every]
        torch.set_num_threads(1)
        engine.score(requests[:4])  # warm-up
        times: dict[int, list[float]] = {1: [], 2: []}
        for round_ in range(args.rounds):
            for threads in ((1, 2) if round_ % 2 == 0 else (2, 1)):
                torch.set_num_threads(threads)
                start = time.perf_counter()
                engine.score(requests)
                times[threads].append(time.perf_counter() - start)
                print(f"{preset} round {round_} threads {threads}: {times[threads][-1]:.2f} s "
                      f"({len(requests)} judgments; load average {os.getloadavg()[0]:.2f})", flush=True)
        one, two = statistics.median(times[1]), statistics.median(times[2])
        print(f"{preset}: median 1 thread {one:.2f} s, 2 threads {two:.2f} s, ratio {one / two:.2f}x", flush=True)


if __name__ == "__main__":
    main()
