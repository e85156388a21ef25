"""Agreement of each real judge with the human TA labels of RiceChem q1 (first N items).

For each judge preset: ``autorubric-local grade q1.json --limit N --model M`` (score mode,
verdicts from label probabilities), then ``autorubric-local metrics --json --bootstrap --plot``
against the dataset's ground truth. Reports per judge: MET rate of the verdicts, criterion
accuracy, mean Cohen's kappa (with bootstrap 95% CI), AUROC and ECE of P(MET), and the mean
off-label mass (probability put outside the allowed labels' first tokens) over all judgments
and per criterion. The data stays outside the project: pass its path (default
``../shared/data/autorubric-examples/q1.json`` beside the checkout). Plots go to
``--plots/<model>/``.

Run: ``python scripts/eval_ricechem.py [--data PATH] [--limit 100] [--out DIR] [--plots DIR]``.
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "autorubric_local.cli", *args], capture_output=True, text=True)


def verdict_rates(db: Path, run: str) -> dict[str, float]:
    """Share of each stored verdict among the run's judgments (errors counted as 'error')."""
    with sqlite3.connect(db) as con:
        run_id = con.execute("select id from runs where name = ?", (run,)).fetchone()[0]
        rows = con.execute(
            "select coalesce(verdict, 'error'), count(*) from judgments where run_id = ? group by 1", (run_id,)
        ).fetchall()
        masses = [m for (m,) in con.execute(
            "select off_label_mass from judgments where run_id = ? and off_label_mass is not null", (run_id,))]
    total = sum(n for _, n in rows)
    rates = {verdict: n / total for verdict, n in rows}
    rates["mean_off_label_mass_all"] = sum(masses) / len(masses) if masses else float("nan")
    rates["judgments"] = total
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/autorubric-examples/q1.json")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None, help="folder for the results database (default: temp)")
    parser.add_argument("--plots", type=Path, default=ROOT / "scripts/results/ricechem_plots")
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    args = parser.parse_args(argv)

    out = args.out or Path(tempfile.mkdtemp(prefix="ricechem-"))
    out.mkdir(parents=True, exist_ok=True)
    db = out / "ricechem.sqlite"
    report: dict[str, dict[str, object]] = {}
    for model in args.models:
        run = f"ricechem-q1-{model}"
        graded = cli("grade", str(args.data), "--limit", str(args.limit), "--model", model, "--db", str(db),
                     "--run", run, "--allow-failures", "--mode", "score")
        if graded.returncode != 0:
            print(graded.stdout[-2000:], graded.stderr[-4000:], file=sys.stderr)
            raise SystemExit(f"grading with {model} failed (exit {graded.returncode})")
        measured = cli("metrics", run, "--db", str(db), "--json", "--bootstrap", "--seed", "0",
                       "--plot", str(args.plots / model))
        if measured.returncode != 0:
            print(measured.stderr[-4000:], file=sys.stderr)
            raise SystemExit(f"metrics for {model} failed (exit {measured.returncode})")
        metrics = json.loads(measured.stdout)
        calibration = metrics.get("calibration") or {}
        kappa_ci = (((metrics.get("bootstrap") or {}).get("metrics") or {}).get("mean_kappa") or {}).get("ci") or {}
        report[model] = {
            **verdict_rates(db, run),
            "accuracy": metrics["criterion_accuracy"],
            "mean_kappa": metrics["mean_kappa"],
            "mean_kappa_ci": [kappa_ci.get("lower"), kappa_ci.get("upper")],
            "auroc": calibration.get("auroc"),
            "ece": calibration.get("ece"),
            "off_label_mass_per_criterion": {
                c["name"]: c.get("mean_off_label_mass") for c in metrics.get("per_criterion", [])
            },
        }
        r = report[model]
        print(f"{model}: MET {r.get('MET', 0):.2f} UNMET {r.get('UNMET', 0):.2f} CANNOT_ASSESS "
              f"{r.get('CANNOT_ASSESS', 0):.2f} error {r.get('error', 0):.2f} | accuracy {r['accuracy']:.3f} "
              f"kappa {r['mean_kappa']:.3f} CI {r['mean_kappa_ci']} AUROC {r['auroc']} ECE {r['ece']} "
              f"| mean off-label mass {r['mean_off_label_mass_all']:.3f}", flush=True)
    print(json.dumps({"data": str(args.data.name), "limit": args.limit, "judges": report}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
