"""Do the two calibrations help a weak judge? RiceChem q1 graded by one judge twice, with and
without contextual calibration, then each run's per-criterion rules fitted on a training split.

1. ``autorubric-local grade q1.json --model M`` (score mode), once plain and once with
   ``--contextual-calibration`` (content-free inputs '', 'N/A', '[SUBMISSION]').
2. ``autorubric-local metrics --json`` of both runs against the TA labels: MET rate of the
   verdicts over the compared pairs (CANNOT_ASSESS excluded, as the metrics do), criterion
   accuracy, mean Cohen's kappa, AUROC and ECE of P(MET) over all items; and the share of each
   stored verdict among all judgments.
3. ``autorubric-local calibrate --json`` of both runs with each method (threshold, platt,
   isotonic; the same split: --test-size, --seed): per criterion, held-out kappa before -> after.

Run: ``python scripts/eval_calibration.py [--data PATH] [--limit N] [--model M] [--out DIR]``.
The last line printed is one JSON object with every figure. Grading is the slow part (about
2,600 judgments per run for the whole of q1 on SmolLM2-135M; set ``OMP_NUM_THREADS=1`` on a
busy 2-core machine). Running it again with the same ``--out`` resumes the graded runs.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("threshold", "platt", "isotonic")


def cli(*args: str) -> dict[str, object]:
    """Run one CLI command; its stdout as JSON."""
    done = subprocess.run([sys.executable, "-m", "autorubric_local.cli", *args], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        print(done.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"{args[0]} failed (exit {done.returncode})")
    return json.loads(done.stdout) if done.stdout.strip().startswith(("{", "[")) else {}


def verdict_shares(db: Path, run: str) -> dict[str, float]:
    """Share of each stored verdict among the run's judgments (errors counted as 'error')."""
    with sqlite3.connect(db) as con:
        run_id = con.execute("select id from runs where name = ?", (run,)).fetchone()[0]
        rows = con.execute("select coalesce(verdict, 'error'), count(*) from judgments where run_id = ? group by 1",
                           (run_id,)).fetchall()
    total = sum(n for _, n in rows)
    return {verdict: n / total for verdict, n in sorted(rows)}


def _mean(values: list[float | None]) -> float | None:
    """Mean of the defined values (a kappa is undefined when both raters are constant)."""
    defined = [v for v in values if v is not None]
    return mean(defined) if defined else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/autorubric-examples/q1.json")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--out", type=Path, default=None, help="folder for the results database (default: temp)")
    parser.add_argument("--test-size", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="calibration-"))
    out.mkdir(parents=True, exist_ok=True)
    db = out / "calibration.sqlite"
    limit = ["--limit", str(args.limit)] if args.limit else []
    report: dict[str, object] = {}
    for name, flags in (("plain", []), ("contextual", ["--contextual-calibration"])):
        run = f"q1-{name}"
        cli("grade", str(args.data), "--model", args.model, "--db", str(db), "--run", run, "--mode", "score",
            "--no-progress", "--allow-failures", "--json", *limit, *flags)
        metrics = cli("metrics", run, "--db", str(db), "--json", "--no-save")
        calibration = metrics.get("calibration") or {}
        binary = [c for c in metrics.get("per_criterion") or [] if c["scale"] == "binary"]  # type: ignore[union-attr]
        # Share of MET verdicts over the compared pairs (column MET of each confusion matrix).
        met = sum(row[c["labels"].index("MET")] for c in binary for row in c["confusion_matrix"])
        entry: dict[str, object] = {
            "accuracy": metrics.get("criterion_accuracy"), "mean_kappa": metrics.get("mean_kappa"),
            "auroc": calibration.get("auroc"), "ece": calibration.get("ece"),
            "met_rate": met / max(1, sum(c["support"] for c in binary)),
            "verdict_shares": verdict_shares(db, run),
        }
        for method in METHODS:
            fitted = cli("calibrate", run, "--db", str(db), "--method", method, "--test-size", str(args.test_size),
                         "--seed", str(args.seed), "--json")
            held = fitted["held_out"]["criteria"]  # type: ignore[index]
            entry[method] = {
                "criteria": len(held),
                **{f"{name}_{when}": _mean([c[when][name] for c in held])  # type: ignore[index]
                   for name in ("kappa", "accuracy", "auroc", "ece") for when in ("before", "after")},
            }
        report[name] = entry
        print(f"{name}: {json.dumps(entry)}", flush=True)
    print(json.dumps({"data": args.data.name, "limit": args.limit, "model": args.model, "test_size": args.test_size,
                      "seed": args.seed, "runs": report}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
