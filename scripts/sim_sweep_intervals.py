"""Coverage of a sweep's Grade Score intervals at small item counts, by simulation with a known truth.

A sweep judges each item's N options in their N cyclic rotations and prints, per judge and
criterion, the mean Grade Score over items with an interval from
:func:`autorubric_local.bias.aggregate.bootstrap_mean` (percentile bootstrap; the bounded-range
Wilson interval where the bootstrap one would have zero width). This script feeds that function
the per-item Grade Scores (:func:`~autorubric_local.bias.grade_score.grade_scores`) of simulated
judges whose expected Grade Score is computed exactly, so it measures what ``sweep`` prints.

Judges pick a shown position independently in each rotation:

- ``random``: uniformly;
- ``first-biased``: the first shown position with probability 0.5, else uniformly;
- ``content``: the item's option 0 (wherever it is shown) with probability 0.7, else uniformly.

The truth is the expectation of one item's Grade Score, summed over all N^N choices of
positions with their probabilities. Item counts n = 3, 6, 10, 20, 50; N = 3 and 4 options;
the CLI's defaults (1000 resamples, 95%).

Reported per setting: coverage of nominal 95%, share of Wilson fallbacks, mean width. First,
the chance level docs/validity.md tabulates: the exact expected Grade Score of the ``random``
judge for N = 2 to 5 options.

Run: ``python scripts/sim_sweep_intervals.py [--reps 1000] [--seed 20261202] [--out PATH]``; writes
``scripts/results/sim_sweep_intervals_2026-12-02.txt`` by default.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from autorubric_local.bias.aggregate import IntervalMethod, bootstrap_mean
from autorubric_local.bias.grade_score import RotationOutcome, grade_scores

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "scripts" / "results" / "sim_sweep_intervals_2026-12-02.txt"
ITEMS = (3, 6, 10, 20, 50)
OPTIONS = (3, 4)
CHANCE_OPTIONS = (2, 3, 4, 5)
CONFIDENCE = 0.95
N_BOOTSTRAP = 1000
REPS = 1000
SEED = 20261202

Policy = Callable[[int, tuple[int, ...]], list[float]]
"""``policy(n, order)``: the probability of each shown position in a rotation showing ``order``."""


def uniform(n: int, order: tuple[int, ...]) -> list[float]:
    return [1.0 / n] * n


def first_biased(n: int, order: tuple[int, ...]) -> list[float]:
    return [0.5 * (k == 0) + 0.5 / n for k in range(n)]


def content(n: int, order: tuple[int, ...]) -> list[float]:
    return [0.7 * (order[k] == 0) + 0.3 / n for k in range(n)]


JUDGES: dict[str, Policy] = {"random": uniform, "first-biased": first_biased, "content": content}


def item_distribution(n: int, policy: Policy) -> tuple[np.ndarray, np.ndarray]:
    """Every possible Grade Score of one item and its probability (all N^N choices of positions)."""
    orders = [tuple((k + r) % n for k in range(n)) for r in range(n)]
    probabilities = [policy(n, order) for order in orders]
    values, weights = [], []
    for picks in itertools.product(range(n), repeat=n):
        outcomes = [RotationOutcome(order, p, tuple(float(k == p) for k in range(n))) for order, p in zip(orders, picks)]
        values.append(grade_scores(outcomes).grade_score)
        weights.append(float(np.prod([probabilities[r][p] for r, p in enumerate(picks)])))
    return np.asarray(values, dtype=float), np.asarray(weights) / sum(weights)


def run_setting(values: np.ndarray, weights: np.ndarray, n_items: int, reps: int, seed: int) -> tuple[float, float, float]:
    """Coverage, share of Wilson fallbacks and mean width over ``reps`` sweeps of ``n_items`` items."""
    truth = float(values @ weights)
    rng = np.random.default_rng(seed)
    covered = wilson = 0
    widths = []
    for rep in range(reps):
        sample = values[rng.choice(len(values), size=n_items, p=weights)]
        estimate = bootstrap_mean(sample.tolist(), n_bootstrap=N_BOOTSTRAP, confidence=CONFIDENCE, seed=rep,
                                  key="grade_score")
        assert estimate.ci_low is not None and estimate.ci_high is not None
        covered += estimate.ci_low <= truth <= estimate.ci_high
        wilson += estimate.method is IntervalMethod.WILSON
        widths.append(estimate.ci_high - estimate.ci_low)
    return covered / reps, wilson / reps, float(np.mean(widths))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    lines = [f"# {__doc__.splitlines()[0]}",
             f"# python {platform.python_version()}, numpy {np.__version__}; reps {args.reps}, seed {args.seed}, "
             f"{N_BOOTSTRAP} resamples, nominal {CONFIDENCE:.0%}"]
    for n in CHANCE_OPTIONS:
        values, weights = item_distribution(n, uniform)
        lines.append(f"chance level (random judge), N = {n}: expected Grade Score {float(values @ weights):.3f}")
    lines += [f"{'judge':<13} {'N':>2} {'truth':>6} {'items':>5} {'coverage':>9} {'wilson':>7} {'width':>6}"]
    for (name, policy), n in itertools.product(JUDGES.items(), OPTIONS):
        values, weights = item_distribution(n, policy)
        for k, n_items in enumerate(ITEMS):
            coverage, wilson, width = run_setting(values, weights, n_items, args.reps, args.seed + 100 * n + k)
            lines.append(f"{name:<13} {n:>2} {float(values @ weights):>6.3f} {n_items:>5} {coverage:>9.3f} "
                         f"{wilson:>7.3f} {width:>6.3f}")
            print(lines[-1], flush=True)
    lines.append(f"# {time.perf_counter() - started:.0f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
