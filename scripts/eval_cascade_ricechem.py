"""A confidence cascade on real data (issue 53): SmolLM2 first, Gemma 3 270M on what it escalates.

RiceChem q1 (AutoRubric's example data, teaching assistants' labels): the first ``--items``
answers graded by each bundled judge alone (score mode, one ``grade`` run each, stored in
``--out``), then :func:`autorubric_local.cascades.calibrate_escalation` over the thresholds
0.00, 0.05, ..., 1.00: for each threshold the escalation rate, the cascade run's criterion
accuracy against the labels (``compute_metrics(...).criterion_accuracy``), the small judge's
accuracy on the criteria it kept and on those it deferred, the large judge's on the deferred
ones, and the estimated compute time (seconds of engine time: the small run's plus the large
run's pro-rated by the share escalated). ``EscalationCurve.best`` picks a point (tolerance
0.01). The two judges alone are the points at 0 (nothing escalated but failures and
abstentions) and 1 (nearly everything).

Measured on the runs it picks from, so the chosen point is optimistic (the docstring of
``EscalationCurve`` says why); this is a picture of the trade, not a held-out figure.

Run: ``python scripts/eval_cascade_ricechem.py [--data PATH] [--items 40] [--out DIR]``. The
last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autorubric_local.cascades import calibrate_escalation  # noqa: E402
from autorubric_local.data.dataset import RubricDataset  # noqa: E402
from autorubric_local.graders import CriterionGrader  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.runner import EvalConfig, EvalRunner  # noqa: E402

SMALL, LARGE = "smollm2-135m-instruct", "gemma3-270m"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/autorubric-examples/q1.json")
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="cascade-ricechem-"))
    out.mkdir(parents=True, exist_ok=True)
    full = RubricDataset.from_file(str(args.data))
    data = full.with_items(full.items[: args.items])
    runs = {}
    for model in (SMALL, LARGE):
        started = time.perf_counter()
        grader = CriterionGrader(llm_config=LLMConfig(model=model), seed=0)
        config = EvalConfig(db_path=out / "results.sqlite", experiment_name=f"q1-{model}", show_progress=False)
        runs[model] = EvalRunner(data, grader, config).run_sync()
        judgments = sum(len(i.report.report or []) for i in runs[model].item_results)
        engine = sum(i.duration_seconds for i in runs[model].item_results)
        print(f"{model}: {len(runs[model].item_results)} items, {judgments} judgments, {engine:.1f} s of engine "
              f"time, {time.perf_counter() - started:.1f} s (wall, this run or read back)", flush=True)
    curve = calibrate_escalation(data, runs[SMALL], runs[LARGE])
    header = ["threshold", "escalated", "accuracy", "small kept", "small deferred", "large deferred", "engine s"]
    print(" | ".join(header))

    def cell(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    for p in curve.points:
        print(" | ".join([f"{p.threshold:.2f}", cell(p.escalation_rate), cell(p.metric), cell(p.dm_accuracy_kept),
                          cell(p.dm_accuracy_escalated), cell(p.fallback_accuracy_escalated),
                          f"{p.compute_seconds:.1f}"]))
    best = curve.best(tolerance=0.01)
    print(f"best (tolerance 0.01): threshold {best.threshold:.2f}, escalation rate {cell(best.escalation_rate)}, "
          f"accuracy {cell(best.metric)}")
    print(json.dumps({"items": len(data), "small": SMALL, "large": LARGE, "data": str(args.data),
                      "points": [p.model_dump() for p in curve.points], "best": best.model_dump()}))


if __name__ == "__main__":
    main()
