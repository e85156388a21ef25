"""Time ``autorubric-local grade`` with the tiny random test judge: our host work, not the model.

The judge is the tests' 2-layer random Llama with its in-memory BPE tokenizer
(``tests/conftest.py``), saved as a local model folder, so the engine's forward passes cost
almost nothing and the wall time is mostly our own work (tokenizing, planning, masks, storage).

Workload: ``--items`` submissions (default 200), the bundled example's 8 answers cycled, each
made distinct by a numbered sentence at its end (so every item is its own prefix group), graded
against the example rubric's first 6 criteria (all binary) = 6 judgments per item.

Each round runs the CLI in a fresh subprocess (``python -m autorubric_local.cli grade ...
--no-progress --allow-failures``, one torch thread, a new SQLite file) and records its wall time
(load and planning included) and the 1-minute load average before it. With ``--profile`` the last
round runs under cProfile and the top functions by cumulative time are printed.

The last line printed is one JSON object: per round ``seconds`` and ``load1``, the median,
judgments per second of the median, and ``ms_per_judgment``.
Run: ``python scripts/bench_host.py [--items 200] [--rounds 2] [--profile]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N_CRITERIA = 6


def build_judge(folder: Path, positions: int = 4096) -> Path:
    """Save the tests' tiny random judge (``positions`` positions; 4096 as ``tiny_model_dir``) to
    ``folder`` and return it."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import build_tiny_model, build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(tokenizer)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    config_file = folder / "config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["max_position_embeddings"] = positions
    config_file.write_text(json.dumps(config), encoding="utf-8")
    return folder


def write_inputs(folder: Path, n_items: int) -> tuple[Path, Path]:
    """A rubric of the example's first 6 criteria and ``n_items`` distinct submissions."""
    import yaml

    criteria = yaml.safe_load((ROOT / "examples" / "battery_rubric.yaml").read_text(encoding="utf-8"))
    rubric = folder / "rubric.yaml"
    rubric.write_text(yaml.safe_dump(criteria[:N_CRITERIA]), encoding="utf-8")
    rows = [json.loads(line) for line in (ROOT / "examples" / "battery_submissions.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()]
    data = folder / "data.jsonl"
    with data.open("w", encoding="utf-8") as out:
        for i in range(n_items):
            row = dict(rows[i % len(rows)])
            row["id"] = f"{row['id']}-{i}"
            row["submission"] = f"{row['submission']} (Answer number {i}.)"
            row.pop("reference_submission", None)
            out.write(json.dumps(row) + "\n")
    return rubric, data


def grade_once(judge: Path, rubric: Path, data: Path, db: Path, profile: Path | None) -> float:
    """Wall seconds of one ``grade`` subprocess (raises if it fails)."""
    command = [sys.executable]
    if profile is not None:
        command += ["-m", "cProfile", "-o", str(profile)]
    command += ["-m", "autorubric_local.cli", "grade", str(rubric), str(data), "--model", str(judge),
                "--db", str(db), "--no-progress", "--allow-failures", "--json", "--seed", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"grade failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="profile the last round (cProfile)")
    parser.add_argument("--profile-out", type=Path, default=None, help="also keep the profile in this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        judge = folder / "judge"
        build_judge(judge)
        rubric, data = write_inputs(folder, args.items)
        rounds = []
        for index in range(args.rounds):
            profile = folder / "grade.prof" if args.profile and index == args.rounds - 1 else None
            load = os.getloadavg()[0]
            seconds = grade_once(judge, rubric, data, folder / f"r{index}.sqlite", profile)
            rounds.append({"seconds": seconds, "load1": load, "profiled": profile is not None})
            print(f"round {index}: {seconds:.1f} s (load average {load:.2f})", flush=True)
        if args.profile:
            import pstats

            pstats.Stats(str(folder / "grade.prof")).sort_stats("cumulative").print_stats(35)
            if args.profile_out is not None:
                args.profile_out.write_bytes((folder / "grade.prof").read_bytes())
    timed = [r["seconds"] for r in rounds if not r["profiled"]] or [r["seconds"] for r in rounds]
    median = statistics.median(timed)
    judgments = args.items * N_CRITERIA
    print(json.dumps({"items": args.items, "judgments": judgments, "rounds": rounds, "median_seconds": median,
                      "jps": judgments / median, "ms_per_judgment": 1000 * median / judgments}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
