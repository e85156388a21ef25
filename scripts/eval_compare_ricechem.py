"""Pairwise comparisons on real data (issue 50): RiceChem q1 answers judged in pairs, both orders,
by each bundled judge; against the teaching assistants' preference and against the preference
implied by two pointwise `grade` scores; plus a ranking of systems with a known order, and the
cost of judging both orders against one.

1. **Pairs.** ``--pairs`` random pairs of the first ``--items`` answers (seeded). The human
   preference is the answer whose TA rubric score (sum of the weights of its MET criteria) is
   higher; equal scores are a tie. Each judge compares every pair in both orders (score mode,
   :func:`autorubric_local.comparisons.judging.run_comparison`, the overall question). Reported:
   agreement of the swap-rule verdict with the human one (3-way, all pairs), the share of
   human-decided pairs whose soft preference (P(a) vs P(b), balanced over both orders) points
   to the human winner, position consistency and the conflicts' slot-1 share.
2. **Pointwise.** ``autorubric-local grade`` of the same answers with the same judge (score
   mode); a pair's implied preference is the higher-scored answer (equal: a tie); the same two
   agreements.
3. **Known order.** ``--rank-items`` answers as three systems: the original, its first half
   (by words) and its first quarter; truth: original > half > quarter. The ranking each judge
   gives (soft, Bradley-Terry, 90% intervals), reported whatever it is.
4. **Cost.** With the first judge, the first ``--cost-pairs`` pairs' verdict requests of one order against both orders
   scored by the same loaded engine, interleaved, ``--repeats`` times: judgments/s and the prompt
   tokens computed (prompt tokens minus cached ones, as the engine reports them).

Run: ``python scripts/eval_compare_ricechem.py [--data PATH] [--items 40] [--pairs 100]
[--rank-items 12] [--cost-pairs 40] [--repeats 2] [--out DIR]``. The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODELS = ("smollm2-135m-instruct", "gemma3-270m")

from autorubric_local.comparisons.data import ComparisonPrompt, plan_pairs  # noqa: E402
from autorubric_local.comparisons.judging import StoredComparison, comparison_items, run_comparison  # noqa: E402
from autorubric_local.comparisons.prompts import overall_question  # noqa: E402
from autorubric_local.comparisons.ranking import position_bias, rank_systems  # noqa: E402
from autorubric_local.graders.criterion_grader import JudgeSpec  # noqa: E402
from autorubric_local.graders.execution import JudgeMode, run_tasks  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.judges.engines import load_engine  # noqa: E402
from autorubric_local.runner.config import EvalConfig  # noqa: E402


def ta_score(item: dict, rubric: list[dict]) -> float:
    return sum(c["weight"] for c, v in zip(rubric, item["ground_truth"], strict=True) if v == "MET")


def human(a: float, b: float) -> str:
    return "a" if a > b else "b" if b > a else "tie"


def agreement(stored: StoredComparison, judge_id: str, truth: dict[str, str]) -> dict[str, float]:
    swap_hits = soft_hits = decided = n = 0
    for j in stored.judgments:
        if j.judge_id != judge_id or not j.complete:
            continue
        n += 1
        want = truth[j.prompt_id]
        swap_hits += j.swap_verdict == want
        if want != "tie":
            decided += 1
            p = j.preference
            soft_hits += (p["a"] > p["b"]) == (want == "a")
    return {"pairs": n, "swap_agreement": swap_hits / n, "human_decided": decided,
            "soft_direction_agreement": soft_hits / decided}


def pointwise(data: Path, limit: int, model: str, db: Path) -> list[float]:
    run = f"pointwise-{model}"
    done = subprocess.run([sys.executable, "-m", "autorubric_local.cli", "grade", str(data), "--limit", str(limit),
                           "--model", model, "--db", str(db), "--run", run, "--allow-failures", "--mode", "score"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"grade with {model} failed: {done.stderr[-3000:]}")
    with sqlite3.connect(db) as con:
        run_id = con.execute("select id from runs where name = ?", (run,)).fetchone()[0]
        rows = con.execute("select item_index, score from items where run_id = ? order by item_index", (run_id,))
        return [float("nan") if s is None else s for _, s in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/autorubric-examples/q1.json")
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--rank-items", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cost-pairs", type=int, default=40)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="compare-ricechem-"))
    out.mkdir(parents=True, exist_ok=True)
    db = out / "compare.sqlite"

    dataset = json.loads(args.data.read_text(encoding="utf-8"))
    items, rubric, query = dataset["items"][: args.items], dataset["rubric"], dataset["prompt"]
    scores = [ta_score(item, rubric) for item in items]
    rng = random.Random(0)
    all_pairs = [(i, j) for i in range(len(items)) for j in range(i + 1, len(items))]
    chosen = rng.sample(all_pairs, args.pairs)
    prompts = [ComparisonPrompt(f"q1-{i}-{j}", query, {"a": items[i]["submission"], "b": items[j]["submission"]})
               for i, j in chosen]
    truth = {f"q1-{i}-{j}": human(scores[i], scores[j]) for i, j in chosen}
    ranked_prompts = []
    for k, item in enumerate(items[: args.rank_items]):
        words = item["submission"].split()
        ranked_prompts.append(ComparisonPrompt(f"rank-{k}", query, {
            "original": item["submission"], "half": " ".join(words[: max(1, len(words) // 2)]),
            "quarter": " ".join(words[: max(1, len(words) // 4)])}))
    report: dict[str, object] = {"data": args.data.name, "items": len(items), "pairs": len(chosen),
                                 "human": {v: sum(t == v for t in truth.values()) for v in ("a", "b", "tie")},
                                 "judges": {}}
    print(f"{len(chosen)} pairs of the first {len(items)} answers; human preference counts {report['human']}",
          flush=True)
    for model in args.models:
        judge = JudgeSpec(LLMConfig(model=model), model)
        started = time.perf_counter()
        stored = run_comparison(prompts, [judge], config=EvalConfig(db_path=db, experiment_name=f"pairs-{model}",
                                                                    show_progress=False))
        seconds = time.perf_counter() - started
        bias = position_bias(stored, judge_id=model, question="overall", n_bootstrap=2000, confidence=0.9)
        pair_result = {**agreement(stored, model, truth), "seconds": seconds,
                       "position_consistency": bias.measures.consistency,
                       "consistency_90": [bias.consistency_low, bias.consistency_high],
                       "conflicts_slot1_share": bias.measures.primacy}
        point = pointwise(args.data, args.items, model, db)
        implied = {f"q1-{i}-{j}": human(point[i], point[j]) for i, j in chosen}
        decided = [p for p in truth if truth[p] != "tie"]
        point_result = {"agreement": sum(implied[p] == truth[p] for p in truth) / len(truth),
                        "direction_agreement_on_human_decided": sum(implied[p] == truth[p] for p in decided) / len(decided),
                        "implied_ties": sum(v == "tie" for v in implied.values())}
        ranked = rank_systems(run_comparison(ranked_prompts, [judge], config=EvalConfig(
            db_path=db, experiment_name=f"rank-{model}", show_progress=False)), judge_id=model, question="overall",
            n_bootstrap=500, confidence=0.9)
        rank_result = [{"system": s.system, "score": round(s.score, 1), "interval_90": [round(s.score_low, 1),
                        round(s.score_high, 1)], "win_rate": round(s.win_rate, 3)} for s in ranked.systems]
        report["judges"][model] = {"pairwise": pair_result, "pointwise": point_result, "known_order": rank_result}
        print(f"{model}: pairwise swap agreement {pair_result['swap_agreement']:.3f}, soft direction "
              f"{pair_result['soft_direction_agreement']:.3f} on {pair_result['human_decided']} decided pairs, "
              f"position consistency {bias.measures.consistency:.3f} [{bias.consistency_low:.3f}, "
              f"{bias.consistency_high:.3f}], conflicts in slot 1 {bias.measures.primacy} ({seconds:.0f} s) | "
              f"pointwise agreement {point_result['agreement']:.3f}, direction {point_result['direction_agreement_on_human_decided']:.3f} "
              f"({point_result['implied_ties']} implied ties) | known order (truth original > half > quarter): "
              + ", ".join(f"{r['system']} {r['score']} {r['interval_90']}" for r in rank_result), flush=True)

    model = args.models[0]
    engine = load_engine(LLMConfig(model=model))
    tasks = [t for index, item in enumerate(comparison_items(plan_pairs(prompts[: args.cost_pairs]), [overall_question()]))
             for t in item.rotation_tasks(index, model, engine.format_chat, None)]
    one = [t for t in tasks if t.permutation_index == 0]
    cost: dict[str, list[dict[str, float]]] = {"one_order": [], "both_orders": []}
    for _ in range(args.repeats):
        for name, chosen_tasks in (("one_order", one), ("both_orders", tasks)):
            started = time.perf_counter()
            results = run_tasks(engine, chosen_tasks, mode=JudgeMode.SCORE, reasoning_first=False, explanation_tokens=0)
            seconds = time.perf_counter() - started
            computed = sum(r.usage.prompt_tokens - r.usage.cache_read_input_tokens for r in results)
            cost[name].append({"judgments": len(results), "seconds": seconds, "judgments_per_s": len(results) / seconds,
                               "prompt_tokens_computed": computed})
    summary = {name: {"judgments": runs[0]["judgments"],
                      "median_judgments_per_s": sorted(r["judgments_per_s"] for r in runs)[len(runs) // 2],
                      "prompt_tokens_computed": runs[0]["prompt_tokens_computed"]} for name, runs in cost.items()}
    report["cost"] = {"judge": model, "runs": cost, "summary": summary}
    print(f"cost ({model}, {len(one)} pairs): one order {summary['one_order']['median_judgments_per_s']:.2f} j/s, "
          f"{summary['one_order']['prompt_tokens_computed']} prompt tokens computed; both orders "
          f"{summary['both_orders']['median_judgments_per_s']:.2f} j/s, "
          f"{summary['both_orders']['prompt_tokens_computed']} prompt tokens computed", flush=True)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
