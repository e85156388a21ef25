"""Time Python's cyclic garbage collector inside ``autorubric-local grade`` (issue 33's host work).

Builds bench_scale's tiny random judge and dataset (``--items`` items of ~1,000 tokens, 6
criteria), then runs bench_scale's grade child in this process with :data:`gc.callbacks`
counting, only while the CLI command runs, the collections of each generation and their seconds,
and for each full (generation 2) collection its seconds and how many objects that generation held
afterwards. The package is the one on ``PYTHONPATH`` (A/B: a base tree first on the path).
The last line printed is one JSON object: bench_scale's timers (``wall_s``, ``load_s``,
``engine_s``), ``gc`` (per generation: ``collections`` and ``seconds``), ``full`` (each full
collection: ``[seconds, objects in generation 2 after it, objects frozen]``) and ``host_s``
(wall minus load minus the forward passes).
Run: ``python scripts/bench_gc.py [--items 200]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import io
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--items", type=int, default=200)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-gc-"))
    model = bench_scale.build_tiny_judge(work / "tiny-judge")
    data = work / "data.jsonl"
    bench_scale.write_dataset(data, args.items, round(1000 / bench_scale.tokens_per_word(str(model))))
    import autorubric_local.cli as cli  # what the child imports, loaded before the counting starts

    for name in ("torch", "transformers"):
        importlib.import_module(name)

    counts = {generation: {"collections": 0, "seconds": 0.0} for generation in range(3)}
    full: list[list[float | int]] = []
    inside = [False]
    started = [0.0]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if not inside[0]:
            return
        if phase == "start":
            started[0] = time.perf_counter()
            return
        seconds = time.perf_counter() - started[0]
        counts[info["generation"]]["collections"] += 1
        counts[info["generation"]]["seconds"] += seconds
        if info["generation"] == 2:
            full.append([round(seconds, 3), len(gc.get_objects(2)), gc.get_freeze_count()])

    command = cli.main

    def counted(*a: Any, **k: Any) -> Any:
        inside[0] = True
        try:
            return command(*a, **k)
        finally:
            inside[0] = False

    cli.main = counted
    gc.callbacks.append(on_gc)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            bench_scale.child_grade(str(model), str(data), str(work / "run.sqlite"))
    finally:
        gc.callbacks.remove(on_gc)
        shutil.rmtree(work)
    timers = json.loads(out.getvalue().strip().splitlines()[-1])
    row = {"items": args.items, **{k: timers[k] for k in ("wall_s", "load_s", "engine_s", "torch_threads")},
           "host_s": timers["wall_s"] - timers["load_s"] - timers["engine_s"],
           "gc": {str(g): {"collections": c["collections"], "seconds": round(c["seconds"], 3)} for g, c in counts.items()},
           "full": full}
    print(json.dumps(row))


if __name__ == "__main__":
    main()
