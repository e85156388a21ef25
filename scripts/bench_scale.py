"""Scale benchmark (issue 33): ``grade`` on 10^3 .. 10^5 items, and the commands that read the run.

For each judge and each size N it writes an AutoRubric dataset JSONL (a header with a rubric of 6
binary criteria, then N items of about ``--submission-tokens`` tokens each, seeded pseudo-text,
every item with ground truth so ``metrics`` has something to compare), then, each in its own
process:

- ``autorubric-local grade`` (``--no-progress --jsonl``, output discarded): wall seconds,
  judgments/s, peak RSS (``wait4``'s ``ru_maxrss`` of that process), and the split of the
  grading time: ``engine_s`` is the time spent inside the model's forward passes (the
  ``forward`` of the judge's ``*ForCausalLM`` class, timed in that process), ``load_s`` the time
  spent loading the judge, and ``host_s = wall - load - engine`` everything else we do (reading,
  planning, tokenizing, masks, scoring, SQLite), also per judgment (``host_ms_per_judgment``).
- ``runs``, ``show RUN``, ``export RUN --per judgment``, ``report RUN`` and ``metrics``: wall seconds
  and peak RSS each; the report's size in bytes.

Judges: ``tiny`` (the test suite's 2-layer random Llama with its byte-level BPE tokenizer, saved as
a model folder: the engine costs almost nothing, so the figures are our own work),
``embedded`` (the default judge, SmolLM2-135M-Instruct from the bundled GGUF, on this CPU) and
``random`` (a real judge's shape, ``--model-config``, e.g. Qwen2.5-7B-Instruct from
``models/configs/``, built with random bf16 weights on the GPU as ``bench_gpu.py`` builds it and
saved as a model folder with the bundled judge's tokenizer: the GPU host/engine split, nothing
downloaded; ``--random-tiny`` shrinks the shape as ``bench_gpu.py --tiny`` does, a CPU smoke test).
On CUDA the forward-pass timer synchronizes the device before and after each pass, so
``engine_s`` holds the GPU's work and not just the kernel launches.

Run: ``python scripts/bench_scale.py --judge tiny --items 1000 10000``; one JSON line per
(judge, N), then a table. Nothing here is a test: figures depend on the machine.

A/B on one judge: ``--trees A=/tmp/old B=.`` grades each N once per tree, in the order given
(``A B B A`` interleaves), the grade child importing ``autorubric_local`` from that tree
(``PYTHONPATH``); each row names its tree in ``package``. ``--judge-dir DIR`` keeps the random
judge's folder in DIR (built there if absent, reused if present, never deleted), so separate
invocations on a GPU box share one 15 GB folder instead of writing it again.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))  # bench_host, beside this script
CRITERIA = [
    ("density", "States the energy density of NMC or LFP cells in Wh/kg."),
    ("cycle_life", "Compares the cycle life of the two chemistries."),
    ("safety", "Mentions thermal runaway or thermal stability."),
    ("cost", "Compares the cost of the two chemistries."),
    ("use_case", "Names a use case suited to each chemistry."),
    ("errors", "Contains a factual error about either chemistry."),
]
WORDS = ("NMC LFP cathode energy density Wh/kg cycle life thermal runaway cost cobalt nickel iron phosphate "
         "voltage plateau capacity fade charge rate safety vehicle storage grid cell pack module").split()


def tokens_per_word(model: str) -> float:
    """How many tokens the judge's tokenizer spends on a word of :data:`WORDS` text, measured (a
    model folder's tokenizer alone is loaded, not its weights)."""
    if Path(model).is_dir():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
    else:
        from autorubric_local.judges.config import LLMConfig
        from autorubric_local.judges.engines import load_engine

        tokenizer = load_engine(LLMConfig(model=model)).tokenizer
    sample = " ".join(random.Random(1).choice(WORDS) for _ in range(2000))
    return len(tokenizer.encode(sample, add_special_tokens=False)) / 2000


def write_dataset(path: Path, n_items: int, words: int, seed: int = 0) -> None:
    """The dataset JSONL (header with the rubric, then ``n_items`` items of ``words`` words each),
    streamed to disk."""
    rng = random.Random(seed)
    rubric = [{"name": name, "weight": -1.0 if name == "errors" else 1.0, "requirement": text}
              for name, text in CRITERIA]
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"name": "scale", "prompt": "Compare NMC and LFP cathodes for EV batteries.",
                              "rubric": rubric}) + "\n")
        for i in range(n_items):
            text = " ".join(rng.choice(WORDS) for _ in range(words))
            truth = [rng.choice(["MET", "UNMET"]) for _ in CRITERIA]
            out.write(json.dumps({"id": f"s{i}", "submission": f"Item {i}. {text}", "ground_truth": truth}) + "\n")


def build_tiny_judge(folder: Path) -> Path:
    """The test suite's tiny random judge saved as a model folder, with 8192 positions (prompts of
    1,000-token submissions run to ~2,500 tokens with its byte-level tokenizer)."""
    from bench_host import build_judge

    return build_judge(folder, positions=8192)


def build_random_judge(folder: Path, config_name: str, tokenizer_folder: Path | None, tiny: bool) -> Path:
    """``config_name``'s shape (``models/configs/``) with random weights, built on CUDA when torch
    sees a GPU (bf16; float32 on CPU), saved to ``folder`` with the bundled judge's tokenizer
    (``bench_gpu.judge_tokenizer``: read from its GGUF, or the folder ``tokenizer_folder``)."""
    import torch

    from bench_gpu import build_model, judge_tokenizer, load_config

    on_gpu = torch.cuda.is_available()
    model = build_model(load_config(config_name, tiny), "cuda" if on_gpu else "cpu",
                        torch.bfloat16 if on_gpu else torch.float32)
    model.save_pretrained(folder)
    judge_tokenizer(tokenizer_folder).save_pretrained(folder)
    del model
    if on_gpu:
        torch.cuda.empty_cache()
    return folder


def child_grade(model: str, data: str, db: str) -> None:
    """In a child process: ``grade`` in-process with the judge's forward passes and loading timed."""
    import transformers

    from autorubric_local.cli import main
    from autorubric_local.graders import criterion_grader
    from autorubric_local.judges import engines

    timers = {"engine_s": 0.0, "load_s": 0.0, "forward_calls": 0}

    import torch

    cuda = torch.cuda.is_available()

    def timed(function: Any, key: str) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if cuda and key == "engine_s":
                torch.cuda.synchronize()  # earlier queued work is not this pass's
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                if cuda and key == "engine_s":
                    torch.cuda.synchronize()  # the pass's kernels, not only their launches
                timers[key] += time.perf_counter() - started
                if key == "engine_s":
                    timers["forward_calls"] += 1
        return wrapper

    for name in dir(transformers):
        if name.endswith("ForCausalLM"):
            try:
                cls = getattr(transformers, name)
            except Exception:  # an optional model whose dependencies are missing
                continue
            if isinstance(cls, type) and "forward" in cls.__dict__:
                cls.forward = timed(cls.forward, "engine_s")
    criterion_grader.load_engine = timed(engines.load_engine, "load_s")  # where the grader looks it up
    started = time.perf_counter()
    with open(os.devnull, "w") as sink:
        stdout, sys.stdout = sys.stdout, sink
        try:
            judge = ["--model", model]
            if os.environ.get("BENCH_SCALE_MAX_BATCH_TOKENS"):  # --max-batch-tokens: a one-judge panel file
                panel = Path(db).with_suffix(".judges.yaml")
                panel.write_text(f"judges:\n  - judge_id: judge\n    model: {json.dumps(model)}\n"
                                 f"    max_batch_tokens: {int(os.environ['BENCH_SCALE_MAX_BATCH_TOKENS'])}\n",
                                 encoding="utf-8")
                judge = ["--judges", str(panel)]
            main(["grade", data, *judge, "--db", db, "--run", "scale", "--no-progress", "--jsonl"],
                 standalone_mode=False)
        except SystemExit as exc:
            if exc.code not in (0, None, 3):
                raise
        finally:
            sys.stdout = stdout
    timers["wall_s"] = time.perf_counter() - started
    import autorubric_local

    timers["package_dir"] = str(Path(autorubric_local.__file__).resolve().parent.parent)  # which tree graded
    timers["device"] = torch.cuda.get_device_name() if cuda else "cpu"
    timers["torch_threads"] = torch.get_num_threads()
    print(json.dumps(timers))


_PEAK_RSS = """import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
sys.stderr.write(f"\\npeak-rss-kib {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Runs a command and writes its peak RSS as the last line of stderr. The command is started
from this small process, not from the benchmark's: on Linux a child's ``ru_maxrss`` counts its
parent's resident memory at the fork (kept across ``exec``), so a command started straight from
a parent holding torch and a judge (~480 MiB) never reads below that."""


def run_child(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Run ``command`` (environment ``env``, default this one's): its wall seconds, peak RSS in
    MiB (its own ``ru_maxrss``, from ``wait4`` in :data:`_PEAK_RSS`'s launcher) and stdout."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", _PEAK_RSS, *command], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    out, err = process.communicate()
    wall = time.perf_counter() - started
    if process.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(command[:5])} ... failed ({process.returncode}): {err[-3000:]}")
    peak_kib = int(err.rstrip().rsplit("\n", 1)[-1].split()[1])
    return wall, peak_kib / 1024, out


def bench(judge: str, model: str, n_items: int, submission_tokens: int, work: Path,
          grade_only: bool = False, tree: Path | None = None) -> dict[str, Any]:
    """One (judge, N) row; ``tree``: a folder whose ``autorubric_local`` the grade child imports
    (first on its ``PYTHONPATH``; default: whichever this interpreter finds)."""
    data, db = work / f"{judge}-{n_items}.jsonl", work / f"{judge}-{n_items}.sqlite"
    ratio = tokens_per_word(model)
    write_dataset(data, n_items, round(submission_tokens / ratio))
    cli = [sys.executable, "-m", "autorubric_local.cli"]
    env = None
    if tree is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(tree.resolve()), *filter(None, [os.environ.get("PYTHONPATH")])])}
    _, rss, out = run_child([sys.executable, __file__, "--child", model, str(data), str(db)], env)
    timers = json.loads(out.strip().splitlines()[-1])
    import sqlite_utils

    database = sqlite_utils.Database(db)
    judgments = database["judgments"].count
    failed = database.execute("select count(*) from items where json_extract(report_json, '$.error') is not null").fetchone()[0]
    prompt_tokens = database.execute("select avg(prompt_tokens) from judgments").fetchone()[0] \
        if "prompt_tokens" in database["judgments"].columns_dict else None
    database.close()
    grade_s = timers["wall_s"] - timers["load_s"]
    row: dict[str, Any] = {
        "judge": judge, "items": n_items, "judgments": judgments, "items_with_error": failed,
        "submission_tokens": submission_tokens, "tokens_per_word": round(ratio, 2),
        "mean_prompt_tokens": prompt_tokens,
        "data_mib": round(data.stat().st_size / 2**20, 1),
        "grade_wall_s": round(timers["wall_s"], 1), "load_s": round(timers["load_s"], 1),
        "judgments_per_s": round(judgments / grade_s, 1),
        "engine_s": round(timers["engine_s"], 1), "forward_calls": timers["forward_calls"],
        "torch_threads": timers["torch_threads"], "device": timers["device"],
        "host_s": round(grade_s - timers["engine_s"], 1),
        "host_ms_per_judgment": round(1000 * (grade_s - timers["engine_s"]) / judgments, 3),
        "engine_ms_per_judgment": round(1000 * timers["engine_s"] / judgments, 3),
        "grade_peak_rss_mib": round(rss),
        "package_dir": timers["package_dir"],
        "db_mib": round(db.stat().st_size / 2**20, 1),
    }
    if grade_only:
        for leftover in (data, db):
            leftover.unlink(missing_ok=True)
        return row
    report = work / f"{judge}-{n_items}-report"  # a folder: the page and its files
    commands = {
        "runs": [*cli, "runs", "--db", str(db)],
        "show": [*cli, "show", "scale", "--db", str(db)],
        "export": [*cli, "export", "scale", "--db", str(db), "--per", "judgment", "--format", "jsonl",
                   "--out", str(work / "export.jsonl")],
        "report": [*cli, "report", "scale", "--db", str(db), "--out", str(report)],
        "metrics": [*cli, "metrics", "scale", "--db", str(db), "--no-save"],
    }
    for name, command in commands.items():
        wall, rss, _ = run_child(command)
        row[f"{name}_s"] = round(wall, 1)
        row[f"{name}_peak_rss_mib"] = round(rss)
    row["report_mib"] = round(sum(f.stat().st_size for f in report.rglob("*") if f.is_file()) / 2**20, 2)
    shutil.rmtree(report)
    for leftover in (data, db, work / "export.jsonl"):
        leftover.unlink(missing_ok=True)
    return row


def big_file(model: str, work: Path, n_items: int, limit: int | None) -> dict[str, Any]:
    """Issue 33's size cliff: a submissions JSONL of ``n_items`` rows of ~2 KB (40,000 rows: ~81 MB,
    over the old 64 MiB file limit), graded with ``--limit`` (or whole) by the CLI."""
    rng = random.Random(2)
    rubric, data, db = work / "rubric.yaml", work / "big.jsonl", work / "big.sqlite"
    rubric.write_text("".join(f"- name: {name}\n  weight: 1\n  requirement: {text}\n" for name, text in CRITERIA),
                      encoding="utf-8")
    with data.open("w", encoding="utf-8") as out:
        for i in range(n_items):
            text = " ".join(rng.choice(WORDS) for _ in range(300))
            out.write(json.dumps({"id": f"s{i}", "submission": f"Item {i}. {text}"}) + "\n")
    command = [sys.executable, "-m", "autorubric_local.cli", "grade", str(rubric), str(data), "--model", model,
               "--db", str(db), "--run", "big", "--no-progress", "--jsonl"] + ([] if limit is None else
                                                                                ["--limit", str(limit)])
    wall, rss, out = run_child(command)
    import sqlite_utils

    database = sqlite_utils.Database(db)
    row = {"big_file_mb": round(data.stat().st_size / 1e6, 1), "big_file_mib": round(data.stat().st_size / 2**20, 1),
           "rows": n_items, "limit": limit, "wall_s": round(wall, 1), "peak_rss_mib": round(rss),
           "items_graded": database.execute("select count(*) from items where report_json is not null").fetchone()[0],
           "judgments": database["judgments"].count, "jsonl_lines_printed": len(out.splitlines())}
    database.close()
    for leftover in (data, db, rubric):
        leftover.unlink(missing_ok=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judge", choices=["tiny", "embedded", "random"], action="append")
    parser.add_argument("--model-config", default="qwen2.5-7b-instruct",
                        help="--judge random: a models/configs name or config.json path")
    parser.add_argument("--random-tiny", action="store_true", help="--judge random: shrink the shape (CPU smoke test)")
    parser.add_argument("--tokenizer", type=Path, default=None,
                        help="--judge random: a saved tokenizer folder instead of the bundled GGUF's")
    parser.add_argument("--max-batch-tokens", type=int, default=None,
                        help="the judge's max_batch_tokens (16384: the batched scoring path accelerators take by "
                             "default, here on any device; 0: one prefix group per pass)")
    parser.add_argument("--trees", nargs="+", metavar="LABEL=DIR", default=None,
                        help="grade each N once per package tree, in this order (A/B: A=/tmp/old B=. B=. A=/tmp/old)")
    parser.add_argument("--judge-dir", type=Path, default=None,
                        help="--judge random: build the judge folder here if absent, reuse it if present, keep it")
    parser.add_argument("--grade-only", action="store_true",
                        help="time grade only, not runs/show/export/report/metrics")
    parser.add_argument("--items", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--submission-tokens", type=int, default=1000)
    parser.add_argument("--big-file", type=int, metavar="ROWS", help="grade a submissions file of ROWS ~2 KB rows "
                        "(40000: ~81 MB) with the tiny judge and --limit (--big-limit) instead")
    parser.add_argument("--big-limit", type=int, default=5, help="--limit for --big-file; 0: the whole file")
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "DATA", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.max_batch_tokens is not None:
        os.environ["BENCH_SCALE_MAX_BATCH_TOKENS"] = str(args.max_batch_tokens)  # read by the grade child
    if args.child:
        if os.environ.get("BENCH_SCALE_PROFILE"):  # a cProfile of the grade child, written to that path
            import cProfile

            cProfile.runctx("child_grade(*args.child)", globals(), {"args": args}, os.environ["BENCH_SCALE_PROFILE"])
        else:
            child_grade(*args.child)
        return
    trees: list[tuple[str | None, Path | None]] = [(None, None)]
    if args.trees:
        trees = [(label, Path(folder)) for label, _, folder in (t.partition("=") for t in args.trees)]
        for label, folder in trees:
            if not (folder / "autorubric_local" / "__init__.py").is_file():
                parser.error(f"--trees {label}={folder}: no autorubric_local package in that folder")
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        print(f"# bench_scale on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}; "
              f"python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.2f}", flush=True)
        if args.big_file:
            row = big_file(str(build_tiny_judge(work / "tiny-judge")), work, args.big_file, args.big_limit or None)
            print(json.dumps(row), flush=True)
            return
        rows = []
        for judge in args.judge or ["tiny"]:
            if judge == "tiny":
                model = str(build_tiny_judge(work / "tiny-judge"))
            elif judge == "random" and args.judge_dir is not None and (args.judge_dir / "config.json").exists():
                model = str(args.judge_dir)
            elif judge == "random":
                model = str(build_random_judge(args.judge_dir or work / "random-judge", args.model_config,
                                               args.tokenizer, args.random_tiny))
            else:
                model = "smollm2-135m-instruct"
            for n_items, (label, tree) in ((n, t) for n in args.items for t in trees):
                row = bench(judge, model, n_items, args.submission_tokens, work, args.grade_only, tree)
                if label is not None:
                    row = {"package": label, **row}
                if judge == "random":
                    shape = Path(args.model_config).stem if args.model_config.endswith(".json") else args.model_config
                    row["judge"] = f"random {shape}{' (tiny)' if args.random_tiny else ''}"
                row["load_average_1m_after"] = round(os.getloadavg()[0], 2)
                rows.append(row)
                print(json.dumps(row), flush=True)
        keys = ["package"] * bool(args.trees) + [
            "judge", "device", "items", "judgments", "judgments_per_s", "host_ms_per_judgment", "engine_ms_per_judgment",
            "grade_peak_rss_mib", "db_mib", "runs_s", "show_s", "export_s", "report_s", "metrics_s"]
        print("\n| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
        for row in rows:
            print("| " + " | ".join(str(row.get(k)) for k in keys) + " |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
