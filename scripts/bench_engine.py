"""Benchmark the judge engine against a per-call grader on a fixed synthetic workload.

Workload (``bench_workload.py``): N seeded pseudo-essays (150-400 words) x 8 criteria (6 binary,
2 multi-choice with 4 options, each shown in its 4 cyclic option orders) = 14 judgments per item;
32 items (448 judgments) by default, 4 items with ``--quick``.

Numbers (judgments per second, "jps", higher is better). Each speedup compares like with like:
scoring with scoring, generation with generation, same model, workload and machine.

- ``naive_score_jps`` (a1): per-call *scoring*. Each judgment alone, batch size 1, no prefix
  shared with any other judgment: one ``engine.score`` call with that single request (prefill of
  system + submission + criterion, verdict read from the labels). It is slow, so it runs on a
  fixed sample spread over items and criteria (``--naive-sample``).
- ``naive_generate_jps`` (a2): per-call *generation*, on the same sample: one
  ``engine.generate`` call per judgment with that single request (the whole prompt prefilled
  plus the verdict, the explanation decoded under the JSON-string constraint), as one API call
  of a per-call grader would.
- ``score_jps`` (b): ``run_tasks(mode=SCORE)`` over the whole workload at once (each prefix once,
  suffixes packed; nothing decoded). ``score_speedup = b / a1``.
- ``explain_jps`` (c): ``run_tasks(mode=EXPLAIN)``, verdict first then a constrained explanation,
  over the whole workload by default, or over the first ``--explain-items`` items (a fixed
  subsample); the printout says which. ``explain_speedup = c / a2``.
- ``bound_jps`` (d): the prefill bound. ``computed_tokens`` = each item's common prompt tokens
  once + the distinct nodes of the item's token trie of the prompts' rest and labels (every
  label's tokens but its last): what packed scoring computes, shared suffix starts once;
  ``prefill_tokens_per_s`` = best throughput of a plain forward pass of the same model over
  random ids (shapes [1, 2048] and [4, 512], logits of the last position only, best of 3 after a
  warm-up); ``bound_seconds = computed_tokens / prefill_tokens_per_s``.
  ``efficiency`` = bound_seconds / score seconds: how close score mode is to the bound.
- ``engine_seconds_score`` / ``host_seconds_score`` (and ``_explain``): the split of (b) (and
  (c)) between the model's forward passes (``engine.forward_timer``: wall time of every
  top-level forward call, each waited for on CUDA) and everything else in ``run_tasks`` (our
  host work: tokenizing, planning, tries and masks, reading logits). ``host_ms_per_judgment_score``
  (and ``_explain``) = host seconds / judgments x 1000.
- ``peak_rss_mib``: peak resident memory of this process (``ru_maxrss``).
- ``naive_max_prob_diff``: largest difference between a naive and a score-mode label
  probability on the sample (the engine promises they agree; a sanity check, not a timing).
- ``batch_tokens``: the engine's ``max_batch_tokens`` in (b) and (c) (0: one prefix group per
  forward pass; ``--batch-tokens`` overrides the device default).
- ``ab`` (with ``--ab-batch-tokens N``): score mode over the whole workload, per-group
  (``max_batch_tokens=0``) against batched (``N``), interleaved in one process over
  ``--ab-rounds`` rounds in A B B A ... order so machine load drifts hit both alike; per round
  the seconds and the 1-minute load average, then medians, ``ab_speedup`` = per-group median /
  batched median, and the largest label-probability difference between the two paths.

The last line printed is one JSON object with all of these. Run:
``python scripts/bench_engine.py [--quick] [--model PRESET_OR_FOLDER]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_workload import build_items, spread_sample, with_cyclic_orders  # noqa: E402

from autorubric_local.engine.base import GenerateRequest, ScoreRequest  # noqa: E402
from autorubric_local.engine.transformers.backend import TransformersEngine  # noqa: E402
from autorubric_local.graders.execution import JudgeMode, JudgmentResult, run_tasks  # noqa: E402
from autorubric_local.graders.planning import JudgmentTask, plan_tasks  # noqa: E402
from autorubric_local.graders.prompts import explanation_after_verdict  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.judges.engines import load_engine  # noqa: E402

JUDGE_ID = "bench"


def plan(engine: TransformersEngine, n_items: int, seed: int) -> list[JudgmentTask]:
    """All judgments of the workload, item-major, multi-choice criteria in 4 cyclic orders."""
    items = build_items(n_items, seed)
    return with_cyclic_orders(plan_tasks(items, [(JUDGE_ID, engine.format_chat)], shuffle_options=False))


def computed_tokens(engine: TransformersEngine, tasks: Sequence[JudgmentTask]) -> int:
    """Tokens packed scoring computes: per item (distinct prefix text), the common token prefix
    of its judgments' prompts once, plus the distinct nodes of the trie of each prompt's rest
    + label tokens (every label's tokens but its last); tokenized as the engine does (whole
    prompt in one call, labels as continuation tokens)."""
    groups: dict[str, list[JudgmentTask]] = {}
    for task in tasks:
        groups.setdefault(task.prefix, []).append(task)
    total = 0
    for prefix, members in groups.items():
        prompts = [engine.prompt_tokens(prefix, t.suffix) for t in members]
        shared = common_prefix_length(prompts)
        nodes: set[tuple[int, ...]] = set()
        for task, prompt in zip(members, prompts):
            for label in task.labels():
                path = prompt[shared:] + engine.label_tokens(prefix + task.suffix, prompt, label)[:-1]
                nodes.update(tuple(path[: k + 1]) for k in range(len(path)))
        total += shared + len(nodes)
    return total


def common_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Longest common token prefix, at most the shortest prompt's length minus one (as the engine)."""
    limit = min(len(p) for p in prompts) - 1
    length = 0
    while length < limit and len({p[length] for p in prompts}) == 1:
        length += 1
    return length


def unshared_tokens(engine: TransformersEngine, tasks: Sequence[JudgmentTask]) -> int:
    """Prompt tokens when every judgment is prefilled on its own (its whole prompt each time)."""
    return sum(len(engine.prompt_tokens(t.prefix, t.suffix)) for t in tasks)


def prefill_throughput(
    engine: TransformersEngine, repeats: int = 3, shapes: Sequence[tuple[int, int]] = ((1, 2048), (4, 512))
) -> dict[str, float]:
    """Best tokens/s per ``(batch, length)`` shape of a plain forward pass (last-position logits)
    over random ids below the model's vocabulary; on CUDA each pass is timed to its end
    (``torch.cuda.synchronize``)."""
    import torch

    generator = torch.Generator().manual_seed(0)
    vocab = int(engine.model.config.vocab_size)
    best: dict[str, float] = {}
    for batch, length in shapes:
        ids = torch.randint(0, vocab, (batch, length), generator=generator).to(engine.model.device)
        shape = f"{batch}x{length}"
        best[shape] = 0.0
        with torch.inference_mode():
            for attempt in range(repeats + 1):
                _synchronize(ids)
                start = time.perf_counter()
                engine.model(input_ids=ids, use_cache=False, logits_to_keep=1)
                _synchronize(ids)
                seconds = time.perf_counter() - start
                if attempt > 0:  # the first pass is a warm-up
                    best[shape] = max(best[shape], batch * length / seconds)
    return best


def _synchronize(tensor: Any) -> None:
    """Wait for the device of ``tensor`` (CUDA kernels run asynchronously); no-op on CPU."""
    if tensor.is_cuda:
        import torch

        torch.cuda.synchronize(tensor.device)


def warm_up(engine: TransformersEngine, tasks: Sequence[JudgmentTask]) -> None:
    """Compile the output constraint and run real-sized passes once, outside every timing."""
    engine.score([ScoreRequest(t.prefix, t.suffix, t.labels()) for t in tasks])
    engine.generate([GenerateRequest(tasks[0].prefix, tasks[0].reasoning_suffix(None), 4)])


def argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


def time_naive(
    engine: TransformersEngine, tasks: Sequence[JudgmentTask], explanation_tokens: int
) -> tuple[float, float, list[tuple[float, ...]]]:
    """Per-call grading of ``tasks``: seconds in score calls, in generate calls, probabilities.

    Each request is alone in its engine call, so its prefix is computed for it alone and
    nothing is shared with another judgment. (Requests keep the task's prefix/suffix split
    rather than ``prefix=""``: the engine crashes on an empty prefix.)
    """
    score_seconds = generate_seconds = 0.0
    probabilities: list[tuple[float, ...]] = []
    for task in tasks:
        labels = task.labels()
        start = time.perf_counter()
        scores = engine.score([ScoreRequest(task.prefix, task.suffix, labels)])[0]
        middle = time.perf_counter()
        chosen = argmax(scores.probabilities) if scores.error is None else 0
        suffix = task.suffix + explanation_after_verdict(labels[chosen])
        engine.generate([GenerateRequest(task.prefix, suffix, explanation_tokens)])
        end = time.perf_counter()
        score_seconds += middle - start
        generate_seconds += end - middle
        probabilities.append(scores.probabilities)
    return score_seconds, generate_seconds, probabilities


def time_engine(
    engine: TransformersEngine, tasks: Sequence[JudgmentTask], mode: JudgeMode, explanation_tokens: int
) -> tuple[float, list[JudgmentResult]]:
    """Seconds for one ``run_tasks`` call over ``tasks``, and its results."""
    seconds, _, results = time_split(engine, tasks, mode, explanation_tokens)
    return seconds, results


def time_split(
    engine: TransformersEngine, tasks: Sequence[JudgmentTask], mode: JudgeMode, explanation_tokens: int
) -> tuple[float, float, list[JudgmentResult]]:
    """Wall seconds of one ``run_tasks`` call, the seconds of its model forward passes in it
    (``engine.forward_timer``), and its results."""
    timer = engine.forward_timer
    before = timer.seconds
    start = time.perf_counter()
    results = run_tasks(engine, tasks, mode=mode, reasoning_first=False, explanation_tokens=explanation_tokens)
    return time.perf_counter() - start, timer.seconds - before, results


def ab_scoring(engine: TransformersEngine, tasks: Sequence[JudgmentTask], batch_tokens: int, rounds: int) -> dict:
    """Score mode per-group vs batched, interleaved (A B B A ...); see the module docstring."""
    seconds: dict[int, list[float]] = {0: [], batch_tokens: []}
    probabilities: dict[int, list[tuple[float, ...]]] = {}
    log = []
    for round_index in range(rounds):
        order = (0, batch_tokens) if round_index % 2 == 0 else (batch_tokens, 0)
        for setting in order:
            engine.max_batch_tokens = setting
            load = os.getloadavg()[0]
            elapsed, results = time_engine(engine, tasks, JudgeMode.SCORE, 0)
            seconds[setting].append(elapsed)
            probabilities[setting] = [r.probabilities for r in results]
            log.append({"round": round_index, "batch_tokens": setting, "seconds": elapsed, "load1": load})
            print(f"  ab round {round_index} batch_tokens {setting}: {elapsed:.1f} s (load average {load:.2f})")
    per_group, batched = statistics.median(seconds[0]), statistics.median(seconds[batch_tokens])
    diff = max((abs(a - b) for p, q in zip(probabilities[0], probabilities[batch_tokens]) for a, b in zip(p, q)),
               default=0.0)
    return {"batch_tokens": batch_tokens, "rounds": log, "median_seconds_per_group": per_group,
            "median_seconds_batched": batched, "ab_speedup": per_group / batched, "max_prob_diff": diff}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="preset name or model folder")
    parser.add_argument("--quick", action="store_true", help="4 items, naive sample 6 (smoke test)")
    parser.add_argument("--items", type=int, default=None, help="items in the workload (default 32; 4 quick)")
    parser.add_argument("--naive-sample", type=int, default=None, help="judgments timed naively (24; 6 quick)")
    parser.add_argument("--explain-items", type=int, default=0, help="items timed in explain mode (0 = all)")
    parser.add_argument("--explanation-tokens", type=int, default=48, help="explanation budget in tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-tokens", type=int, default=None,
                        help="engine max_batch_tokens for (b) and (c) (default: the device's)")
    parser.add_argument("--ab-batch-tokens", type=int, default=0,
                        help="also time score mode per-group vs batched at this budget, interleaved")
    parser.add_argument("--ab-rounds", type=int, default=3, help="rounds of the per-group/batched comparison")
    parser.add_argument("--ab-only", action="store_true", help="run only the per-group/batched comparison")
    args = parser.parse_args(argv)
    n_items = args.items or (4 if args.quick else 32)
    n_naive = args.naive_sample or (6 if args.quick else 24)

    engine = load_engine(LLMConfig(model=args.model))
    if not isinstance(engine, TransformersEngine):
        parser.error(f"--model {args.model!r}: expected a transformers engine, got {type(engine).__name__}")
    if args.batch_tokens is not None:
        engine.max_batch_tokens = args.batch_tokens
    engine.forward_timer.synchronize = True  # on CUDA, forward seconds to each pass's end
    tasks = plan(engine, n_items, args.seed)
    per_item = len(tasks) // n_items
    print(f"model {engine.model_id}: {n_items} items x {per_item} judgments = {len(tasks)} judgments; "
          f"torch threads {__import__('torch').get_num_threads()}; load average {os.getloadavg()[0]:.2f}")
    warm_up(engine, [t for t in tasks if t.item_index == 0])
    ab = None
    if args.ab_batch_tokens:
        default = engine.max_batch_tokens
        engine.max_batch_tokens = args.ab_batch_tokens
        warm_up(engine, [t for t in tasks if t.item_index == 0])
        ab = ab_scoring(engine, tasks, args.ab_batch_tokens, args.ab_rounds)
        engine.max_batch_tokens = default
        print(f"(ab) score mode median: per-group {ab['median_seconds_per_group']:.1f} s, batched "
              f"({args.ab_batch_tokens} tokens) {ab['median_seconds_batched']:.1f} s, per-group/batched "
              f"{ab['ab_speedup']:.2f}x; max |dp| between them {ab['max_prob_diff']:.2e}")
        if args.ab_only:
            print(json.dumps({"model": engine.model_id, "judgments": len(tasks), "ab": ab}))
            return 0

    sample = spread_sample(n_items, per_item, n_naive)
    naive_score_s, naive_generate_s, naive_probs = time_naive(
        engine, [tasks[i] for i in sample], args.explanation_tokens
    )
    print(f"(a) naive, batch 1, no sharing, on a sample of {len(sample)} judgments: "
          f"(a1) scoring {naive_score_s:.1f} s, (a2) generation {naive_generate_s:.1f} s")

    score_s, score_engine_s, score_results = time_split(engine, tasks, JudgeMode.SCORE, args.explanation_tokens)
    print(f"(b) score mode, whole workload: {score_s:.1f} s (model forwards {score_engine_s:.1f} s, host "
          f"{score_s - score_engine_s:.1f} s)")

    n_explain_items = min(args.explain_items or n_items, n_items)
    explain_tasks = [t for t in tasks if t.item_index < n_explain_items]
    explain_s, explain_engine_s, explain_results = time_split(
        engine, explain_tasks, JudgeMode.EXPLAIN, args.explanation_tokens)
    which = "whole workload" if n_explain_items == n_items else f"first {n_explain_items} items (fixed subsample)"
    print(f"(c) explain mode, {which}, {len(explain_tasks)} judgments: {explain_s:.1f} s (model forwards "
          f"{explain_engine_s:.1f} s, host {explain_s - explain_engine_s:.1f} s)")

    computed = computed_tokens(engine, tasks)
    unshared = unshared_tokens(engine, tasks)
    per_shape = prefill_throughput(engine)
    throughput = max(per_shape.values())
    bound_s = computed / throughput
    shapes = ", ".join(f"{shape} {tps:.0f}" for shape, tps in per_shape.items())
    print(f"(d) prefill bound: {computed} computed tokens (vs {unshared} prompt tokens unshared) "
          f"at {throughput:.0f} tok/s (best of {shapes}) = {bound_s:.1f} s")

    errors = sum(r.error is not None for r in [*score_results, *explain_results])
    prob_diff = max(
        (abs(a - b) for i, probs in zip(sample, naive_probs) for a, b in zip(probs, score_results[i].probabilities)),
        default=0.0,
    )
    completion = sum(r.usage.completion_tokens for r in explain_results)
    naive_score_jps = len(sample) / naive_score_s
    naive_generate_jps = len(sample) / naive_generate_s
    report = {
        "model": engine.model_id,
        "judgments": len(tasks),
        "naive_sample": len(sample),
        "explain_sample": len(explain_tasks),
        "naive_score_jps": naive_score_jps,
        "naive_generate_jps": naive_generate_jps,
        "score_jps": len(tasks) / score_s,
        "explain_jps": len(explain_tasks) / explain_s,
        "bound_jps": len(tasks) / bound_s,
        "score_speedup": len(tasks) / score_s / naive_score_jps,
        "explain_speedup": len(explain_tasks) / explain_s / naive_generate_jps,
        "efficiency": bound_s / score_s,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "computed_tokens": computed,
        "unshared_prompt_tokens": unshared,
        "explain_completion_tokens": completion,
        "prefill_tokens_per_s": throughput,
        "explanation_tokens": args.explanation_tokens,
        "seconds_naive_score": naive_score_s,
        "seconds_naive_generate": naive_generate_s,
        "seconds_score": score_s,
        "seconds_explain": explain_s,
        "seconds_bound": bound_s,
        "engine_seconds_score": score_engine_s,
        "host_seconds_score": score_s - score_engine_s,
        "host_ms_per_judgment_score": 1000 * (score_s - score_engine_s) / len(tasks),
        "engine_seconds_explain": explain_engine_s,
        "host_seconds_explain": explain_s - explain_engine_s,
        "host_ms_per_judgment_explain": 1000 * (explain_s - explain_engine_s) / len(explain_tasks),
        "naive_max_prob_diff": prob_diff,
        "errors": errors,
        "batch_tokens": getattr(engine, "max_batch_tokens", None),
        "ab": ab,
    }
    print(f"scoring, judgments/s: naive {naive_score_jps:.3f} | engine {report['score_jps']:.2f} "
          f"({report['score_speedup']:.1f}x naive scoring) | prefill bound {report['bound_jps']:.2f} "
          f"(score mode at {report['efficiency']:.2f} of it)")
    print(f"generation, judgments/s: naive {naive_generate_jps:.3f} | engine explain mode {report['explain_jps']:.2f} "
          f"({report['explain_speedup']:.1f}x naive generation)")
    print(f"peak RSS {report['peak_rss_mib']:.0f} MiB; explain completion tokens {completion}; errors {errors}; "
          f"naive vs score max |dp| {prob_diff:.2e}")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
