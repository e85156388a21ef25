"""Raw forward-pass speed of a judge in float32 against bfloat16 on this CPU (PyTorch).

Why: ``grade --dtype bfloat16`` is only worth it where PyTorch runs bfloat16 matrix products on
AMX tiles (``amx_bf16`` in ``/proc/cpuinfo``); without them bfloat16 is slower than float32.
This script says which case a machine is in, on the same weights (the preset's GGUF,
de-quantised as the transformers backend loads it), same threads, rounds interleaved
float32, bfloat16, float32, ...:

- ``prefill_tok_s``: one forward pass over ``--prefill-tokens`` random token ids, logits at the
  last position only (what scoring does), median of ``--rounds``.
- ``decode_tok_s``: ``--decode-steps`` single-token steps on a KV cache after a 64-token
  prompt, batch 1 (what an explanation costs per token), median of ``--rounds``.

Grading figures for the same comparison (judgments/s and verdict agreement on the essay set)
are in ``scripts/bench_peer.py``. Run: ``python scripts/bench_dtype.py [--presets ...]``; the
last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path


def cpu_flags() -> set[str]:
    """The CPU feature flags of ``/proc/cpuinfo`` (empty where there is none)."""
    info = Path("/proc/cpuinfo")
    for line in info.read_text().splitlines() if info.exists() else []:
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def load(preset: str, dtype: str) -> object:
    import torch
    from transformers import AutoModelForCausalLM

    from autorubric_local.judges.engines import ensure_converted
    from autorubric_local.judges.presets import resolve_model

    folder = ensure_converted(resolve_model(preset).path)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).eval()


def prefill(model: object, tokens: int) -> float:
    """Tokens/s of one forward pass over ``tokens`` ids (after a short warm-up pass)."""
    import torch

    ids = torch.randint(100, 20000, (1, tokens), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        model(ids[:, :32], logits_to_keep=1)  # type: ignore[operator]
        start = time.perf_counter()
        model(ids, logits_to_keep=1)  # type: ignore[operator]
    return tokens / (time.perf_counter() - start)


def decode(model: object, steps: int) -> float:
    """Tokens/s of ``steps`` single-token forward passes on a KV cache (batch 1)."""
    import torch

    ids = torch.randint(100, 20000, (1, 64), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        out = model(ids, use_cache=True, logits_to_keep=1)  # type: ignore[operator]
        cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        start = time.perf_counter()
        for _ in range(steps):
            out = model(token, past_key_values=cache, use_cache=True)  # type: ignore[operator]
            cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
    return steps / (time.perf_counter() - start)


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["smollm2-135m-instruct", "gemma3-270m"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prefill-tokens", type=int, default=600)
    parser.add_argument("--decode-steps", type=int, default=64)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    flags = cpu_flags()
    report: dict[str, object] = {
        "threads": args.threads, "torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "amx_bf16": "amx_bf16" in flags, "avx512_bf16": "avx512_bf16" in flags}
    print(f"torch {torch.__version__}, capability {report['cpu_capability']}, amx_bf16 {report['amx_bf16']}, "
          f"avx512_bf16 {report['avx512_bf16']}, {args.threads} threads", flush=True)
    for preset in args.presets:
        models = {dtype: load(preset, dtype) for dtype in ("float32", "bfloat16")}
        runs: dict[str, dict[str, list[float]]] = {d: {"prefill": [], "decode": []} for d in models}
        for round_ in range(args.rounds):
            for dtype, model in models.items():
                runs[dtype]["prefill"].append(prefill(model, args.prefill_tokens))
                runs[dtype]["decode"].append(decode(model, args.decode_steps))
                print(f"{preset} round {round_ + 1} {dtype}: prefill {runs[dtype]['prefill'][-1]:.0f} tok/s, "
                      f"decode {runs[dtype]['decode'][-1]:.1f} tok/s", flush=True)
        rows = {dtype: {"prefill_tok_s": round(statistics.median(r["prefill"])),
                        "decode_tok_s": round(statistics.median(r["decode"]), 1)} for dtype, r in runs.items()}
        for what in ("prefill_tok_s", "decode_tok_s"):
            rows[f"bfloat16/float32 {what}"] = round(rows["bfloat16"][what] / rows["float32"][what], 2)  # type: ignore[assignment]
        print(f"{preset}: {rows}", flush=True)
        report[preset] = rows
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
