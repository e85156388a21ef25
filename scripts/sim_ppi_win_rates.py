"""Coverage and width of the judge-corrected win rates `ranking --labels` prints (issue 50):
the same simulation as ``tests/test_compare.py``'s coverage test, through
:func:`autorubric_local.comparisons.corrected.corrected_win_rates`.

300 comparisons of s1 and s2. A human prefers s1 with a prompt's own probability q ~ Beta(3, 2)
or calls a tie (10%), so the true win rate is 0.1 * 0.5 + 0.9 * 0.6 = 0.59. The judge's
balanced preference is q plus normal noise (sd ``--noise``), clipped to [0.01, 0.99].
``--labels`` comparisons drawn uniformly are labelled. Reports, over ``--trials`` seeded
datasets, the coverage of the 90% PPI++ and classical intervals and their mean widths.

Run: ``python scripts/sim_ppi_win_rates.py [--trials 300] [--labels 60] [--noise 0.15]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autorubric_local.comparisons.corrected import PreferenceLabel, corrected_win_rates  # noqa: E402
from autorubric_local.comparisons.judging import PairJudgment, StoredComparison  # noqa: E402

TRUTH = 0.59


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--labels", type=int, default=60)
    parser.add_argument("--noise", type=float, default=0.15)
    parser.add_argument("--comparisons", type=int, default=300)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(7)
    n = args.comparisons
    covered = {"ppi": 0, "classical": 0}
    widths: dict[str, list[float]] = {"ppi": [], "classical": []}
    description = {"systems": ["s1", "s2"], "questions": [{"name": "overall", "text": "", "weight": 0.0}], "pairs": []}
    for _ in range(args.trials):
        q = rng.beta(3, 2, size=n)
        tie = rng.random(n) < 0.1
        y = np.where(tie, 0.5, (rng.random(n) < q).astype(float))
        f = np.clip(q + rng.normal(0, args.noise, n), 0.01, 0.99)
        judgments = tuple(PairJudgment(f"p{i} s1 vs s2", f"p{i}", "s1", "s2", "j", "overall",
                                       {"1": v, "2": 1 - v, "tie": 0.0}, {"1": 1 - v, "2": v, "tie": 0.0})
                          for i, v in enumerate(map(float, f)))
        stored = StoredComparison("id", "sim", description, ("j",), judgments, "finished")
        chosen = rng.choice(n, size=args.labels, replace=False)
        labels = [PreferenceLabel(f"p{i}", "s1", "s2", "tie" if y[i] == 0.5 else ("a" if y[i] == 1 else "b"))
                  for i in chosen]
        (rate,) = corrected_win_rates(stored, labels, judge_id="j")
        for name, interval in (("ppi", rate.ppi), ("classical", rate.classical)):
            covered[name] += interval.ci_low <= TRUTH <= interval.ci_high
            widths[name].append(interval.ci_high - interval.ci_low)
    result = {"trials": args.trials, "comparisons": n, "labels": args.labels, "noise": args.noise, "truth": TRUTH,
              "coverage_90": {k: v / args.trials for k, v in covered.items()},
              "mean_width": {k: float(np.mean(v)) for k, v in widths.items()}}
    print(f"coverage of 90% intervals: PPI++ {result['coverage_90']['ppi']:.3f}, classical "
          f"{result['coverage_90']['classical']:.3f}; mean width PPI++ {result['mean_width']['ppi']:.4f}, classical "
          f"{result['mean_width']['classical']:.4f}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
