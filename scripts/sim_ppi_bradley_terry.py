"""Coverage and width of the judge-corrected (PPI++) and classical Bradley-Terry coefficient
intervals, by simulation with known strengths and a biased judge.

Each simulated dataset: ``S`` systems with strengths ``BETA`` (the first, the reference, at 0);
``COMPARISONS`` comparisons cycling through every pair, each shown in a random order (``a`` and
``b``). Each comparison has its own probability ``q`` that a human prefers ``a`` when not calling
a tie, ``q ~ Beta(KAPPA m, KAPPA (1 - m))`` with ``m = (sigma(x . beta) - TIE / 2) / (1 - TIE)``
(the two responses to this prompt differ more or less than their systems do on average); the
human calls a tie with probability ``TIE``, else prefers ``a`` with probability ``q``. So
``E[Y | x] = sigma(x . beta)`` exactly, a tie counting half a win: the logistic target is
``BETA`` itself. The judge is informative but biased: it sees this comparison's ``q`` with noise,
``f = sigma(SHRINK logit(q) + SLOT_BIAS + N(0, NOISE²))`` (it under-separates the responses and
favours whichever is shown as ``a``). ``LABELLED`` comparisons, drawn uniformly at random, get
the human label.

Method: :func:`autorubric_local.comparisons.corrected_bt.corrected_bradley_terry` on a stored
comparison built from these judgments, nominal 90% intervals. Reported per non-reference
coefficient: coverage of the truth by the classical and the PPI++ interval, and their mean
widths; with the Monte-Carlo standard error of a coverage, ``sqrt(0.09 / reps)``.

Run: ``python scripts/sim_ppi_bradley_terry.py [--reps 1000] [--seed 20261202] [--out PATH]``;
writes ``scripts/results/sim_ppi_bradley_terry_2026-12-02.txt``.
``tests/test_compare_corrected_bt.py`` runs :func:`coverage` with fewer datasets and asserts on it.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import expit, logit

from autorubric_local.comparisons.corrected import PreferenceLabel
from autorubric_local.comparisons.corrected_bt import corrected_bradley_terry
from autorubric_local.comparisons.judging import PairJudgment, StoredComparison

BETA = np.array([0.0, 0.6, -0.4])
COMPARISONS = 300
LABELLED = 80
TIE = 0.1
KAPPA = 2.0
SHRINK, SLOT_BIAS, NOISE = 0.7, 0.3, 0.5
CONFIDENCE = 0.9
SEED = 20261202
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "sim_ppi_bradley_terry_2026-12-02.txt"
SYSTEMS = tuple(f"s{k}" for k in range(len(BETA)))


def _dataset(rng: np.random.Generator) -> tuple[StoredComparison, list[PreferenceLabel]]:
    pairs = [(i, j) for i in range(len(BETA)) for j in range(i + 1, len(BETA))]
    chosen = np.array([pairs[k % len(pairs)] for k in range(COMPARISONS)])
    flip = rng.random(COMPARISONS) < 0.5
    a = np.where(flip, chosen[:, 1], chosen[:, 0])
    b = np.where(flip, chosen[:, 0], chosen[:, 1])
    margin = BETA[a] - BETA[b]
    m = (expit(margin) - TIE / 2) / (1 - TIE)
    q = np.clip(rng.beta(KAPPA * m, KAPPA * (1 - m)), 1e-6, 1 - 1e-6)
    tie = rng.random(COMPARISONS) < TIE
    y = np.where(tie, 0.5, (rng.random(COMPARISONS) < q).astype(float))
    f = expit(SHRINK * logit(q) + SLOT_BIAS + rng.normal(0.0, NOISE, COMPARISONS))
    judgments = tuple(PairJudgment(f"p{k}", f"p{k}", SYSTEMS[a[k]], SYSTEMS[b[k]], "j", "overall",
                                   {"1": float(f[k]), "2": float(1 - f[k]), "tie": 0.0},
                                   {"1": float(1 - f[k]), "2": float(f[k]), "tie": 0.0})
                      for k in range(COMPARISONS))
    description = {"systems": list(SYSTEMS), "questions": [{"name": "overall", "text": "", "weight": 0.0}],
                   "pairs": []}
    stored = StoredComparison("id", "sim", description, ("j",), judgments, "finished")
    winner = {1.0: "a", 0.5: "tie", 0.0: "b"}
    labels = [PreferenceLabel(f"p{k}", SYSTEMS[a[k]], SYSTEMS[b[k]], winner[float(y[k])])
              for k in rng.choice(COMPARISONS, size=LABELLED, replace=False)]
    return stored, labels


@dataclass(frozen=True)
class Coverage:
    """Per non-reference coefficient (``BETA[1:]``): coverage and mean width, classical and PPI++."""

    reps: int
    classical: tuple[float, ...]
    ppi: tuple[float, ...]
    width_classical: tuple[float, ...]
    width_ppi: tuple[float, ...]
    mean_lam: float


def coverage(reps: int, seed: int = SEED) -> Coverage:
    """Simulate ``reps`` datasets (module docstring) and measure the intervals."""
    rng = np.random.default_rng(seed)
    d = len(BETA) - 1
    hit = np.zeros((2, d))
    width = np.zeros((2, d))
    lams = []
    for _ in range(reps):
        stored, labels = _dataset(rng)
        fitted = corrected_bradley_terry(stored, labels, judge_id="j", confidence=CONFIDENCE)
        for k, c in enumerate(fitted.coefficients[1:]):
            for m, interval in enumerate((c.classical, c.ppi)):
                assert interval.ci_low is not None and interval.ci_high is not None
                hit[m, k] += interval.ci_low <= BETA[k + 1] <= interval.ci_high
                width[m, k] += interval.ci_high - interval.ci_low
        lams.append(fitted.coefficients[1].ppi.lam)
    return Coverage(reps, tuple(hit[0] / reps), tuple(hit[1] / reps), tuple(width[0] / reps),
                    tuple(width[1] / reps), float(np.mean(lams)))


def format_coverage(got: Coverage) -> str:
    se = (0.09 / got.reps) ** 0.5
    lines = [f"{got.reps} datasets; nominal {CONFIDENCE:.0%}; Monte-Carlo se of a coverage {se:.3f}; "
             f"mean tuned lam {got.mean_lam:.3f}",
             "coefficient  truth   classical cover  width   PPI++ cover  width   width ratio PPI++/classical"]
    for k in range(len(BETA) - 1):
        lines.append(f"{SYSTEMS[k + 1]:<12} {BETA[k + 1]:+.2f}   {got.classical[k]:.3f}            "
                     f"{got.width_classical[k]:.3f}   {got.ppi[k]:.3f}        {got.width_ppi[k]:.3f}   "
                     f"{got.width_ppi[k] / got.width_classical[k]:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    got = coverage(args.reps, args.seed)
    header = (f"# scripts/sim_ppi_bradley_terry.py --reps {args.reps} --seed {args.seed}\n"
              f"# strengths {BETA.tolist()} (reference {SYSTEMS[0]}), {COMPARISONS} comparisons, {LABELLED} "
              f"labelled, ties {TIE}; q ~ Beta({KAPPA} m, {KAPPA} (1 - m)); judge f = sigma({SHRINK} logit(q) + {SLOT_BIAS} + "
              f"N(0, {NOISE}^2))\n"
              f"# python {platform.python_version()}, {time.perf_counter() - start:.0f} s")
    text = header + "\n" + format_coverage(got)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
