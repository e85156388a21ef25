"""Cost of comparing N = 4 systems (issue 50): every rotation of all four in one prompt (N-way,
4 judgments a prompt) against all pairs in both orders (6 pairs x 2 = 12 judgments a prompt),
and both orders of one pair against one order.

Data: the bundled ``examples/compare_responses.jsonl`` (8 prompts, systems careful, terse and
wrong) plus a fourth system, ``half``: the first half of the words of ``careful``'s answer. One
judge (``--model``, score mode), loaded once; each workload is scored by
:func:`autorubric_local.graders.execution.run_tasks` as a comparison chunk is, the workloads
interleaved, ``--repeats`` times. Reported per workload: judgments, seconds, judgments/s,
prompts (of the data) per second, and prompt tokens computed (prompt tokens minus those the
engine reports as read from its prefix cache).

Run: ``python scripts/bench_compare_cost.py [--model smollm2-135m-instruct] [--repeats 2]``.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autorubric_local.comparisons.data import ComparisonPrompt, load_comparisons, plan_pairs  # noqa: E402
from autorubric_local.comparisons.judging import comparison_items, nway_items  # noqa: E402
from autorubric_local.comparisons.prompts import overall_question  # noqa: E402
from autorubric_local.graders.execution import JudgeMode, run_tasks  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.judges.engines import load_engine  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    prompts = []
    for p in load_comparisons(ROOT / "examples" / "compare_responses.jsonl"):
        words = p.responses["careful"].split()
        prompts.append(ComparisonPrompt(p.prompt_id, p.query, {**p.responses, "half": " ".join(words[: len(words) // 2])},
                                        p.reference))
    engine = load_engine(LLMConfig(model=args.model))
    question = [overall_question()]

    def tasks(items: list) -> list:
        return [t for i, item in enumerate(items) for t in item.rotation_tasks(i, args.model, engine.format_chat, None)]

    pairs = tasks(comparison_items(plan_pairs(prompts), question))
    workloads = {
        "nway_4_rotations": tasks(nway_items(prompts, question)),
        "all_pairs_both_orders": pairs,
        "all_pairs_one_order": [t for t in pairs if t.permutation_index == 0],
    }
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in workloads}
    for _ in range(args.repeats):
        for name, chosen in workloads.items():
            started = time.perf_counter()
            results = run_tasks(engine, chosen, mode=JudgeMode.SCORE, reasoning_first=False, explanation_tokens=0)
            seconds = time.perf_counter() - started
            assert all(r.error is None for r in results), [r.error for r in results if r.error][:3]
            runs[name].append({"judgments": len(results), "seconds": seconds,
                               "prompt_tokens_computed": sum(r.usage.prompt_tokens - r.usage.cache_read_input_tokens
                                                             for r in results)})
    summary = {}
    for name, measured in runs.items():
        seconds = statistics.median(r["seconds"] for r in measured)
        summary[name] = {"judgments": measured[0]["judgments"], "median_seconds": round(seconds, 2),
                         "judgments_per_s": round(measured[0]["judgments"] / seconds, 3),
                         "prompts_per_s": round(len(prompts) / seconds, 3),
                         "prompt_tokens_computed": measured[0]["prompt_tokens_computed"]}
        print(f"{name}: {summary[name]['judgments']} judgments, {summary[name]['median_seconds']} s (median of "
              f"{args.repeats}), {summary[name]['judgments_per_s']} judgments/s, {summary[name]['prompts_per_s']} "
              f"prompts/s, {summary[name]['prompt_tokens_computed']} prompt tokens computed", flush=True)
    print(json.dumps({"model": args.model, "prompts": len(prompts), "systems": 4, "repeats": args.repeats,
                      "summary": summary, "runs": runs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
