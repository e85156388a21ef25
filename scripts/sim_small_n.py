"""Coverage of `estimate`'s intervals at small label counts, by simulation with a known truth.

The estimates a user sees come from :func:`autorubric_local.estimates.api.estimate_targets`
(the path of `autorubric-local estimate`): each method's interval, then kept within the
target's range and never of zero width (:func:`~autorubric_local.estimates.methods.within_range`).
This script feeds that function simulated targets, so it measures what is printed.

Each dataset draws ``N_ITEMS`` items from a superpopulation whose MET rate is the truth: a
calibrated judge ``g ~ Beta(rate k, (1 - rate) k)`` (``k = 0.5``) and a human label
``Y ~ Bernoulli(g)``. Rates: 0.35, and 0.05, where few labels are often all 0 (at n = 5, 77% of
the time): the case in which the variance estimate is 0 and a normal interval has zero width.
Label counts n = 3, 5, 10, 20 (below the 50 from which ``scripts/sim_estimates.py`` shows
coverage), and:

- ``uniform``: the first n items labelled; methods classical (Wilson for 0/1 labels) and ppi
  (PPI++);
- ``active``: ``label select``'s rule (:func:`inclusion_probabilities` of the judge's
  uncertainty, budget n, :func:`draw`), the inverse-probability-weighted classical and PPI
  estimates (Zrnic & Candès 2024). A draw of fewer than 2 items gives no interval; those datasets
  are counted apart (``none``) and left out of the coverage.

Reported per setting: coverage of nominal 90%, share of zero-width intervals, share of bounds
outside [0, 1], mean width. ``tests/test_estimate_small_n.py`` runs the same function with
fewer datasets and asserts on it.

Run: ``python scripts/sim_small_n.py [--reps 2000] [--seed 20261201] [--out PATH]``; writes
``scripts/results/sim_small_n_2026-12-01.txt`` by default.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autorubric_local.estimates.api import estimate_targets
from autorubric_local.estimates.sampling import draw, inclusion_probabilities
from autorubric_local.estimates.targets import TargetData

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "scripts" / "results" / "sim_small_n_2026-12-01.txt"
N_ITEMS = 500
CONFIDENCE = 0.9
RATES = (0.35, 0.05)
LABELS = (3, 5, 10, 20)
SAMPLINGS = ("uniform", "active")
METHODS = ("classical", "ppi")
CONCENTRATION = 0.5
REPS = 2000
SEED = 20261201


@dataclass(frozen=True)
class SmallN:
    """One setting's results over ``reps`` datasets (coverage over those with an interval)."""

    rate: float
    n: int
    sampling: str
    reps: int
    coverage: dict[str, float]
    zero_width: dict[str, float]
    out_of_range: dict[str, float]
    width: dict[str, float]
    none: dict[str, float]  # share of datasets without an interval
    all_equal: float  # share of datasets whose labels are all equal


def run_setting(rate: float, n: int, sampling: str, reps: int, seed: int) -> SmallN:
    """Simulate ``reps`` datasets and read every method's printed interval."""
    rng = np.random.default_rng(seed)
    g = np.clip(rng.beta(rate * CONCENTRATION, (1 - rate) * CONCENTRATION, size=(reps, N_ITEMS)), 1e-9, 1 - 1e-9)
    y = (rng.random(g.shape) < g).astype(float)
    ids = tuple(f"i{k}" for k in range(N_ITEMS))
    tallies = {key: {m: [] for m in METHODS} for key in ("covered", "zero", "outside", "width", "none")}
    all_equal = 0
    for r in range(reps):
        design = None
        if sampling == "uniform":
            chosen = np.arange(N_ITEMS) < n
        else:
            pi = inclusion_probabilities(np.sqrt(g[r] * (1 - g[r])), n)
            chosen = draw(pi, int(rng.integers(0, 2**62)))
            design = {i: (float(p), bool(c)) for i, p, c in zip(ids, pi, chosen, strict=True)}
        labels = y[r][chosen]
        all_equal += bool(labels.size and np.ptp(labels) == 0)
        target = TargetData("met", "share_met", ids, g[r], np.where(chosen, y[r], np.nan), None, 0,
                            bounds=(0.0, 1.0))
        rows = {row.method: row for row in estimate_targets([target], confidence=CONFIDENCE,
                                                            methods_wanted=METHODS, design=design)}
        for m in METHODS:
            row = rows[m]
            if row.ci_low is None or row.ci_high is None:
                tallies["none"][m].append(1.0)
                continue
            tallies["none"][m].append(0.0)
            tallies["covered"][m].append(row.ci_low <= rate <= row.ci_high)
            tallies["zero"][m].append(row.ci_high - row.ci_low <= 0.0)
            tallies["outside"][m].append(row.ci_low < 0.0 or row.ci_high > 1.0)
            tallies["width"][m].append(row.ci_high - row.ci_low)

    def mean(key: str) -> dict[str, float]:
        return {m: float(np.mean(v)) if v else float("nan") for m, v in tallies[key].items()}

    return SmallN(rate, n, sampling, reps, mean("covered"), mean("zero"), mean("outside"), mean("width"),
                  mean("none"), all_equal / reps)


def small_n_table(reps: int, seed: int) -> list[SmallN]:
    """Every rate x sampling x label count; setting ``i`` uses seed ``seed + i``."""
    grid = [(rate, sampling, n) for rate in RATES for sampling in SAMPLINGS for n in LABELS]
    return [run_setting(rate, n, sampling, reps, seed + i) for i, (rate, sampling, n) in enumerate(grid)]


def format_table(settings: list[SmallN]) -> str:
    """The results as fixed-width text."""
    head = (f"{'rate':>5}{'sampling':>9}{'n':>4}{'reps':>6}{'all equal':>10} | {'coverage: classical':>19}{'ppi':>7}"
            f" | {'zero width':>10}{'outside':>8} | {'width: classical':>16}{'ppi':>7} | {'none: cl':>8}{'ppi':>6}")
    lines = [head, "-" * len(head)]
    for s in settings:
        lines.append(
            f"{s.rate:>5}{s.sampling:>9}{s.n:>4}{s.reps:>6}{s.all_equal:>10.3f} | "
            f"{s.coverage['classical']:>19.3f}{s.coverage['ppi']:>7.3f} | "
            f"{max(s.zero_width.values()):>10.3f}{max(s.out_of_range.values()):>8.3f} | "
            f"{s.width['classical']:>16.3f}{s.width['ppi']:>7.3f} | {s.none['classical']:>8.3f}{s.none['ppi']:>6.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    table = small_n_table(args.reps, args.seed)
    text = "\n".join([
        f"# python scripts/sim_small_n.py --reps {args.reps} --seed {args.seed}",
        f"# numpy {np.__version__}, Python {platform.python_version()}, {time.perf_counter() - start:.0f} s",
        f"calibrated judge, N = {N_ITEMS} items per dataset, nominal {CONFIDENCE:.0%} intervals as `estimate` "
        "prints them; 'zero width' and 'outside' are the largest share over the methods",
        "",
        format_table(table),
    ])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
