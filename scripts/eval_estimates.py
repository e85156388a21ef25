"""Judge-corrected estimates on real data: RiceChem q1, every item labelled, labels hidden at random.

RiceChem q1 (327 student answers, 8 binary criteria, every item with the TAs' ground truth) is
graded once by each judge (``autorubric-local grade q1.json --model MODEL --run q1-MODEL``; a judge
given as ``MODEL@bfloat16`` is graded with ``--dtype bfloat16`` as run ``q1-MODEL-bf16``).
Because every item has a human label, each target's truth is known exactly: the mean of the
human values over all items (the "all-labels truth"): each criterion's share of MET, and the
mean rubric ``score``. The script then pretends only ``n`` items were labelled and checks the
estimates of :mod:`autorubric_local.estimates` against that truth:

- ``uniform``: ``n`` items drawn uniformly at random without replacement; every other item's
  label hidden (``y -> nan``); :func:`~autorubric_local.estimates.api.estimate_targets`.
- ``active``: items drawn as ``autorubric-local label select`` draws them (active inference,
  Zrnic & Candès, "Active Statistical Inference", ICML 2024, arXiv 2403.03208): inclusion
  probabilities ``pi = inclusion_probabilities(u, budget=n, mix=0.2)`` from the judge's
  uncertainty ``u`` about each item's score, independent Bernoulli draws
  (:func:`~autorubric_local.estimates.sampling.draw`), labels kept only where drawn, and the
  estimates weighted by the design (``n`` is then the expected number of labels).

Methods (:mod:`autorubric_local.estimates.methods`, nominal 90% two-sided intervals):
``classical`` (the labels alone: Wilson interval for 0/1 labels, Student's t for the score; under
``active`` the Horvitz-Thompson mean), ``judge`` (the judge's mean prediction over all items;
biased whenever the judge is, no interval), ``ppi`` (prediction-powered inference, Angelopoulos,
Bates, Fannjiang, Jordan, Zrnic, Science 2023, arXiv 2301.09633, with the PPI++ tuned weight
``lam``, Angelopoulos, Duchi, Zrnic, arXiv 2311.01453; under ``active`` the weighted estimator
of Zrnic & Candès with tuned ``lam``), ``rogan_gladen`` (binary criteria, uniform sampling only:
the judge's verdict rate corrected by its sensitivity and specificity on the labelled items).

What the figures mean, per judge, n, sampling, target and method, over the repetitions:

- ``cover``: share of repetitions whose interval contains the truth (nominal 0.90; with 500
  repetitions its Monte-Carlo standard deviation is about 0.013, so 0.87-0.93 is within noise).
  ``judge`` has no interval: ``-``.
- ``bias``: mean estimate minus the truth (for ``judge``, whose estimate is the same every
  repetition, this is its whole error).
- ``width``: mean interval width (``ci_high - ci_low``, intervals of shares and of the
  normalised score clipped to [0, 1]).
- ``n_eff``: mean effective number of labels (the labels a classical estimate needs for the same
  standard error); ``lam``: mean PPI++ weight (0: the judge is ignored, 1: plain PPI).
- ``undef``: repetitions where the method gave no estimate (e.g. Rogan-Gladen when the drawn
  labels hold no MET, or its judge is no better than chance on them); coverage and means are
  over the others.

A judge adds nothing where its predictions do not track the labels (AUROC near 0.5): PPI++ then
keeps about the classical width and ``n_eff`` about ``n`` (its ``lam``, fitted on the few labels
and clipped to [0, 1], is noisy, so its mean need not be near 0 at small n). Where the judge ranks
items well, the interval narrows (``n_eff`` above ``n``). Under ``active`` sampling the
labels-only (Horvitz-Thompson) ``classical`` pays for the unequal probabilities, and
``ppi`` uses the judge also as a control variate for that weighting. Rogan-Gladen's figures are
conditional on the repetitions where it is defined, which with a judge that says MET nearly
always are the ones whose specificity happens to be estimated just above 0. The population is
finite (327 items) and labels are drawn without replacement, while the intervals assume an
infinite one, so at n = 100 they are conservative (classical: the finite-population factor
sqrt(1 - n/N) = 0.83 is ignored).

Run: ``python scripts/eval_estimates.py [--db /tmp/est/ricechem.sqlite] [--judges MODEL[@DTYPE] ...]
[--reps 500] [--seed 0] [--ns 20,50,100] [--out scripts/results/eval_estimates_2cpu_2026-11-26.txt]``.
Default judges: ``smollm2-135m-instruct`` and ``gemma3-270m@bfloat16``. A judge whose run is
missing or unfinished in ``--db`` is graded first with the command above (it resumes an
unfinished run; do not start the script while another process grades the same run). The
estimation itself takes seconds per judge (about 6,000 calls of ``estimate_targets``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from autorubric_local.estimates.api import Estimate, LoadedRun, estimate_targets, targets_of
from autorubric_local.estimates.design import item_uncertainties
from autorubric_local.estimates.sampling import draw, inclusion_probabilities
from autorubric_local.estimates.targets import SCORE, TargetData

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DB = Path("/tmp/est/ricechem.sqlite")
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "autorubric-examples" / "q1.json"
JUDGES = ("smollm2-135m-instruct", "gemma3-270m@bfloat16")
DTYPE_TAGS = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
CONFIDENCE = 0.9
MIX = 0.2
SAMPLINGS = ("uniform", "active")
METHODS_BY_SAMPLING = {"uniform": ("classical", "judge", "ppi", "rogan_gladen"),
                       "active": ("classical", "judge", "ppi")}
LEGEND = (
    "columns: cover = share of repetitions whose 90% interval holds the truth (Monte-Carlo sd about",
    "  0.013 at 500 repetitions; judge has no interval); bias = mean estimate - truth; width = mean",
    "  interval width; n_eff = mean effective labels (classical labels for the same standard error);",
    "  lam = mean PPI++ weight (0: judge ignored); undef = repetitions without an estimate (left out of",
    "  the means). Methods: classical, judge, ppi (PPI++; active: Zrnic-Candes weighted), rogan_gladen.",
)


def code_version() -> str:
    """``git describe`` of the checkout (``-dirty``: uncommitted changes), or ``unknown``."""
    done = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    return done.stdout.strip() or "unknown"


def parse_judge(spec: str) -> tuple[str, str | None]:
    """``MODEL`` or ``MODEL@DTYPE`` (DTYPE one of :data:`DTYPE_TAGS`) as ``(model, dtype)``."""
    model, _, dtype = spec.partition("@")
    if dtype and dtype not in DTYPE_TAGS:
        raise SystemExit(f"--judges {spec!r}: dtype must be one of {sorted(DTYPE_TAGS)}, got {dtype!r}")
    return model, dtype or None


def run_name(spec: str) -> str:
    """``q1-MODEL``, or ``q1-MODEL-bf16`` for ``MODEL@bfloat16`` (the runs' names in the database)."""
    model, dtype = parse_judge(spec)
    return f"q1-{model}" if dtype is None else f"q1-{model}-{DTYPE_TAGS[dtype]}"


def run_status(db: Path, name: str) -> str | None:
    """The status of the latest run called ``name`` in ``db`` (None: no such run or no file)."""
    if not db.exists():
        return None
    with sqlite3.connect(db) as con:
        try:
            row = con.execute("select status from runs where name = ? order by started_utc desc limit 1",
                              (name,)).fetchone()
        except sqlite3.OperationalError:  # a database without a runs table yet
            return None
    return None if row is None else str(row[0])


def ensure_graded(db: Path, data: Path, spec: str) -> str:
    """Reuse the finished run of the judge ``spec`` (:func:`run_name`), else grade (or resume) it
    with the CLI; say which."""
    name = run_name(spec)
    model, dtype = parse_judge(spec)
    if run_status(db, name) == "finished":
        return "reused"
    db.parent.mkdir(parents=True, exist_ok=True)
    data = data.resolve()
    # the documented command's form: the data path relative to the checkout when it lies beside it
    shown = os.path.relpath(data, ROOT) if data.is_relative_to(ROOT.parent) else str(data)
    command = [str(Path(sys.executable).with_name("autorubric-local")), "grade", shown,
               "--model", model, *(["--dtype", dtype] if dtype else []), "--run", name, "--db", str(db),
               "--no-progress", "--json"]
    print(f"grading: {' '.join(command)}", file=sys.stderr, flush=True)
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
    if done.returncode != 0 or run_status(db, name) != "finished":
        raise SystemExit(f"grading {name} failed (exit {done.returncode}); see the messages above")
    return "graded"


# --------------------------------------------------------------------------- simulation


@dataclass
class Cell:
    """Per-repetition results of one (sampling, n, target, method)."""

    estimate: list[float] = field(default_factory=list)
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)
    n_effective: list[float] = field(default_factory=list)
    lam: list[float] = field(default_factory=list)
    undefined: int = 0

    def add(self, row: Estimate) -> None:
        if np.isnan(row.estimate):
            self.undefined += 1
            return
        self.estimate.append(row.estimate)
        self.low.append(np.nan if row.ci_low is None else row.ci_low)
        self.high.append(np.nan if row.ci_high is None else row.ci_high)
        self.n_effective.append(np.nan if row.n_effective is None else row.n_effective)
        # classical under an active design is the estimator with lam fixed at 0: no tuned weight
        self.lam.append(row.lam if row.method == "ppi" and row.lam is not None else np.nan)

    def summary(self, truth: float) -> dict[str, float]:
        est, low, high = (np.asarray(v, dtype=float) for v in (self.estimate, self.low, self.high))
        has_ci = est.size > 0 and not np.isnan(low).all()
        nan = float("nan")
        return {
            "cover": float(np.mean((low <= truth) & (truth <= high))) if has_ci else nan,
            "bias": float(est.mean() - truth) if est.size else nan,
            "width": float(np.mean(high - low)) if has_ci else nan,
            "n_eff": float(np.nanmean(self.n_effective)) if np.isfinite(self.n_effective).any() else nan,
            "lam": float(np.nanmean(self.lam)) if np.isfinite(self.lam).any() else nan,
            "undef": float(self.undefined),
        }


def population(loaded: LoadedRun, built: Sequence[TargetData]) -> tuple[list[str], np.ndarray, list[TargetData]]:
    """The items with a judge prediction and a human value for every target (all 327 on RiceChem
    q1), their score uncertainty (what ``label select`` weights by, computed over the whole run)
    and the targets restricted to them."""
    ids, u = item_uncertainties(loaded, built, SCORE)
    complete = set(ids)
    for t in built:
        complete &= {i for i, labelled in zip(t.item_ids, t.labelled, strict=True) if labelled}
    keep = np.array([i in complete for i in ids])
    targets = []
    for t in built:
        mask = np.array([i in complete for i in t.item_ids], dtype=bool)
        targets.append(t if mask.all() else replace(
            t, item_ids=tuple(i for i, k in zip(t.item_ids, mask, strict=True) if k), f=t.f[mask], y=t.y[mask],
            verdict=None if t.verdict is None else t.verdict[mask],
            excluded=None if t.excluded is None else t.excluded[mask], n_partial=0))
    return [i for i, k in zip(ids, keep, strict=True) if k], u[keep], targets


def simulate(ids: Sequence[str], u: np.ndarray, targets: Sequence[TargetData], n: int, reps: int, seed: int,
             sampling: str) -> dict[tuple[str, str], Cell]:
    """``reps`` repetitions of hiding all labels but ``n`` (expected ``n`` under ``active``) of the
    items ``ids`` (score uncertainty ``u``, the same order)."""
    position = {item_id: k for k, item_id in enumerate(ids)}
    index = [np.array([position[i] for i in t.item_ids]) for t in targets]
    cells: dict[tuple[str, str], Cell] = defaultdict(Cell)
    wanted = METHODS_BY_SAMPLING[sampling]
    binary = {t.name for t in targets if t.verdict is not None}
    if sampling == "uniform":
        rng = np.random.default_rng([seed, n, 0])
        pi = None
    else:
        seeds = np.random.default_rng([seed, n, 1]).integers(0, 2**63, size=reps)
        pi = inclusion_probabilities(u, budget=n, mix=MIX)
    for rep in range(reps):
        if pi is None:
            chosen = np.zeros(len(ids), dtype=bool)
            chosen[rng.choice(len(ids), size=n, replace=False)] = True
            design = None
        else:
            chosen = draw(pi, int(seeds[rep]))
            design = {item_id: (float(p), bool(d)) for item_id, p, d in zip(ids, pi, chosen, strict=True)}
        masked = [replace(t, y=np.where(chosen[k], t.y, np.nan)) for t, k in zip(targets, index, strict=True)]
        rows = estimate_targets(masked, confidence=CONFIDENCE, methods_wanted=wanted, design=design,
                                sampling=sampling)
        for row in rows:
            if row.method == "rogan_gladen" and row.target not in binary:
                continue
            cells[(row.target, row.method)].add(row)
    return cells


# --------------------------------------------------------------------------- report


def fmt(value: float, digits: int = 3) -> str:
    return "-" if value is None or np.isnan(value) else f"{value:.{digits}f}"


def auroc(y: np.ndarray, f: np.ndarray) -> float:
    return float(roc_auc_score(y, f)) if len(np.unique(y)) == 2 else float("nan")


def agreement_table(targets: Sequence[TargetData]) -> list[str]:
    lines = [f"{'target':<28} {'N':>4} {'truth':>6} {'judge':>6} {'verd':>6} {'auroc':>6} {'corr':>6} {'left':>4}",
             "  (truth: mean human value over all items; judge: mean prediction f; verd: judge's MET-verdict rate;",
             "   auroc: AUROC of f against the labels; corr: Pearson correlation of f and y; left: items without a",
             "   prediction, left out)"]
    for t in targets:
        verd = float(np.nanmean(t.verdict)) if t.verdict is not None else float("nan")
        binary = t.kind == "share_met"
        corr = float(np.corrcoef(t.f, t.y)[0, 1]) if np.std(t.f) > 0 and np.std(t.y) > 0 else float("nan")
        lines.append(f"{t.name:<28} {len(t.f):>4} {fmt(float(t.y.mean())):>6} {fmt(float(t.f.mean())):>6} "
                     f"{fmt(verd):>6} {fmt(auroc(t.y, t.f) if binary else float('nan')):>6} {fmt(corr):>6} "
                     f"{t.n_left_out:>4}")
    return lines


def detail_table(results: dict, targets: Sequence[TargetData], ns: Sequence[int]) -> list[str]:
    lines = [f"{'sampling':<8} {'n':>4} {'target':<28} {'method':<13} {'cover':>6} {'bias':>7} {'width':>6} "
             f"{'n_eff':>6} {'lam':>5} {'undef':>5}"]
    for sampling in SAMPLINGS:
        for n in ns:
            cells = results[(sampling, n)]
            for t in targets:
                truth = float(t.y.mean())
                for method in METHODS_BY_SAMPLING[sampling]:
                    if (t.name, method) not in cells:
                        continue
                    s = cells[(t.name, method)].summary(truth)
                    lines.append(f"{sampling:<8} {n:>4} {t.name:<28} {method:<13} {fmt(s['cover']):>6} "
                                 f"{fmt(s['bias'], 4):>7} {fmt(s['width']):>6} {fmt(s['n_eff'], 1):>6} "
                                 f"{fmt(s['lam'], 2):>5} {int(s['undef']):>5}")
    return lines


def summary_table(results: dict, targets: Sequence[TargetData], ns: Sequence[int]) -> list[str]:
    criteria = [t for t in targets if t.name != SCORE]
    score = next(t for t in targets if t.name == SCORE)
    lines = [f"{'':<28} | criteria (mean over {len(criteria)}; undef: sum over them)     | score",
             f"{'sampling':<8} {'n':>5} {'method':<13} | {'cover':>6} {'min':>6} {'|bias|':>6} {'width':>6} "
             f"{'n_eff':>6} {'lam':>5} {'undef':>5} | {'cover':>6} {'bias':>7} {'width':>6} {'n_eff':>6} {'lam':>5}"]
    for sampling in SAMPLINGS:
        for n in ns:
            cells = results[(sampling, n)]
            for method in METHODS_BY_SAMPLING[sampling]:
                rows = [cells[(t.name, method)].summary(float(t.y.mean())) for t in criteria
                        if (t.name, method) in cells]
                cover = np.array([r["cover"] for r in rows])

                def mean(key: str, rows: list = rows) -> float:
                    values = np.array([abs(r[key]) if key == "bias" else r[key] for r in rows])
                    return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")

                min_cover = float(np.nanmin(cover)) if np.isfinite(cover).any() else float("nan")
                undefined = int(sum(r["undef"] for r in rows))
                s = (cells[(SCORE, method)].summary(float(score.y.mean())) if (SCORE, method) in cells
                     else dict.fromkeys(("cover", "bias", "width", "n_eff", "lam"), float("nan")))
                lines.append(
                    f"{sampling:<8} {n:>5} {method:<13} | {fmt(mean('cover')):>6} {fmt(min_cover):>6} "
                    f"{fmt(mean('bias'), 4):>6} {fmt(mean('width')):>6} {fmt(mean('n_eff'), 1):>6} "
                    f"{fmt(mean('lam'), 2):>5} {undefined:>5} | {fmt(s['cover']):>6} {fmt(s['bias'], 4):>7} "
                    f"{fmt(s['width']):>6} {fmt(s['n_eff'], 1):>6} {fmt(s['lam'], 2):>5}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=DEFAULT_DB, help="results database (default %(default)s)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="RiceChem q1.json (default %(default)s)")
    parser.add_argument("--judges", nargs="+", default=list(JUDGES),
                        help="judge presets, MODEL or MODEL@DTYPE (graded with --dtype; run q1-MODEL-bf16 for "
                             "bfloat16); default: %(default)s")
    parser.add_argument("--reps", type=int, default=500, help="repetitions per judge, n and sampling")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ns", default="20,50,100", help="labelled sizes, comma-separated (default %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="also write the output to this file")
    args = parser.parse_args(argv)
    ns = [int(v) for v in args.ns.split(",")]
    started = time.perf_counter()

    graded = {spec: ensure_graded(args.db, args.data, spec) for spec in args.judges}
    sections: list[str] = []
    runs: list[str] = []
    for spec in args.judges:
        judge_started = time.perf_counter()
        loaded, built = targets_of(args.db, run_name(spec))
        ids, u, targets = population(loaded, built)
        runs.append(f"  {spec}: run {loaded.name} (id {loaded.run_id}, {graded[spec]}), {len(loaded.criteria)} "
                    f"items ({len(ids)} with every label and prediction), labels from {loaded.source}")
        results = {(sampling, n): simulate(ids, u, targets, n, args.reps, args.seed, sampling)
                   for sampling in SAMPLINGS for n in ns}
        dropped = len(loaded.criteria) - len(ids)
        sections += [
            "", "=" * 100, f"judge {spec} (run {loaded.name}; simulation {time.perf_counter() - judge_started:.0f} s)",
            "=" * 100, "", "Judge agreement with the labels, over all items:", *agreement_table(targets),
        ]
        if dropped:
            sections.append(f"  {dropped} item(s) without a prediction or a human value for some target: left out")
        sections += ["", f"Summary (nominal coverage {CONFIDENCE}; criteria columns average over the criteria, "
                     "min = lowest criterion coverage):", *summary_table(results, targets, ns),
                     "", "Per target:", *detail_table(results, targets, ns)]

    header = [
        "eval_estimates: judge-corrected estimates on RiceChem q1 against the all-labels truth",
        f"data: {args.data.resolve()} (truth per target: the mean of the human values over all items)",
        f"database: {args.db}",
        "judges:", *runs,
        f"labelled sizes n: {', '.join(map(str, ns))} (active: expected labels, inclusion probabilities from the "
        f"score uncertainty, mix {MIX})",
        f"repetitions: {args.reps} per judge, n and sampling; seed {args.seed}; confidence {CONFIDENCE}",
        f"date: {datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}; machine: "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; python {platform.python_version()}, "
        f"numpy {np.__version__}",
        f"code: git {code_version()}",
        f"command: python scripts/eval_estimates.py {' '.join(argv if argv is not None else sys.argv[1:])}",
        f"elapsed: {time.perf_counter() - started:.0f} s",
        *LEGEND,
    ]
    text = "\n".join(header + sections) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
