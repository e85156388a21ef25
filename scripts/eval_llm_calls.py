"""Single-call grading against one call per criterion (issue 53, AutoRubric's ``llm_calls``).

AutoRubric's cookbook (``docs/cookbook/single-call-grading.md``) reports that one call per item
cut prompt tokens about 6x on RiceChem and made its judge stricter (45% vs 56% MET). This
script measures the same on local judges: for each dataset (RiceChem q1's first ``--items``
answers, the essay set) and each bundled judge (SmolLM2-135M, Gemma 3 270M), it grades with
``llm_calls="per_criterion"`` and ``"per_item"`` in score mode (options in their own order,
seed 0), the two settings alternated per judge, and prints per run: judgments, prompt tokens
(summed over the items' reports), engine seconds (summed ``duration_seconds``), judgments per
engine second, micro Cohen's kappa and criterion accuracy against the human labels
(``compute_metrics``), and the share of binary verdicts that are MET.

On a shared 2-core machine the times are not benchmarks (other work may run); the token
counts, kappa and MET rates do not depend on load.

Run: ``python scripts/eval_llm_calls.py [--items 30] [--out DIR]``; the last line is one JSON
object with every figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autorubric_local.data.dataset import RubricDataset  # noqa: E402
from autorubric_local.graders import CriterionGrader  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.runner import EvalConfig, EvalRunner  # noqa: E402

JUDGES = ("smollm2-135m-instruct", "gemma3-270m")
DATA = ROOT.parent / "shared/data/autorubric-examples"


def measure(data: RubricDataset, model: str, calls: str, db: Path, name: str) -> dict[str, object]:
    grader = CriterionGrader(llm_config=LLMConfig(model=model), seed=0, shuffle_options=False, llm_calls=calls)
    result = EvalRunner(data, grader, EvalConfig(db_path=db, experiment_name=name, show_progress=False)).run_sync()
    reports = [i.report for i in result.item_results]
    verdicts = [c.final_verdict for r in reports for c in (r.report or []) if c.final_verdict is not None]
    judgments = sum(len(r.report or []) for r in reports)
    seconds = sum(i.duration_seconds for i in result.item_results)
    metrics = result.compute_metrics(data)
    return {"dataset": name.split(".")[0], "judge": model, "llm_calls": calls, "items": len(reports),
            "judgments": judgments, "prompt_tokens": sum(r.token_usage.prompt_tokens for r in reports if r.token_usage),
            "engine_seconds": round(seconds, 2), "judgments_per_s": round(judgments / seconds, 3) if seconds else None,
            "micro_kappa": metrics.micro_kappa, "criterion_accuracy": metrics.criterion_accuracy,
            "met_rate": sum(v.value == "MET" for v in verdicts) / len(verdicts) if verdicts else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=30, help="RiceChem q1 answers (the essay set is used whole)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="llm-calls-"))
    out.mkdir(parents=True, exist_ok=True)
    q1 = RubricDataset.from_file(str(DATA / "q1.json"))
    sets = {"q1": q1.with_items(q1.items[: args.items]),
            "essays": RubricDataset.from_file(str(DATA / "essay_grading_dataset.json"))}
    rows = []
    print("dataset | judge | llm_calls | items | judgments | prompt tokens | engine s | judgments/s | "
          "micro kappa | accuracy | MET rate")
    for set_name, data in sets.items():
        for turn, model in enumerate(JUDGES):
            order = ("per_criterion", "per_item") if turn % 2 == 0 else ("per_item", "per_criterion")
            for calls in order:
                row = measure(data, model, calls, out / "results.sqlite", f"{set_name}.{model}.{calls}")
                rows.append(row)
                print(" | ".join("n/a" if row[k] is None else (f"{row[k]:.3f}" if isinstance(row[k], float) else str(row[k]))
                                 for k in ("dataset", "judge", "llm_calls", "items", "judgments", "prompt_tokens",
                                           "engine_seconds", "judgments_per_s", "micro_kappa", "criterion_accuracy",
                                           "met_rate")), flush=True)
    for set_name in sets:
        for model in JUDGES:
            pair = {r["llm_calls"]: r for r in rows if r["dataset"] == set_name and r["judge"] == model}
            ratio = pair["per_criterion"]["prompt_tokens"] / max(pair["per_item"]["prompt_tokens"], 1)
            print(f"{set_name} {model}: per-criterion / per-item prompt tokens = {ratio:.2f}x")
    print(json.dumps({"items_q1": args.items, "rows": rows}))


if __name__ == "__main__":
    main()
