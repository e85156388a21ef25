"""Score-mode speed of each real judge family on the project's benchmark workload.

Compares scoring with scoring: the same workload (``bench_workload.py``: seeded pseudo-essays x
8 criteria, 2 multi-choice criteria in their 4 cyclic option orders = 14 judgments per item),
the same engine path (``run_tasks(mode=SCORE)``: each item's common prompt tokens once, the
rest packed as token tries), the same machine and thread count, rounds interleaved model by
model (A B A B ...) so drift on a shared machine hits both alike. Each model renders the
workload in its own prompt format (SmolLM2: its chat template; Gemma 3 270M: the completion
format), so prompt token counts differ and are reported.

Per model and round: judgments/s, prompt tokens/s (``sum(prompt_tokens) / s``: every judgment's
whole prompt, shared or not) and computed tokens/s (``(prompt_tokens - cache_read_input_tokens)
/ s`` summed: the prompt tokens the engine really computed; label continuation nodes are not
counted). The summary gives the median of the rounds. The last line printed is one JSON object.

Run: ``python scripts/bench_families.py [--items 16] [--rounds 3] [--threads 2]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_workload import build_items, with_cyclic_orders  # noqa: E402

from autorubric_local.engine.base import ScoreRequest  # noqa: E402
from autorubric_local.graders.execution import JudgeMode, run_tasks  # noqa: E402
from autorubric_local.graders.planning import plan_tasks  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.judges.engines import load_engine  # noqa: E402

MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    items = build_items(args.items, args.seed)
    engines = {m: load_engine(LLMConfig(model=m, device="cpu", dtype="float32")) for m in MODELS}
    tasks = {m: with_cyclic_orders(plan_tasks(items, [("bench", e.format_chat)], shuffle_options=False))
             for m, e in engines.items()}
    for model, engine in engines.items():  # warm-up outside the timings
        engine.score([ScoreRequest(t.prefix, t.suffix, t.labels()) for t in tasks[model][:14]])
    rounds: dict[str, list[dict[str, float]]] = {m: [] for m in MODELS}
    for round_index in range(args.rounds):
        for model in MODELS:
            start = time.perf_counter()
            results = run_tasks(engines[model], tasks[model], mode=JudgeMode.SCORE, reasoning_first=False,
                                explanation_tokens=48)
            seconds = time.perf_counter() - start
            errors = sum(1 for r in results if r.error)
            prompt = sum(r.usage.prompt_tokens for r in results)
            computed = sum(r.usage.prompt_tokens - r.usage.cache_read_input_tokens for r in results)
            row = {"seconds": seconds, "judgments": len(results), "errors": errors,
                   "judgments_per_s": len(results) / seconds, "prompt_tokens": prompt,
                   "prompt_tokens_per_s": prompt / seconds, "computed_tokens": computed,
                   "computed_tokens_per_s": computed / seconds}
            rounds[model].append(row)
            print(f"round {round_index} {model}: {row['judgments_per_s']:.2f} judgments/s, "
                  f"{row['prompt_tokens_per_s']:.0f} prompt tok/s, {row['computed_tokens_per_s']:.0f} computed tok/s, "
                  f"{errors} errors", flush=True)
    summary = {
        model: {
            "attention_path": engines[model].attention_path,
            "prompt_format": engines[model].prompt_format,
            "parameters": sum(p.numel() for p in engines[model].model.parameters()),
            "judgments": rows[0]["judgments"],
            "prompt_tokens": rows[0]["prompt_tokens"],
            "computed_tokens": rows[0]["computed_tokens"],
            **{f"median_{key}": statistics.median(r[key] for r in rows)
               for key in ("judgments_per_s", "prompt_tokens_per_s", "computed_tokens_per_s", "seconds")},
        }
        for model, rows in rounds.items()
    }
    print(json.dumps({"items": args.items, "rounds": args.rounds, "threads": args.threads, "models": summary}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
