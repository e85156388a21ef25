"""Peer measurement: upstream AutoRubric 1.6.1 grading a dataset against a local llama.cpp server.

What it measures: the throughput (judgments per second of wall time, grading only, server
start-up excluded) and the verdicts of AutoRubric's own ``CriterionGrader`` (one LLM call per
criterion, temperature 0) driving llama-cpp-python's OpenAI-compatible server, which runs the
same GGUF judge as autorubric-local. With ground truth in the dataset it also reports accuracy
and Cohen's kappa over the judgments that did not error (a CANNOT_ASSESS verdict counts as a
disagreement there).

Run it with the interpreter of .venv-peer (scripts/setup_peer.sh), e.g.::

    .venv-peer/bin/python scripts/peer_autorubric.py --gguf PATH.gguf \
        --data essay_grading_dataset.json --out peer.json

The one deviation from stock use: AutoRubric asks for structured output with
``response_format={"type": "json_schema", ...}``, which llama-cpp-python's server rejects
(HTTP 500: its request model allows only "text" and "json_object"). ``--response-format``
says what is sent instead, rewritten on the client just before LiteLLM's call:
``schema`` (default) sends the same schema as llama-cpp-python's own form
``{"type": "json_object", "schema": ...}`` (a grammar constrained to AutoRubric's schema);
``json_object`` sends plain JSON mode without the schema; ``stock`` sends it unchanged
(every call then fails).

Errors: AutoRubric turns a failed call (server error, or a reply that does not parse) into a
CANNOT_ASSESS verdict that carries ``error`` ("infrastructure: ..." / "parse: ..."); those are
counted under ``errors`` here, not under CANNOT_ASSESS. A call that outlives ``--timeout``
is retried by AutoRubric (3 attempts), but the server goes on computing the abandoned request,
so on a busy machine timeouts snowball: ``requests`` counts the calls by outcome. Time it on
a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else LiteLLM fetches a price map

import litellm  # noqa: E402
from autorubric import LLMConfig, RubricDataset  # noqa: E402
from autorubric.eval import evaluate  # noqa: E402
from autorubric.graders import CriterionGrader  # noqa: E402

MODEL_ALIAS = "judge"


def start_server(args: argparse.Namespace, log_path: Path) -> tuple[subprocess.Popen, list[str]]:
    """Launch llama-cpp-python's server, its output going to ``log_path``; return it and its flags."""
    flags = [
        "--model", args.gguf, "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(args.port), "--n_ctx", "8192",
        "--n_threads", str(args.threads), "--n_threads_batch", str(args.threads),
        "--chat_format", "chatml",
    ]  # fmt: skip
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", *flags], stdout=log, stderr=subprocess.STDOUT
        )
    return proc, flags


def wait_ready(proc: subprocess.Popen, port: int, log_path: Path, limit_s: float = 180) -> None:
    """Return once the server's /v1/models answers."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"server did not answer within {limit_s} s; see {log_path}")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


REQUESTS: Counter = Counter()  # HTTP calls AutoRubric made (retries included), by outcome


def wrap_acompletion(mode: str) -> None:
    """Count AutoRubric's calls and make its json_schema requests acceptable to
    llama-cpp-python (see the module docstring)."""
    from litellm.utils import type_to_response_format_param

    original = litellm.acompletion

    async def acompletion(*a, **kw):
        rf = kw.get("response_format")
        if mode != "stock" and rf is not None:
            if not isinstance(rf, dict):
                rf = type_to_response_format_param(rf)
            if rf.get("type") == "json_schema":
                schema = {"schema": rf["json_schema"]["schema"]} if mode == "schema" else {}
                kw["response_format"] = {"type": "json_object", **schema}
        try:
            response = await original(*a, **kw)
        except Exception as e:
            REQUESTS[type(e).__name__] += 1
            raise
        REQUESTS["ok"] += 1
        return response

    litellm.acompletion = acompletion  # autorubric.llm calls litellm.acompletion(...)
    litellm.suppress_debug_info = True  # no "Give Feedback" banner on every failed call


def kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's kappa of two label lists (by formula; None when undefined)."""
    n = len(a)
    if n == 0:
        return None
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in set(a) | set(b)) / n**2
    return None if pe == 1 else (po - pe) / (1 - pe)


def grade(args: argparse.Namespace) -> dict:
    """Grade the dataset; return the timed results (the server must be up)."""
    full = RubricDataset.from_file(args.data)
    items = full.items[: args.limit] if args.limit else full.items
    dataset = RubricDataset(
        prompt=full.prompt, rubric=full.rubric, items=items, name=full.name,
        reference_submission=full.reference_submission,
    )  # fmt: skip
    grader = CriterionGrader(
        judge_model_config=LLMConfig(
            model=f"openai/{MODEL_ALIAS}",
            api_base=f"http://127.0.0.1:{args.port}/v1",
            api_key="sk-local",
            temperature=0.0,
            timeout=args.timeout,
            max_parallel_requests=args.parallel,
        )
    )
    with tempfile.TemporaryDirectory() as experiments:
        t0 = time.perf_counter()
        result = asyncio.run(
            evaluate(dataset, grader, show_progress=False, experiments_dir=experiments)
        )
        seconds = time.perf_counter() - t0

    judgments = []
    for r in sorted(result.item_results, key=lambda r: r.item_idx):
        gt = r.item.ground_truth
        n_crit = len(dataset.get_item_rubric(r.item_idx).rubric)
        reports = r.report.report or [None] * n_crit  # None: the whole item failed
        for c, cr in enumerate(reports):
            judgments.append({
                "item": r.item_idx,
                "criterion": c,
                "verdict": cr.final_verdict.value if cr and cr.final_verdict else None,
                "error": (cr.error if cr else r.error),
                "ground_truth": getattr(gt[c], "value", gt[c]) if gt else None,
            })  # fmt: skip

    counts = Counter("errors" if j["error"] else j["verdict"] for j in judgments)
    scored = [j for j in judgments if not j["error"] and j["ground_truth"] is not None]
    pred, true = [j["verdict"] for j in scored], [j["ground_truth"] for j in scored]
    n = len(judgments)
    return {
        "n_items": len(dataset),
        "n_judgments": n,
        "seconds": round(seconds, 3),
        "judgments_per_s": round(n / seconds, 4),
        "ok_judgments_per_s": round((n - counts["errors"]) / seconds, 4),
        "counts": {k: counts[k] for k in ("MET", "UNMET", "CANNOT_ASSESS", "errors")},
        "requests": dict(REQUESTS),
        "n_scored": len(scored),
        "accuracy": round(sum(p == t for p, t in zip(pred, true)) / len(scored), 4)
        if scored
        else None,
        "cohen_kappa": None if (k := kappa(true, pred)) is None else round(k, 4),
        "judgments": judgments,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gguf", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--parallel", type=int, default=1, help="requests in flight")
    p.add_argument("--limit", type=int, default=None, help="first K items only")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--timeout", type=float, default=60.0, help="per call (AutoRubric's default)")
    p.add_argument("--response-format", choices=("schema", "json_object", "stock"), default="schema")
    p.add_argument("--out", required=True)
    p.add_argument("--server-log", default=None, help="default: OUT with .server.log")
    args = p.parse_args()

    out = Path(args.out)
    log_path = Path(args.server_log or out.with_suffix(".server.log"))
    wrap_acompletion(args.response_format)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the server
    proc, flags = start_server(args, log_path)
    try:
        wait_ready(proc, args.port, log_path)
        res = grade(args)
    finally:
        stop_server(proc)
    res = {
        "tool": "autorubric (upstream) CriterionGrader via llama-cpp-python server",
        "versions": {"autorubric": version("autorubric"), "llama_cpp": version("llama_cpp_python"),
                     "litellm": version("litellm")},
        "gguf": args.gguf, "data": args.data, "parallel": args.parallel, "limit": args.limit,
        "timeout": args.timeout, "response_format": args.response_format, "server_flags": flags,
        "server_log": str(log_path), **res,
    }  # fmt: skip
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "judgments"}, indent=1))


if __name__ == "__main__":
    main()
