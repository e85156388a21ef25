"""Server judges (``backend="server"``) against the in-process llama.cpp backend on the same GGUF.

Starts llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with the bundled SmolLM2 GGUF
(``tests/hosted_server.py``, the test suite's own starter), then scores the same verdict requests
of the bundled example (the first ``--items`` items, every criterion, one option order) with the
server judge and with the in-process llama.cpp judge, and prints:

- the largest difference per request of the label probabilities and log-probabilities, and of
  the off-label mass (the first decision step), with the worst over all requests;
- how many verdicts (argmax labels) agree;
- engine seconds per judgment of each (scored in A B B A order, same requests, one process).

Usage::

    .venv/bin/python scripts/eval_server_judge.py --items 2 > scripts/results/eval_server_judge_2cpu_DATE.txt
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from example_workload import example_items  # noqa: E402
from hosted_server import start_llama_server  # noqa: E402

from autorubric_local.graders.execution import verdict_request  # noqa: E402
from autorubric_local.graders.planning import plan_tasks  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.judges.engines import load_engine  # noqa: E402
from autorubric_local.judges.presets import resolve_model  # noqa: E402

MODEL = "smollm2-135m-instruct"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=2, help="first items of the bundled example (8 criteria each)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    log = Path("/tmp/eval_server_judge.log")
    gguf = resolve_model(MODEL).path
    process, base = start_llama_server(gguf, log, threads=args.threads)
    try:
        remote = load_engine(LLMConfig(model=MODEL, backend="server", api_base=base))
        local = load_engine(LLMConfig(model=MODEL, backend="llamacpp"))
        tasks = plan_tasks(example_items()[:args.items], [("j", local.format_chat)], seed=0)
        requests = [verdict_request(t) for t in tasks]
        seconds = {"server": 0.0, "in-process": 0.0}
        results = {}
        for name in ("in-process", "server", "server", "in-process"):  # A B B A
            engine = remote if name == "server" else local
            started = time.perf_counter()
            results[name] = engine.score(requests)
            seconds[name] += time.perf_counter() - started
        got, want = results["server"], results["in-process"]
        print(f"model {MODEL} ({gguf.name}); {len(requests)} verdict requests of the bundled example's first "
              f"{args.items} items; llama-cpp-python server on {base}, {args.threads} threads")
        print(f"{'request':>7} {'labels':>6} {'max |dp|':>10} {'max |dlogp|':>12} {'off-label rel':>14} {'same':>5}")
        worst_p = worst_lp = worst_off = 0.0
        same = errors = 0
        for index, (request, a, b) in enumerate(zip(requests, got, want, strict=True)):
            if a.error is not None or b.error is not None:
                errors += 1
                print(f"{index:>7} error: server {a.error!r}, in-process {b.error!r}")
                continue
            dp = max(abs(x - y) for x, y in zip(a.probabilities, b.probabilities, strict=True))
            dlp = max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True))
            off = (abs(a.off_label_mass - b.off_label_mass) / max(b.off_label_mass, 1e-12)
                   if a.off_label_mass is not None and b.off_label_mass is not None else float("nan"))
            agree = a.probabilities.index(max(a.probabilities)) == b.probabilities.index(max(b.probabilities))
            same += agree
            worst_p, worst_lp, worst_off = max(worst_p, dp), max(worst_lp, dlp), max(worst_off, off)
            print(f"{index:>7} {len(request.labels):>6} {dp:>10.2e} {dlp:>12.2e} {off:>14.2e} {'yes' if agree else 'NO':>5}")
        print(f"worst: |dp| {worst_p:.3e}, |dlogp| {worst_lp:.3e}, off-label mass relative {worst_off:.2e}; "
              f"verdicts the same {same} of {len(requests) - errors}; errors {errors}")
        for name, total in seconds.items():
            print(f"{name}: {total / (2 * len(requests)):.3f} s a judgment (two passes, A B B A)")
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    main()
