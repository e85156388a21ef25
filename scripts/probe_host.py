"""Where `grade`'s host work goes: named functions timed inside one grade run (not a test).

Builds the tiny random judge and a dataset as ``bench_scale.py`` does (N items x 6 binary criteria,
1,000-token submissions), then runs ``grade`` in this process with each function below wrapped by
a timer. A function's time is its inclusive wall time minus the model calls inside it
(``call_model``), so each row is host work; rows nest (``_score_group`` holds
``_tokenize_requests``), so they do not add up. ``encode(rust)`` is the fast tokenizer's own
``encode`` (:mod:`autorubric_local.engine.direct_encode`).

Usage: ``python scripts/probe_host.py --items 1000 > scripts/results/probe_host_<cpus>_<date>.txt``
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGETS = [
    ("autorubric_local.runner.runner", "EvalRunner.run_to_store"),
    ("autorubric_local.runner.runner", "EvalRunner._grade_pending"),
    ("autorubric_local.graders.criterion_grader", "CriterionGrader.grade_batch"),
    ("autorubric_local.graders.execution", "run_tasks"),
    ("autorubric_local.engine.transformers.backend", "TransformersEngine._score_group"),
    ("autorubric_local.engine.transformers.backend", "TransformersEngine._tokenize_requests"),
    ("autorubric_local.engine.chat_text", "HFTextMixin._encode_head"),
    ("autorubric_local.engine.chat_text", "HFTextMixin._window_parts"),
    ("autorubric_local.engine.chat_text", "HFTextMixin._label_after"),
    ("autorubric_local.engine.transformers.backend", "TransformersEngine._score_packed"),
    ("autorubric_local.engine.transformers.backend", "TransformersEngine._prefix_cache"),
    ("autorubric_local.engine.transformers.backend", "TransformersEngine._score_row"),
    ("autorubric_local.engine.transformers.backend", "TransformersEngine._row_mask"),
    ("autorubric_local.engine.transformers.row_layouts", "RowLayouts.placed"),
    ("autorubric_local.graders.criterion_grader", "CriterionGrader._assemble"),
    ("autorubric_local.runner.runner", "EvalRunner._commit"),
    ("autorubric_local.cli.grade", "stream_json_lines"),
]

seconds: dict[str, float] = collections.defaultdict(float)
calls: collections.Counter[str] = collections.Counter()
in_model = [0.0]


def timed(function: Any, key: str) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started, model_before = time.perf_counter(), in_model[0]
        try:
            return function(*args, **kwargs)
        finally:
            seconds[key] += time.perf_counter() - started - (in_model[0] - model_before)
            calls[key] += 1
    return wrapper


def install() -> None:
    """Wrap ``call_model`` (model time) and every :data:`TARGETS` entry, and the tokenizer's encode."""
    from autorubric_local.engine import chat_text
    from autorubric_local.engine.transformers import backend

    call_model = backend.call_model

    def model_call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call_model(*args, **kwargs)
        finally:
            in_model[0] += time.perf_counter() - started

    backend.call_model = model_call
    for module_name, name in TARGETS:
        module = importlib.import_module(module_name)
        owner_name, _, attribute = name.rpartition(".")
        owner = getattr(module, owner_name) if owner_name else module
        original = getattr(owner, attribute)
        wrapped = timed(original, name)
        setattr(owner, attribute, wrapped)
        if not owner_name:  # a function: also where other modules imported it by name
            for other in list(sys.modules.values()):
                if getattr(other, "__name__", "").startswith("autorubric_local") \
                        and getattr(other, attribute, None) is original:
                    setattr(other, attribute, wrapped)
    direct_encoder = chat_text.direct_encoder
    chat_text.direct_encoder = lambda tokenizer: timed(direct_encoder(tokenizer), "encode(rust)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--submission-tokens", type=int, default=1000)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import bench_scale

    work = Path(tempfile.mkdtemp(prefix="probe-host-"))
    judge = str(bench_scale.build_tiny_judge(work / "tiny-judge"))
    data, db = work / "data.jsonl", work / "run.sqlite"
    bench_scale.write_dataset(data, args.items, round(args.submission_tokens / bench_scale.tokens_per_word(judge)))
    install()
    print(f"# scripts/probe_host.py --items {args.items}; {os.cpu_count()} CPUs; "
          f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; load average {os.getloadavg()[0]:.2f}")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        bench_scale.child_grade(judge, str(data), str(db))
    timers = json.loads(out.getvalue().strip().splitlines()[-1])
    import sqlite_utils

    judgments = sqlite_utils.Database(db)["judgments"].count
    host = timers["wall_s"] - timers["load_s"] - in_model[0]
    print(f"# {judgments} judgments; grade {timers['wall_s'] - timers['load_s']:.2f} s after the judge's load, "
          f"model calls {in_model[0]:.2f} s, host {host:.2f} s = {1000 * host / judgments:.3f} ms a judgment")
    print("| function (host seconds, model calls inside excluded) | s | ms/judgment | calls |\n|---|---:|---:|---:|")
    for key, value in sorted(seconds.items(), key=lambda kv: -kv[1]):
        print(f"| {key} | {value:.3f} | {1000 * value / judgments:.3f} | {calls[key]} |")
    import shutil

    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
