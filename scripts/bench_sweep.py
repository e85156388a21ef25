"""Benchmark: a full 4-rotation position-bias sweep vs a single-order grade of the same workload.

Workload (``bench_workload.py``): N seeded pseudo-essays (150-400 words), each graded against
6 binary and 2 multi-choice criteria of 4 options. Everything runs in score mode (prefill only)
on the same loaded judge (SmolLM2-135M-Instruct by default).

Timings (seconds, best of ``--repeats``, the three runs interleaved so machine noise hits all):

- ``grade_choice_s``: single-order grade of the 2 multi-choice criteria (2 judgments per item):
  ``plan_tasks(permutations=SINGLE)`` + ``run_tasks``.
- ``grade_full_s``: single-order grade of the whole rubric (8 judgments per item).
- ``sweep_s``: :func:`autorubric_local.bias.run_sweep` over the same items: the 4 cyclic
  rotations of both multi-choice criteria (8 judgments per item, binary criteria skipped),
  planning, one engine workload and scoring included (bootstrap off).

``ratio_choice = sweep_s / grade_choice_s`` is the headline (target <= 1.5): 4x the judgments
of the same criteria cost little more because every rotation shares its item's prefix and only
the short criterion suffix is new. ``ratio_full = sweep_s / grade_full_s`` is given for scale.
``token_ratio_choice`` is the machine-independent counterpart: prompt tokens the engine had to
compute (``prompt_tokens - cached_tokens``, summed) in the sweep over those of the choice grade.
The last line printed is one JSON object with all numbers.

Run: ``python scripts/bench_sweep.py [--items 16] [--limit 2] [--model PRESET_OR_FOLDER]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_workload import build_items

from autorubric_local.bias import SweepSettings, run_sweep
from autorubric_local.engine.base import Engine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.execution import JudgeMode, run_tasks
from autorubric_local.graders.planning import GradeItem, OptionPermutations, plan_tasks
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.engines import load_engine

JUDGE_ID = "bench"


def grade_seconds(engine: Engine, items: Sequence[GradeItem], seed: int, choice_only: bool) -> tuple[float, int, int]:
    """Wall time of a single-order score-mode grade (planning included), judgments, computed tokens."""
    started = time.perf_counter()
    tasks = plan_tasks(items, [(JUDGE_ID, engine.format_chat)], seed=seed, permutations=OptionPermutations.SINGLE)
    if choice_only:
        tasks = [t for t in tasks if t.option_order is not None]
    results = run_tasks(engine, tasks, mode=JudgeMode.SCORE, reasoning_first=False, explanation_tokens=0)
    elapsed = time.perf_counter() - started
    failed = [r.error for r in results if r.error is not None]
    if failed:
        raise RuntimeError(f"{len(failed)} judgments failed, e.g. {failed[0]}")
    return elapsed, len(tasks), sum(r.usage.prompt_tokens - r.usage.cache_read_input_tokens for r in results)


def sweep_seconds(engine: Engine, items: Sequence[GradeItem], seed: int) -> tuple[float, int, int]:
    """Wall time of a full cyclic sweep (planning, engine, scores, aggregates), judgments, tokens."""
    judge = JudgeSpec(LLMConfig(model="bench", engine=engine), JUDGE_ID)
    started = time.perf_counter()
    result = run_sweep(items, [judge], SweepSettings(seed=seed, n_bootstrap=0))
    elapsed = time.perf_counter() - started
    dropped = sum(c.scores.n_dropped for c in result.cells)
    if dropped:
        raise RuntimeError(f"{dropped} rotations failed")
    usage = [r.usage for c in result.cells for r in c.results]
    return elapsed, len(usage), sum(u.prompt_tokens - u.cache_read_input_tokens for u in usage)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="preset name or model folder")
    parser.add_argument("--items", type=int, default=16, help="items in the workload (default 16)")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N items (smoke test)")
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats; the best is kept (default 2)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n_items = min(args.items, args.limit) if args.limit else args.items

    engine = load_engine(LLMConfig(model=args.model))
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    items = build_items(n_items, args.seed)
    print(f"model {engine.model_id}: {n_items} items; warming up ...")
    grade_seconds(engine, items[:1], args.seed, choice_only=False)

    runs: dict[str, Callable[[], tuple[float, int, int]]] = {
        "grade_choice": lambda: grade_seconds(engine, items, args.seed, choice_only=True),
        "grade_full": lambda: grade_seconds(engine, items, args.seed, choice_only=False),
        "sweep": lambda: sweep_seconds(engine, items, args.seed),
    }
    best: dict[str, float] = {}
    judgments: dict[str, int] = {}
    tokens: dict[str, int] = {}
    for repeat in range(max(1, args.repeats)):
        for name, run in runs.items():
            seconds, count, computed = run()
            best[name] = min(seconds, best.get(name, float("inf")))
            judgments[name], tokens[name] = count, computed
            print(f"repeat {repeat + 1}: {name}: {count} judgments, {computed} tokens computed, {seconds:.2f} s")
    report = {
        "model": engine.model_id,
        "items": n_items,
        "grade_choice_s": best["grade_choice"],
        "grade_full_s": best["grade_full"],
        "sweep_s": best["sweep"],
        "grade_choice_judgments": judgments["grade_choice"],
        "grade_full_judgments": judgments["grade_full"],
        "sweep_judgments": judgments["sweep"],
        "ratio_choice": best["sweep"] / best["grade_choice"],
        "ratio_full": best["sweep"] / best["grade_full"],
        "grade_choice_tokens": tokens["grade_choice"],
        "sweep_tokens": tokens["sweep"],
        "token_ratio_choice": tokens["sweep"] / tokens["grade_choice"],
        "target_ratio": 1.5,
    }
    print(f"sweep / single-order grade of the multi-choice criteria: {report['ratio_choice']:.2f}x "
          f"(target <= 1.5); / grade of the full rubric: {report['ratio_full']:.2f}x")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
