"""How much signal the verdicts carry, per dataset, judge and way of reading the judge.

A measured study (issue 20) of binary verdicts: each judge scores every judgment of a dataset
once per prompt variant with a superset of label continuations (the engine computes them as
one token trie), and each *reading* below derives P(MET) and a verdict from those raw label
log-probabilities. So every reading of one prompt sees the same forward passes.

Prompt variants
  ``default``  the project's judge prompt (``graders/prompts.py``), labels ``MET"`` ``UNMET"``
               ``CANNOT_ASSESS"``.
  ``yes_no``   the same prompt asking for ``"YES"`` / ``"NO"`` instead (labels whose first
               tokens share nothing; MET/UNMET share the token ``MET``).
Readings (P(MET) and verdict)
  ``old``       argmax over the three whole labels, P(MET) renormalised over MET/UNMET (the
                defaults before this study).
  ``binary``    two whole labels only: P(MET) = p(MET") / (p(MET") + p(UNMET")), MET if > 0.5.
  ``first``     first tokens only: p(MET) / (p(MET) + p(UN)).
  ``lennorm``   whole labels, log-probability divided by the label's token count.
  ``cc``        ``binary`` with contextual calibration (Zhao et al., ICML 2021, "Calibrate
                Before Use"): the judge's P(MET) on content-free submissions ("", "N/A",
                "[SUBMISSION]") for the same criterion, averaged, is its prior p_cf; the
                corrected distribution is normalise(p / p_cf).
  ``thr``       ``binary`` with a per-criterion threshold on P(MET) that maximises Cohen's
                kappa on the training items (RiceChem: items 0-199); reported on the others.
Metrics (binary criteria, CANNOT_ASSESS verdicts excluded from accuracy and kappa and counted
in ``CA``): MET rate of the verdicts, accuracy, Cohen's kappa pooled over all judgments
(scikit-learn), AUROC of P(MET) (scikit-learn), ECE of P(MET) (10 bins,
``metrics/calibration.py``), with 95% percentile bootstrap CIs over items (1,000 resamples).

Datasets (outside the project, ``../shared/data/autorubric-examples``): the essay set (11 items
x 5 criteria), RiceChem q1 (settings chosen on items 0-199, figures on items 200-326).

Run: ``python scripts/bench_validity.py [--judges ...] [--datasets essay ricechem]``; the last
line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine.base import ScoreRequest
from autorubric_local.graders.planning import GradeItem, plan_tasks
from autorubric_local.graders.prompts import DEFAULT_SYSTEM_PROMPT
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.engines import load_engine
from autorubric_local.metrics.calibration import expected_calibration_error

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared/data/autorubric-examples"
JUDGES = ("smollm2-135m-instruct", "gemma3-270m")
CONTENT_FREE = ("", "N/A", "[SUBMISSION]")
SUPERSET = ('MET"', 'UNMET"', 'CANNOT_ASSESS"', "MET", "UN", 'YES"', 'NO"')
YES_NO_SYSTEM = (
    DEFAULT_SYSTEM_PROMPT.replace(
        "- MET: the submission clearly satisfies the criterion.\n- UNMET: the submission does not satisfy the "
        "criterion.\n- CANNOT_ASSESS: the submission gives too little information to decide.",
        "- YES: the submission satisfies the criterion.\n- NO: the submission does not satisfy the criterion.",
    )
    .replace('answer MET if the mistake IS present in the submission, UNMET if it is absent',
             'answer YES if the mistake IS present in the submission, NO if it is absent')
    .replace('{"criterion_status": "MET" | "UNMET" | "CANNOT_ASSESS", ', '{"criterion_status": "YES" | "NO", ')
)
PROMPTS = {"default": DEFAULT_SYSTEM_PROMPT, "yes_no": YES_NO_SYSTEM}


@dataclass
class Scored:
    """Raw label log-probabilities, shape (n_items, n_criteria, n_labels) over SUPERSET, and token counts."""

    logprobs: np.ndarray
    lengths: np.ndarray
    truth: np.ndarray  # 1 MET, 0 UNMET, -1 unknown; shape (n_items, n_criteria)


def binary_items(dataset: RubricDataset, indices: list[int]) -> tuple[list[GradeItem], np.ndarray]:
    items, truth = [], []
    for i in indices:
        item = dataset[i]
        rubric = tuple(dataset.get_item_rubric(i).rubric)
        items.append(GradeItem(submission=item.submission, rubric=rubric, query=dataset.get_item_query(i),
                               reference_submission=dataset.get_item_reference_submission(i), item_id=str(i)))
        truth.append([1 if str(getattr(g, "value", g)) == "MET" else 0 if str(getattr(g, "value", g)) == "UNMET"
                      else -1 for g in (item.ground_truth or [None] * len(rubric))])
    return items, np.array(truth)


def score(engine: object, items: list[GradeItem], system: str) -> tuple[np.ndarray, np.ndarray]:
    tasks = plan_tasks(items, [("judge", engine.format_chat, system)], shuffle_options=False)  # type: ignore[attr-defined]
    requests = [ScoreRequest(t.prefix, t.suffix, SUPERSET) for t in tasks]
    results = engine.score(requests)  # type: ignore[attr-defined]
    n_criteria = len(items[0].rubric)
    logprobs = np.full((len(items), n_criteria, len(SUPERSET)), np.nan)
    lengths = np.ones((len(items), n_criteria, len(SUPERSET)))
    for task, request, result in zip(tasks, requests, results):
        if result.error is None:
            logprobs[task.item_index, task.criterion_index] = result.logprobs
            prompt = engine.prompt_tokens(request.prefix, request.suffix)  # type: ignore[attr-defined]
            lengths[task.item_index, task.criterion_index] = [
                len(engine.label_tokens(request.prefix + request.suffix, prompt, label)) for label in SUPERSET]  # type: ignore[attr-defined]
    return logprobs, lengths


def two_way(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """p(a) / (p(a) + p(b)) from log-probabilities, stably."""
    return 1.0 / (1.0 + np.exp(b - a))


def readings(prompt: str, s: Scored, prior: np.ndarray | None, train: np.ndarray | None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Reading name -> (P(MET), verdict code 1 MET / 0 UNMET / 2 CANNOT_ASSESS), each (n_items, n_criteria)."""
    lp = s.logprobs
    met, unmet = (0, 1) if prompt == "default" else (5, 6)
    p_binary = two_way(lp[..., met], lp[..., unmet])
    out = {"binary": (p_binary, (p_binary > 0.5).astype(int))}
    if prompt == "default":
        whole = lp[..., :3]
        out["old"] = (p_binary, np.where(np.argmax(whole, -1) == 2, 2, (np.argmax(whole, -1) == 0).astype(int)))
        out["first"] = (two_way(lp[..., 3], lp[..., 4]), (two_way(lp[..., 3], lp[..., 4]) > 0.5).astype(int))
    normed = lp / s.lengths
    p_norm = two_way(normed[..., met], normed[..., unmet])
    out["lennorm"] = (p_norm, (p_norm > 0.5).astype(int))
    if prior is not None:  # prior: (n_criteria,) content-free P(MET)
        odds = (p_binary / prior) / (p_binary / prior + (1 - p_binary) / (1 - prior))
        out["cc"] = (odds, (odds > 0.5).astype(int))
    if train is not None:
        thresholds = fit_thresholds(p_binary[train], s.truth[train])
        out["thr"] = (p_binary, (p_binary > thresholds[None, :]).astype(int))
    return out


def fit_thresholds(p: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per criterion: the threshold among midpoints of sorted P(MET) maximising Cohen's kappa on these items."""
    chosen = []
    for c in range(p.shape[1]):
        known = truth[:, c] >= 0
        values = np.unique(p[known, c])
        candidates = np.concatenate([[0.0], (values[1:] + values[:-1]) / 2 if len(values) > 1 else [], [1.0]])
        best = max(candidates, key=lambda t: (_kappa(truth[known, c], (p[known, c] > t).astype(int)), -abs(t - 0.5)))
        chosen.append(best)
    return np.array(chosen)


def _kappa(y: np.ndarray, v: np.ndarray) -> float:
    if len(set(y)) < 2 and len(set(v)) < 2:
        return 0.0
    k = cohen_kappa_score(y, v)
    return 0.0 if math.isnan(k) else float(k)


def figures(p: np.ndarray, verdict: np.ndarray, truth: np.ndarray, rng: np.random.Generator) -> dict[str, object]:
    """MET rate, CA rate, accuracy, kappa, AUROC, ECE and bootstrap CIs over items."""

    def point(rows: np.ndarray) -> tuple[float, float, float, float, float, float]:
        t, v, q = truth[rows].ravel(), verdict[rows].ravel(), p[rows].ravel()
        ok = (t >= 0) & ~np.isnan(q)
        decided = ok & (v != 2)
        acc = float(np.mean(t[decided] == v[decided])) if decided.any() else math.nan
        kappa = _kappa(t[decided], v[decided]) if decided.any() else math.nan
        auroc = float(roc_auc_score(t[ok], q[ok])) if len(set(t[ok])) == 2 else math.nan
        ece = expected_calibration_error(t[ok].tolist(), q[ok].tolist())
        return float(np.mean(v[ok] == 1)), float(np.mean(v[ok] == 2)), acc, kappa, auroc, ece

    names = ("met_rate", "ca_rate", "accuracy", "kappa", "auroc", "ece")
    base = dict(zip(names, point(np.arange(len(truth)))))
    boots = np.array([point(rng.integers(0, len(truth), len(truth))) for _ in range(1000)])
    for k, name in enumerate(names[2:], start=2):
        column = boots[:, k][~np.isnan(boots[:, k])]
        base[f"{name}_ci"] = [float(np.percentile(column, 2.5)), float(np.percentile(column, 97.5))] if len(column) else None
    return base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judges", nargs="+", default=list(JUDGES))
    parser.add_argument("--datasets", nargs="+", default=["essay", "ricechem"])
    parser.add_argument("--prompts", nargs="+", default=list(PROMPTS))
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    report: dict[str, object] = {}
    for judge in args.judges:
        engine = load_engine(LLMConfig(model=judge, device="cpu"))
        for name in args.datasets:
            dataset = RubricDataset.from_file(DATA / ("essay_grading_dataset.json" if name == "essay" else "q1.json"))
            indices = list(range(len(dataset)))
            items, truth = binary_items(dataset, indices)
            train = np.arange(len(items)) < 200 if name == "ricechem" else None
            free = [GradeItem(submission=text, rubric=items[0].rubric, query=items[0].query) for text in CONTENT_FREE]
            for prompt in args.prompts:
                logprobs, lengths = score(engine, items, PROMPTS[prompt])
                free_lp, _ = score(engine, free, PROMPTS[prompt])
                met, unmet = (0, 1) if prompt == "default" else (5, 6)
                prior = np.nanmean(two_way(free_lp[..., met], free_lp[..., unmet]), axis=0)
                s = Scored(logprobs, lengths, truth)
                test = ~train if train is not None else np.ones(len(items), dtype=bool)
                for reading, (p, verdict) in readings(prompt, s, prior, train).items():
                    rng = np.random.default_rng(0)
                    row = figures(p[test], verdict[test], truth[test], rng)
                    key = f"{name}/{judge}/{prompt}/{reading}"
                    report[key] = row
                    print(f"{key:55s} MET {row['met_rate']:.2f} CA {row['ca_rate']:.2f} acc {row['accuracy']:.3f} "
                          f"kappa {row['kappa']:+.3f} {_ci(row['kappa_ci'])} AUROC {row['auroc']:.3f} "
                          f"{_ci(row['auroc_ci'])} ECE {row['ece']:.3f}", flush=True)
    print(json.dumps(report))
    return 0


def _ci(ci: list[float] | None) -> str:
    return "[n/a]" if ci is None else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"


if __name__ == "__main__":
    sys.exit(main())
