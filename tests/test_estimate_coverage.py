"""Coverage of the judge-corrected estimates, by simulation with a known truth.

The simulation lives in ``scripts/sim_estimates.py`` (its docstring describes the judges and the
methods); this module runs it with the script's default seeds and sizes and asserts on the
results. Every dataset draws its 2,000 items afresh from a superpopulation whose MET rate, 0.35,
is the truth; nominal 90% intervals (alpha = 0.1); the first n items are the uniformly sampled
labels for classical and PPI++, and active inference labels n items in expectation, chosen by the
judge's uncertainty. 2,000 datasets per setting with n >= 50 (Monte-Carlo sd of a coverage near
0.9: 0.0067), 500 with n = 20.

Measured by this module (``pytest -s`` prints them; the same numbers as
``scripts/results/sim_estimates_2026-11-26.txt``; numpy 2.4.6). ``plug-in`` is active inference
with the paper's plug-in standard error instead of the jackknife that :func:`active_mean` uses
with a tuned lambda; judge bias is the mean of ``judge_mean`` minus the truth; widths are mean
full widths::

    judge         n  reps | coverage: classical   ppi active plug-in | width: classical   ppi active | judge bias
    useless      20   500 |               0.908 0.830  0.864   0.838 |            0.324 0.338  0.402 |     +0.150
    useless      50  2000 |               0.922 0.890  0.900   0.874 |            0.214 0.218  0.255 |     +0.150
    useless     200  2000 |               0.903 0.888  0.886   0.881 |            0.110 0.111  0.124 |     +0.150
    always-met   20   500 |               0.924 0.864  0.912   0.868 |            0.323 0.338  0.375 |     +0.550
    always-met   50  2000 |               0.924 0.885  0.896   0.880 |            0.214 0.218  0.231 |     +0.550
    always-met  200  2000 |               0.910 0.893  0.883   0.883 |            0.110 0.110  0.114 |     +0.550
    shifted      20   500 |               0.910 0.838  0.884   0.786 |            0.323 0.222  0.281 |     +0.154
    shifted      50  2000 |               0.930 0.874  0.905   0.861 |            0.214 0.147  0.154 |     +0.154
    shifted     200  2000 |               0.900 0.895  0.906   0.897 |            0.110 0.078  0.074 |     +0.154
    good         20   500 |               0.900 0.850  0.914   0.874 |            0.323 0.196  0.171 |     +0.001
    good         50  2000 |               0.925 0.875  0.920   0.901 |            0.214 0.129  0.106 |     +0.000
    good        200  2000 |               0.912 0.898  0.896   0.892 |            0.110 0.070  0.058 |     +0.000

    Rogan-Gladen (0/1 judge, sensitivity 0.9, specificity 0.6; naive MET rate +0.225 off):
    n = 50: coverage 0.939, bias -0.007, width 0.422
    n = 200: coverage 0.910, bias -0.003, width 0.222

What is asserted, and why:

- active: coverage in [0.87, 0.93] for n >= 50;
- classical (Wilson, as the labels are 0/1): every judge sees Binomial(n, 0.35) labels, so its
  coverage is known exactly, 0.926 at n = 50 and 0.912 at n = 200 (binomial sums); asserted in
  [0.87, 0.93], and the simulated coverage within 3 Monte-Carlo sds of it (0.926 sits so close to
  0.93 that a simulated figure may land either side);
- PPI++: ``ppi_mean`` reproduces ``ppi_py`` (population variances, normal quantile), whose
  interval at n = 50 with an informative judge covers 0.877 (20,000 datasets per judge in the
  script, Monte-Carlo sd 0.002): near the edge of 0.87; the seeded 2,000-dataset figures are
  asserted in [0.87, 0.93] as they are; at n = 200 it is 0.888-0.898;
- n = 20: computed and printed (``pytest -s``), asserted only loosely (>= 0.80): PPI++ covers
  0.83-0.86 there and active 0.86-0.91, CLT-based intervals with 20 labels;
- the judge alone: biased beyond any interval for the always-MET judge (bias > 0.2, and > 20 sds
  of its own sampling noise, so a zero-width interval at it never covers);
- widths: PPI++ at most 5% wider than classical on average for every judge (n >= 50), and
  narrower than 0.8x for the good judge;
- Rogan-Gladen: near the truth (|bias| < 0.02) where the naive judge rate is 0.22 off, coverage
  within [0.85, 0.97] (loose: the delta method is conservative with 50 labels);
- the Wilson decision for 0/1 labels (exact binomial sums, no simulation): the CLT interval's
  coverage at n = 50 is below 0.87 for a rate of 0.1 or 0.9, Wilson's is inside [0.87, 0.93].
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import sim_estimates as sim  # noqa: E402

MC_SD = math.sqrt(0.9 * 0.1 / sim.REPS)
BAND = (0.87, 0.93)


@pytest.fixture(scope="module")
def table() -> list[sim.Setting]:
    settings = sim.coverage_table(sim.REPS, sim.SEED, sim.REPS_SMALL)
    print("\n" + sim.format_compact(settings))
    return settings


def _large(table: list[sim.Setting]) -> list[sim.Setting]:
    return [s for s in table if s.n >= 50]


def test_active_covers_at_n_ge_50(table: list[sim.Setting]) -> None:
    misses = [f"{s.judge} n={s.n}: {s.coverage['active']:.3f}" for s in _large(table)
              if not BAND[0] <= s.coverage["active"] <= BAND[1]]
    assert not misses, f"active coverage outside {BAND}: {misses}"


def test_classical_covers_at_n_ge_50(table: list[sim.Setting]) -> None:
    # every judge sees the same Binomial(n, 0.35) labels, so the exact coverage is known
    for n in {s.n for s in _large(table)}:
        exact = sim.exact_binary_coverage(n, sim.TRUTH)
        assert BAND[0] <= exact <= BAND[1], (n, exact)
        for s in _large(table):
            if s.n == n:
                assert abs(s.coverage["classical"] - exact) <= 3 * MC_SD, (s.judge, n, exact)


def test_ppi_covers_at_n_ge_50(table: list[sim.Setting]) -> None:
    # The issue's band itself: the simulation is seeded, so this is deterministic. PPI++'s true
    # coverage at n = 50 with an informative judge is 0.877 (20,000 datasets, the script), inside
    # the band but near its edge.
    low, high = BAND
    misses = [f"{s.judge} n={s.n}: {s.coverage['ppi']:.3f}" for s in _large(table)
              if not low <= s.coverage["ppi"] <= high]
    assert not misses, f"PPI++ coverage outside [{low:.3f}, {high:.3f}]: {misses}"
    at_200 = [s.coverage["ppi"] for s in table if s.n == 200]
    assert min(at_200) >= BAND[0]


def test_n20_coverage_is_reported_and_loosely_sane(table: list[sim.Setting]) -> None:
    small = [s for s in table if s.n == min(sim.LABELS)]
    for s in small:
        print(f"n={s.n} {s.judge}: " + ", ".join(f"{m} {s.coverage[m]:.3f}" for m in sim.METHODS))
        for m in sim.METHODS:
            assert s.coverage[m] >= 0.80, (s.judge, m, s.coverage[m])


def test_active_labels_match_the_budget(table: list[sim.Setting]) -> None:
    for s in table:
        assert s.active_labels == pytest.approx(s.n, rel=0.05)


def test_judge_only_is_biased_beyond_its_noise(table: list[sim.Setting]) -> None:
    for s in table:
        if s.judge == "always-met":
            assert s.judge_bias > 0.2
            assert s.judge_bias > 20 * s.judge_bias_se
        if s.judge == "shifted":
            assert s.judge_bias > 10 * s.judge_bias_se
        if s.judge == "good":  # a calibrated judge is unbiased
            assert abs(s.judge_bias) < 3 * s.judge_bias_se / math.sqrt(s.reps) + 1e-3


def test_ppi_never_much_wider_and_narrower_with_a_good_judge(table: list[sim.Setting]) -> None:
    for s in _large(table):
        ratio = s.width["ppi"] / s.width["classical"]
        assert ratio <= 1.05, (s.judge, s.n, ratio)
        if s.judge == "good":
            assert ratio < 0.8, (s.n, ratio)


def test_rogan_gladen_corrects_a_biased_informative_judge() -> None:
    settings = sim.rogan_gladen_table(sim.REPS, sim.SEED)
    print("\n" + sim.format_rogan_gladen(settings))
    for s in settings:
        assert s.naive_bias > 0.2  # the judge's own MET rate is far off
        assert abs(s.bias) < 0.02
        assert 0.85 <= s.coverage <= 0.97
        # refused where J's lower bound is <= 0: rare with 50 labels, never with 200
        assert s.undefined <= 0.01 * s.reps


def test_wilson_needed_for_binary_labels_at_n50() -> None:
    for p in (0.1, 0.9):
        clt = sim.exact_binary_coverage(50, p, wilson=False)
        wilson = sim.exact_binary_coverage(50, p)
        print(f"n=50 p={p}: CLT {clt:.3f}, Wilson {wilson:.3f}")
        assert clt < BAND[0]
        assert BAND[0] <= wilson <= BAND[1]
    for p in (0.35, 0.5):
        assert BAND[0] <= sim.exact_binary_coverage(50, p) <= BAND[1]


def test_simulation_uncertainty_shortcut_is_item_uncertainty() -> None:
    rng = np.random.default_rng(0)
    assert sim.item_uncertainty_matches(rng.random(1000))
