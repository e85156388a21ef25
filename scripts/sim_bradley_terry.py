"""Coverage of the Bradley-Terry cluster-bootstrap intervals, by simulation with known strengths.

Each simulated dataset has ``PROMPTS`` prompts; on each prompt every pair of the ``S`` systems
is compared once. A prompt has its own difficulty that shifts every system's strength by the
same amount plus a per-system random effect (``sd = PROMPT_SD``), so a prompt's comparisons are
correlated, as real ones are; outcomes are ties with probability ``TIE``, else Bradley-Terry
draws from the prompt's strengths. The truth is the population strength vector, centred.

For a random effect the population-level Bradley-Terry strengths are not exactly the mean
strengths (the logistic link attenuates them), so the truth used is the maximum-likelihood fit of
the expected outcome counts (the model fitted to an infinite number of prompts), computed once
by Monte Carlo over ``TRUTH_PROMPTS`` prompts.

Methods (:mod:`autorubric_local.comparisons.bradley_terry`): ``fit_bradley_terry`` with ties as
half a win (hard outcomes), ``bootstrap_bradley_terry`` with ``BOOT`` resamples, nominal 90%
percentile intervals (Arena-Hard-Auto's 5/95% quantiles). Coverage is per system and pooled.

Run: ``python scripts/sim_bradley_terry.py [--reps 400] [--boot 100] [--seed 20261201] [--out PATH]``;
writes ``scripts/results/sim_bradley_terry_2026-12-01.txt``. ``tests/test_comparisons_coverage.py``
runs the same function with fewer datasets and asserts on it.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import expit

from autorubric_local.comparisons.bradley_terry import (
    PairCounts,
    bootstrap_bradley_terry,
    fit_bradley_terry,
    pair_counts,
)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "scripts" / "results" / "sim_bradley_terry_2026-12-01.txt"
STRENGTHS = np.array([-0.8, -0.2, 0.3, 0.7])
PROMPTS = 100
PROMPT_SD = 0.5
TIE = 0.1
CONFIDENCE = 0.9
REPS, BOOT, SEED = 400, 100, 20261201
TRUTH_PROMPTS = 200_000


def _outcomes(rng: np.random.Generator, prompts: int) -> tuple[list, list, list, np.ndarray]:
    size = STRENGTHS.size
    pairs = [(i, j) for i in range(size) for j in range(i + 1, size)]
    effects = STRENGTHS + rng.normal(0.0, PROMPT_SD, size=(prompts, size))
    names, first, second, results = [], [], [], []
    tie = rng.random((prompts, len(pairs))) < TIE
    u = rng.random((prompts, len(pairs)))
    for k, (i, j) in enumerate(pairs):
        win = u[:, k] < expit(effects[:, i] - effects[:, j])
        outcome = np.where(tie[:, k, None], [0, 1, 0], np.where(win[:, None], [1, 0, 0], [0, 0, 1]))
        results.append(outcome)
        names += [f"q{q}" for q in range(prompts)]
        first += [f"s{i}"] * prompts
        second += [f"s{j}"] * prompts
    return names, first, second, np.concatenate(results)


def truth(seed: int = SEED) -> np.ndarray:
    """The centred population strengths: the fit to the expected outcome counts, whose win
    probabilities ``E[sigma(b_i + e_i - b_j - e_j)]`` are averaged over ``TRUTH_PROMPTS`` draws
    of the prompt effects."""
    rng = np.random.default_rng(seed - 1)
    effects = STRENGTHS + rng.normal(0.0, PROMPT_SD, size=(TRUTH_PROMPTS, STRENGTHS.size))
    pairs = [(i, j) for i in range(STRENGTHS.size) for j in range(i + 1, STRENGTHS.size)]
    counts = np.zeros((1, len(pairs), 3))
    for k, (i, j) in enumerate(pairs):
        win = float(expit(effects[:, i] - effects[:, j]).mean())
        counts[0, k] = ((1 - TIE) * win, TIE, (1 - TIE) * (1 - win))
    data = PairCounts(tuple(f"s{k}" for k in range(STRENGTHS.size)), np.array(pairs), counts, ("population",))
    return fit_bradley_terry(data).beta


@dataclass(frozen=True)
class Coverage:
    reps: int
    boot: int
    per_system: np.ndarray  # share of datasets whose interval covers each system's truth
    pooled: float
    width: np.ndarray  # mean interval width per system
    truth: np.ndarray


def coverage(reps: int, boot: int, seed: int, true_beta: np.ndarray | None = None) -> Coverage:
    """Simulate ``reps`` datasets and bootstrap each (``boot`` resamples)."""
    beta = truth(seed) if true_beta is None else true_beta
    rng = np.random.default_rng(seed)
    systems = [f"s{k}" for k in range(STRENGTHS.size)]
    covered = np.zeros((reps, STRENGTHS.size), dtype=bool)
    widths = np.zeros((reps, STRENGTHS.size))
    for r in range(reps):
        names, first, second, out = _outcomes(rng, PROMPTS)
        data = pair_counts(names, first, second, out[:, 0], out[:, 1], out[:, 2], systems=systems)
        got = bootstrap_bradley_terry(data, n_bootstrap=boot, confidence=CONFIDENCE, seed=int(rng.integers(2**31)))
        covered[r] = (got.ci_low <= beta) & (beta <= got.ci_high)
        widths[r] = got.ci_high - got.ci_low
    return Coverage(reps, boot, covered.mean(axis=0), float(covered.mean()), widths.mean(axis=0), beta)


def format_coverage(c: Coverage) -> str:
    lines = [f"{'system':<8}{'truth':>8}{'coverage':>10}{'width':>8}"]
    lines += [f"s{k:<7}{c.truth[k]:>8.3f}{c.per_system[k]:>10.3f}{c.width[k]:>8.3f}" for k in range(c.truth.size)]
    lines.append(f"pooled coverage {c.pooled:.3f} over {c.reps} datasets x {c.truth.size} systems "
                 f"(Monte-Carlo sd of one system's coverage {np.sqrt(0.09 / c.reps):.3f})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--boot", type=int, default=BOOT)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = coverage(args.reps, args.boot, args.seed)
    text = "\n".join([
        f"# python scripts/sim_bradley_terry.py --reps {args.reps} --boot {args.boot} --seed {args.seed}",
        f"# numpy {np.__version__}, Python {platform.python_version()}, {time.perf_counter() - start:.0f} s",
        f"{STRENGTHS.size} systems (strengths {STRENGTHS.tolist()}, per-prompt effect sd {PROMPT_SD}), "
        f"{PROMPTS} prompts x every pair, ties {TIE:.0%}; nominal {CONFIDENCE:.0%} percentile intervals "
        f"of the cluster bootstrap over prompts",
        "",
        format_coverage(result),
    ])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
