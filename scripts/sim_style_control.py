"""Coverage of style-controlled Bradley-Terry intervals (issue 50), by simulation.

A judge favours longer answers: ``P(i beats j) = sigma(beta_i - beta_j + g * d_ij)`` with
``d_ij = (L_i - L_j) / (L_i + L_j)`` the normalised length difference and the weakest system
writing the longest answers; markdown counts vary at random with no effect. Per dataset: 60
(or PROMPTS) prompts, 4 systems, all 6 pairs, hard outcomes. Reported: how often the plain Bradley-Terry
ranking and the style-controlled one put the systems in their true order, and the coverage of
the 90% percentile cluster-bootstrap intervals of the style-controlled (centred) strengths and
of the length coefficient (its truth ``g * rms(d)``, the coefficient per root mean square of
the dataset's own differences, the scaling the fit uses) and of the markdown
coefficients (truth 0).

Run: ``.venv/bin/python scripts/sim_style_control.py [REPS] [BOOTSTRAP] [PROMPTS]`` (default 400, 200, 60).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy.special import expit

from autorubric_local.comparisons.bradley_terry import fit_bradley_terry, pair_counts
from autorubric_local.comparisons.style import bootstrap_style_controlled, style_comparisons, style_features

TRUE_BETA = np.array([0.6, 0.2, -0.2, -0.6])  # s0 best ... s3 worst
MEAN_LENGTH = np.array([300.0, 400.0, 550.0, 900.0])  # the worst writes the longest
LENGTH_EFFECT = 3.0  # log-odds per unit of normalised length difference
SYSTEMS = ("s0", "s1", "s2", "s3")


def dataset(rng: np.random.Generator, n_prompts: int = 60):
    """One simulated comparison: prompts, pairs, hard outcomes, raw style features."""
    prompts, first, second, wins, raw = [], [], [], [], []
    for p in range(n_prompts):
        counts = [{"characters": int(MEAN_LENGTH[s] * rng.lognormal(0.0, 0.3)), "headers": int(rng.poisson(1.0)),
                   "list_items": int(rng.poisson(3.0)), "bold": int(rng.poisson(1.5))} for s in range(4)]
        for i in range(4):
            for j in range(i + 1, 4):
                z = style_features(counts[i], counts[j])
                won = rng.random() < expit(TRUE_BETA[i] - TRUE_BETA[j] + LENGTH_EFFECT * z[0])
                prompts.append(f"p{p}")
                first.append(SYSTEMS[i])
                second.append(SYSTEMS[j])
                wins.append(float(won))
                raw.append(z)
    return prompts, first, second, np.array(wins), np.array(raw)


def one(seed: int, n_bootstrap: int, n_prompts: int = 60) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    prompts, first, second, wins, raw = dataset(rng, n_prompts)
    plain = fit_bradley_terry(pair_counts(prompts, first, second, wins, np.zeros_like(wins), 1 - wins,
                                          systems=SYSTEMS))
    data = style_comparisons(prompts, first, second, wins, np.zeros_like(wins), 1 - wins, raw, systems=SYSTEMS)
    fitted = bootstrap_style_controlled(data, n_bootstrap=n_bootstrap, confidence=0.9, seed=seed)
    truth_gamma = np.array([LENGTH_EFFECT * data.sd[0]] + [0.0] * (len(data.features) - 1))
    return {
        "plain_order": bool(np.all(np.diff(plain.beta) < 0)),
        "controlled_order": bool(np.all(np.diff(fitted.fit.beta) < 0)),
        "beta_cover": (fitted.beta_low <= TRUE_BETA) & (TRUE_BETA <= fitted.beta_high),
        "gamma_cover": (fitted.gamma_low <= truth_gamma) & (truth_gamma <= fitted.gamma_high),
        "plain_beta": plain.beta, "controlled_beta": fitted.fit.beta,
    }


def main(reps: int = 400, n_bootstrap: int = 200, n_prompts: int = 60) -> None:
    start = time.time()
    results = [one(seed, n_bootstrap, n_prompts) for seed in range(reps)]
    beta = np.array([r["beta_cover"] for r in results])
    gamma = np.array([r["gamma_cover"] for r in results])
    print(f"style control simulation: {reps} datasets, {n_prompts} prompts x 6 pairs, {n_bootstrap} bootstrap resamples, "
          f"90% intervals; true strengths {TRUE_BETA.tolist()}, mean lengths {MEAN_LENGTH.tolist()}, "
          f"length effect {LENGTH_EFFECT} per unit of normalised difference")
    print(f"plain Bradley-Terry in the true order: {np.mean([r['plain_order'] for r in results]):.3f}")
    print(f"style-controlled in the true order:    {np.mean([r['controlled_order'] for r in results]):.3f}")
    print(f"mean plain strengths:            {np.round(np.mean([r['plain_beta'] for r in results], axis=0), 3).tolist()}")
    print(f"mean style-controlled strengths: "
          f"{np.round(np.mean([r['controlled_beta'] for r in results], axis=0), 3).tolist()}")
    print(f"coverage of the strengths, per system: {np.round(beta.mean(axis=0), 3).tolist()}; all: {beta.mean():.3f}")
    print(f"coverage of the style coefficients (length, headers, list_items, bold): "
          f"{np.round(gamma.mean(axis=0), 3).tolist()}")
    print(f"seconds: {time.time() - start:.0f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
