"""Rating indeterminacy on a real labelled dataset: RiceChem q1 (first 100 items, one TA label
per item and criterion) graded by the judges available here, then validated under the spec's
framework (``autorubric-local indeterminacy``).

1. ``autorubric-local grade DATA --limit N --model M --mode score`` for each judge (plain:
   binary MET/UNMET criteria; response sets read off label probabilities with --threshold).
2. Unless ``--no-maybe``: the same items with every binary criterion asked as three
   options MET / UNMET / MAYBE (the spec's recommendation 1, ``maybe_rubric``), written to
   ``OUT/q1-maybe.json``, graded the same way; the MAYBE option makes forced choice and
   response set one-to-one, so the judge's three-option distribution is its response-set
   distribution theta.
3. Unless ``--no-contextual``: each judge once more on the plain criteria with
   ``--contextual-calibration`` (its MET prior divided out), a judge that resolves the
   criteria differently.
4. ``autorubric-local indeterminacy`` over the plain and calibrated runs (four judges), then
   over the Maybe runs (tables printed, stored in the database, plots written to --plots).
5. Paired ratings per judge (Finding 1): the modal forced choice of its plain run and the
   modal response set of its Maybe run on the same item and criterion, pooled over the
   criteria, give F-hat (``estimate_translation``) and beta-hat^J (``estimate_beta``).
6. For comparison, the synthetic world of ``tests/test_indeterminacy_finding.py`` (known theta
   and F, true human beta 0.3) through the same analysis and plots (``PLOTS/synthetic``).

Run: ``python scripts/eval_indeterminacy.py --out DIR [--plots DIR]``. Grading is the slow part
(about 7 minutes per run of 800 judgments on 2 busy cores); runs resume from ``OUT/q1.sqlite``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
JUDGES = {"smollm2": "smollm2-135m-instruct", "gemma3": "gemma3-270m"}


def cli(*args: str) -> str:
    """Run one CLI command; its stdout (stderr shown when it fails)."""
    done = subprocess.run([sys.executable, "-m", "autorubric_local.cli", *args], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        print(done.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"{args[0]} failed (exit {done.returncode})")
    return done.stdout


def write_maybe_dataset(data: Path, out: Path) -> Path:
    """``data`` with its rubric's binary criteria asked with a MAYBE option."""
    from autorubric_local.core.rubric import Rubric
    from autorubric_local.indeterminacy import maybe_rubric

    raw = json.loads(data.read_text(encoding="utf-8"))
    rubric = maybe_rubric(Rubric.from_dict(raw["rubric"]))
    raw["rubric"] = [c.model_dump(mode="json", exclude_none=True) for c in rubric.rubric]
    raw["name"] = f"{raw.get('name', data.stem)} (MAYBE option)"
    path = out / f"{data.stem}-maybe.json"
    text = json.dumps(raw, indent=1, ensure_ascii=False)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def paired_finding(db: Path, plain: list[str], maybe: list[str]) -> None:
    """F-hat and beta-hat^J of each judge from its plain (forced) and Maybe (set) runs."""
    from autorubric_local.indeterminacy import (
        collect_ratings,
        estimate_beta,
        estimate_translation,
        load_sources,
    )

    plain_ratings, _ = collect_ratings([s for s, _, _ in load_sources([db], plain)])
    maybe_ratings, _ = collect_ratings([s for s, _, _ in load_sources([db], maybe)])
    by_key = {r.criterion: r for r in maybe_ratings}
    print("\nPaired ratings (forced choice from the plain run, response set from the Maybe run; all criteria pooled)")
    print(f"{'judge':<10} {'pairs':>6} {'|S|=2':>6} {'F[MET|{MET,UNMET}]':>19} {'beta^J':>7} {'inconsistent':>12}")
    for short in JUDGES:
        forced, sets = [], []
        for r in plain_ratings:
            m = by_key.get(r.criterion)
            name_p, name_m = f"q1-{short}", f"q1-{short}-maybe"
            if m is None or name_p not in r.judges or name_m not in m.judges:
                continue
            common = sorted(set(r.item_ids) & set(m.item_ids))
            ip, im = {i: k for k, i in enumerate(r.item_ids)}, {i: k for k, i in enumerate(m.item_ids)}
            forced += [int(r.judges[name_p].forced_labels[ip[i]]) for i in common]
            sets += [int(m.judges[name_m].set_positions[im[i]]) for i in common]
        if not forced:
            continue
        f, s = np.array(forced), np.array(sets)
        fitted = estimate_translation(f, s, 2)
        beta = estimate_beta(f, s, 2, positive=0)
        column = f"{fitted.matrix[0, 2]:.3f}" if fitted.observed[2] else "unobserved"
        print(f"{short:<10} {fitted.n_pairs + fitted.n_inconsistent:>6} {int(np.sum(s == 2)):>6} {column:>19} "
              f"{'-' if beta is None else f'{beta:.3f}':>7} {fitted.n_inconsistent:>12}")


def synthetic_section(plots: Path, betas: tuple[float, ...], taus: tuple[float, ...]) -> None:
    """The synthetic world of tests/test_indeterminacy_finding.py (true human beta 0.3), analysed
    over the same grids: what the tables and plots look like when judges differ in how they
    resolve indeterminacy."""
    from autorubric_local.indeterminacy import (
        AnalysisSettings,
        CriterionRatings,
        IndeterminacySettings,
        analyse_ratings,
    )
    from autorubric_local.indeterminacy.plots import write_plots
    from autorubric_local.indeterminacy.synthetic import (
        SimulatedJudge,
        simulate_binary_world,
    )

    judges = {"mimic": SimulatedJudge(noise=0.3, resolve_positive=0.0, collapse=True),
              "set-aware": SimulatedJudge(noise=0.6, resolve_positive=1.0),
              "noisy": SimulatedJudge(noise=1.5, resolve_positive=0.5)}
    world = simulate_binary_world(200, judges, beta=0.3, seed=0)
    ratings = CriterionRatings("synthetic", ("pos", "neg"), 0, tuple(str(i) for i in range(200)), world.human_forced,
                               world.judges)
    report = analyse_ratings([ratings], IndeterminacySettings(analysis=AnalysisSettings(betas=betas, taus=taus)),
                             sources=["synthetic world, true beta_H 0.3, seed 0"])
    print("=== synthetic world (tests/test_indeterminacy_finding.py): 200 items, 5 human raters, true beta_H = 0.3; "
          "judges mimic (hides indeterminacy), set-aware (reports it, resolves to pos), noisy ===")
    print(report.summary())
    write_plots(report, plots / "synthetic")


def _grid(text: str) -> tuple[float, ...]:
    if ":" in text:
        start, stop, step = (float(x) for x in text.split(":"))
        return tuple(round(start + i * step, 10) for i in range(int(round((stop - start) / step)) + 1))
    return tuple(float(x) for x in text.split(","))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/autorubric-examples/q1.json")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None, help="folder for the database (default: temp)")
    parser.add_argument("--plots", type=Path, default=None, help="folder for the PNGs (default: OUT/plots)")
    parser.add_argument("--no-maybe", action="store_true", help="skip the MAYBE-option runs")
    parser.add_argument("--no-contextual", action="store_true", help="skip the contextually calibrated runs")
    parser.add_argument("--beta", default="0:0.6:0.05")
    parser.add_argument("--tau", default="0.3,0.5")
    parser.add_argument("--threshold", default="0.25")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="indeterminacy-"))
    out.mkdir(parents=True, exist_ok=True)
    plots = args.plots or out / "plots"
    db = out / "q1.sqlite"
    variants = [("", args.data, [])]
    if not args.no_maybe:
        variants.append(("-maybe", write_maybe_dataset(args.data, out), []))
    if not args.no_contextual:
        variants.append(("-cc", args.data, ["--contextual-calibration"]))
    runs: dict[str, list[str]] = {}
    for suffix, data, flags in variants:
        for short, model in JUDGES.items():
            run = f"q1-{short}{suffix}"
            cli("grade", str(data), "--model", model, "--db", str(db), "--run", run, "--mode", "score",
                "--limit", str(args.limit), "--no-progress", "--allow-failures", "--json", *flags)
            runs.setdefault(suffix, []).append(run)
    common = ["--beta", args.beta, "--tau", args.tau, "--threshold", args.threshold]
    analyses = {"plain": runs[""] + runs.get("-cc", [])}
    if "-maybe" in runs:
        analyses["maybe"] = runs["-maybe"]
    for folder, names in analyses.items():
        title = "binary criteria (plain and contextually calibrated judges)" if folder == "plain" else \
            "criteria asked with a MAYBE option"
        print(f"=== {title}: runs {', '.join(names)} ===")
        print(cli("indeterminacy", *names, "--db", str(db), *common, "--plot", str(plots / folder)))
    if "-maybe" in runs:
        paired_finding(db, runs[""], runs["-maybe"])
    print()
    synthetic_section(plots, _grid(args.beta), _grid(args.tau))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
