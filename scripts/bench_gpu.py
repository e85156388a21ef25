"""Benchmark judge throughput on a CUDA GPU with real judges' shapes and random weights.

For each model shape (``models/configs/*.json``: the architecture of Qwen2.5-7B-Instruct and
Llama-3.1-8B-Instruct, no weights), a bf16 model is built with random weights on the device
(speed does not depend on weight values; nothing is downloaded) and the project's benchmark
workload (``bench_workload.py`` through ``bench_engine.py``: N seeded essays x 8 criteria, 14
judgments per item) is judged with the tokenizer of the bundled SmolLM2 judge (its ids are
below every config's vocabulary). Rows, per shape and backend (transformers; vLLM too where it
is installed, with ``load_format="dummy"`` random weights):

- ``score``: ``run_tasks(mode=SCORE)`` over the whole workload. ``judgments/s``;
  ``prefill tok/s`` = computed tokens (``bench_engine.computed_tokens``: each item's shared
  prompt once plus its distinct trie nodes) / seconds; ``ratio`` = prefill tok/s / bound.
- ``explain``: ``run_tasks(mode=EXPLAIN)`` (verdict, then a constrained explanation of up to
  ``--explanation-tokens``) over the same workload. ``judgments/s``; ``decode tok/s`` =
  explanation tokens / seconds of the explain run's generation call (timed around the engine's
  ``generate``), i.e. the generation pass with its own prompt prefill, so a lower bound on pure
  decode speed.
- ``--sdpa KERNEL`` (repeatable) adds score and explain rows with attention restricted to one of
  torch's kernels (``transformers sdpa=efficient``...), on the same model, to find which one the
  packed decode steps should use.
- ``prefill bound tok/s``: the best of 3 timed plain forward passes of one large batch of
  random ids (``--bound-shape``, default 4x4096 on CUDA; last-position logits only), measured
  in the same run on the same model (``bench_engine.prefill_throughput``).

The first line printed names the device as torch reports it. CPU results are a smoke test
(``--tiny``: each shape shrunk to 2 layers of width 128), never GPU figures: the header says
so, and ``--out`` refuses a file name that says ``gpu`` for them. Run on a GPU box:
``python scripts/bench_gpu.py --out scripts/results/bench_gpu_h100_<date>.txt``; smoke test:
``python scripts/bench_gpu.py --tiny``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import computed_tokens, plan, prefill_throughput, time_engine, warm_up  # noqa: E402

from autorubric_local.graders.execution import JudgeMode  # noqa: E402
from autorubric_local.judges.engines import free_memory  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "models" / "configs"
DEFAULT_CONFIGS = ("qwen2.5-7b-instruct", "llama-3.1-8b-instruct")
TOKENIZER_PRESET = "smollm2-135m-instruct"
TINY = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 64}
"""What ``--tiny`` overrides in each config (vocabulary, RoPE and norms stay the real ones); head_dim
64, since vLLM's CPU attention has no kernel for smaller heads."""


@dataclass(frozen=True)
class Row:
    """One line of the table. Rates are per second of wall time; None where not applicable.
    ``failed``: judgments of the row that came back with an error (e.g. out of memory); they are
    in ``judgments`` and the rates, so a row with failures is no throughput figure."""

    shape: str
    backend: str
    mode: str
    judgments: int
    judgments_per_s: float
    prefill_tokens_per_s: float | None
    decode_tokens_per_s: float | None
    bound_tokens_per_s: float
    ratio: float | None
    failed: int


def load_config(name: str, tiny: bool) -> Any:
    """A transformers config from ``models/configs/<name>.json`` (or a path to a config.json),
    shrunk by :data:`TINY` when ``tiny``."""
    from transformers import AutoConfig

    path = Path(name) if name.endswith(".json") else CONFIGS / f"{name}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("torch_dtype", None)
    data.pop("transformers_version", None)
    if tiny:
        data.update(TINY)
    return AutoConfig.for_model(data.pop("model_type"), **data)


def build_model(config: Any, device: str, dtype: Any) -> Any:
    """The architecture of ``config`` with random weights, built directly on ``device`` in ``dtype``."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa")
    return model.eval()


def judge_tokenizer(folder: Path | None = None) -> Any:
    """The bundled SmolLM2 judge's tokenizer (read from its GGUF once, then cached), or the
    tokenizer saved in ``folder`` (``--tokenizer``: a GPU box that has no GGUF, since only 64 MiB
    travels with a device call, gets that tokenizer saved with ``save_pretrained``)."""
    if folder is not None:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    from autorubric_local.judges.engines import gguf_tokenizer
    from autorubric_local.judges.presets import resolve_model

    return gguf_tokenizer(resolve_model(TOKENIZER_PRESET).path)


def device_name(device: str) -> str:
    """The device as torch names it, e.g. ``cuda: NVIDIA H100 80GB HBM3`` or ``cpu: x86_64, 2 threads``."""
    import torch

    if device.startswith("cuda"):
        return f"cuda: {torch.cuda.get_device_name(torch.device(device))}"
    return f"cpu: {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"


def measure(engine: Any, label: str, backend: str, args: argparse.Namespace, bound: float,
            computed: int | None = None) -> list[Row]:
    """Score and explain rows of one engine on the workload (``computed``: the computed-token
    count, taken from the engine when None)."""
    tasks = plan(engine, args.items, args.seed)
    warm_up(engine, [t for t in tasks if t.item_index == 0])
    computed = computed if computed is not None else computed_tokens(engine, tasks)
    score_s, score_results = time_engine(engine, tasks, JudgeMode.SCORE, args.explanation_tokens)
    generate, generate_s = engine.generate, []

    def timed_generate(requests: Any) -> Any:
        start = time.perf_counter()
        try:
            return generate(requests)
        finally:
            generate_s.append(time.perf_counter() - start)

    engine.generate = timed_generate
    try:
        explain_s, explain_results = time_engine(engine, tasks, JudgeMode.EXPLAIN, args.explanation_tokens)
    finally:
        del engine.generate  # the class's method again (no bound method kept on the engine)
    score_failed = sum(r.error is not None for r in score_results)
    explain_failed = sum(r.error is not None for r in explain_results)
    if score_failed or explain_failed:
        print(f"warning: {label} {backend}: {score_failed} score and {explain_failed} explain judgments failed "
              "(the rows' 'failed' column): not throughput figures", file=sys.stderr)
    decoded = sum(r.usage.completion_tokens for r in explain_results)
    prefill = computed / score_s
    decode_s = sum(generate_s)
    return [
        Row(label, backend, "score", len(tasks), len(tasks) / score_s, prefill, None, bound, prefill / bound,
            score_failed),
        Row(label, backend, "explain", len(tasks), len(tasks) / explain_s, None,
            decoded / decode_s if decode_s > 0 else None, bound, None, explain_failed),
    ]


def bench_shape(name: str, tokenizer: Any, args: argparse.Namespace) -> list[Row]:
    """Every row of one model shape: transformers, then vLLM when asked and installed."""
    import torch

    from autorubric_local.engine.transformers.backend import from_transformers

    label = f"{Path(name).stem if name.endswith('.json') else name}{' (tiny)' if args.tiny else ''}"
    config = load_config(name, args.tiny)
    model = build_model(config, args.device, getattr(torch, args.dtype))
    engine = from_transformers(model, tokenizer, model_id=label, prompt_format="chat")
    del model
    batch, length = args.bound_shape
    bound = max(prefill_throughput(engine, shapes=[(batch, length)]).values())
    rows = []
    for kernel in args.sdpa:
        with sdpa_kernels(kernel):
            name = "transformers" if kernel == "default" else f"transformers sdpa={kernel}"
            rows += measure(engine, label, name, args, bound)
    computed = computed_tokens(engine, plan(engine, args.items, args.seed))
    del engine
    free_memory()
    if args.vllm and args.device.startswith("cuda"):
        rows += bench_vllm(name, label, config, tokenizer, args, bound, computed)
    return rows


SDPA_KERNELS = ("default", "efficient", "math", "cudnn", "flash")
"""``--sdpa`` choices: torch's own choice, or one of ``torch.nn.attention.SDPBackend``'s kernels
(``efficient``: memory-efficient attention; ``flash`` takes no attention mask, so the engine's
packed passes fail under it)."""


def sdpa_kernels(kernel: str) -> Any:
    """A context manager that restricts scaled-dot-product attention to ``kernel`` (a no-op for
    ``default``)."""
    import contextlib

    if kernel == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel({"efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH,
                        "cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[kernel])


def bench_vllm(name: str, label: str, config: Any, tokenizer: Any, args: argparse.Namespace, bound: float,
               computed: int) -> list[Row]:
    """vLLM rows on the same shape (``load_format="dummy"``: random weights), if vLLM is installed."""
    try:
        from autorubric_local.engine.vllm.backend import load_vllm
    except ImportError:
        return []
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        print("vLLM is not installed: no vLLM rows", file=sys.stderr)
        return []
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as folder:
        config.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        engine = load_vllm(folder, model_id=label, dtype=args.dtype, context_length=8192,
                           gpu_memory_utilization=args.vllm_memory, load_format="dummy")
        try:
            return measure(engine, label, "vllm", args, bound, computed)
        finally:
            engine.close()
            del engine
            free_memory()


def format_table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table ("-" where a rate does not apply)."""
    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:,.1f}"

    lines = ["| model shape | backend | mode | judgments | judgments/s | prefill tok/s | decode tok/s "
             "| prefill bound tok/s | ratio | failed |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}"
        lines.append(f"| {row.shape} | {row.backend} | {row.mode} | {row.judgments} | {row.judgments_per_s:,.2f} "
                     f"| {rate(row.prefill_tokens_per_s)} | {rate(row.decode_tokens_per_s)} "
                     f"| {rate(row.bound_tokens_per_s)} | {ratio} | {row.failed} |")
    return "\n".join(lines)


def _shape(text: str) -> tuple[int, int]:
    batch, _, length = text.partition("x")
    try:
        return int(batch), int(length)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected BATCHxLENGTH such as 4x4096, got {text!r}") from None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--config", action="append", default=None,
                        help=f"a models/configs name or a config.json path (repeatable; default {', '.join(DEFAULT_CONFIGS)})")
    parser.add_argument("--device", default=None, help="torch device (default cuda; cpu with --tiny)")
    parser.add_argument("--tiny", action="store_true", help="shrink each shape to 2 layers of width 128 (CPU smoke test)")
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    parser.add_argument("--items", type=int, default=None, help="workload items (default 32; 2 with --tiny)")
    parser.add_argument("--explanation-tokens", type=int, default=None, help="explanation budget (48; 8 with --tiny)")
    parser.add_argument("--bound-shape", type=_shape, default=None,
                        help="BATCHxLENGTH of the prefill-bound pass (default 4x4096; 1x512 with --tiny)")
    parser.add_argument("--sdpa", action="append", choices=SDPA_KERNELS, default=None,
                        help="attention kernel(s) for the transformers rows, each its own pair of rows on the same "
                             "model (repeatable; default: torch's own choice)")
    parser.add_argument("--no-vllm", dest="vllm", action="store_false", help="skip vLLM even where installed")
    parser.add_argument("--vllm-memory", type=float, default=0.85, help="vLLM gpu_memory_utilization")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer", type=Path, default=None,
                        help="a saved tokenizer folder to use instead of reading the bundled judge's GGUF "
                             "(the same SmolLM2 tokenizer, saved where the GGUF is not installed)")
    parser.add_argument("--out", type=Path, default=None, help="also write the header and table to this file")
    args = parser.parse_args(argv)
    args.device = args.device or ("cpu" if args.tiny else "cuda")
    args.items = args.items or (2 if args.tiny else 32)
    args.explanation_tokens = args.explanation_tokens or (8 if args.tiny else 48)
    args.bound_shape = args.bound_shape or ((1, 512) if args.tiny else (4, 4096))
    args.config = args.config or list(DEFAULT_CONFIGS)
    args.sdpa = args.sdpa or ["default"]
    import torch

    on_gpu = args.device.startswith("cuda")
    if on_gpu and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here, so no GPU figure can be measured; "
                     "run the CPU smoke test with --tiny")
    if not on_gpu and args.out is not None and "gpu" in args.out.name.lower():
        parser.error(f"--out {args.out}: refusing to write CPU results to a file named as GPU figures")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    on_gpu = args.device.startswith("cuda")
    kind = "GPU figures" if on_gpu else "CPU smoke run, NOT GPU figures"
    header = (f"bench_gpu ({kind}) on {device_name(args.device)}; {args.dtype}, random weights; "
              f"{args.items} items x 14 judgments, explanations up to {args.explanation_tokens} tokens; "
              f"prefill bound: one {args.bound_shape[0]}x{args.bound_shape[1]} forward pass")
    print(header, flush=True)
    tokenizer = judge_tokenizer(args.tokenizer)
    rows: list[Row] = []
    for name in args.config:
        started = time.perf_counter()
        rows += bench_shape(name, tokenizer, args)
        print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    table = format_table(rows)
    print(table)
    report = json.dumps({"device": device_name(args.device), "gpu": on_gpu, "rows": [asdict(r) for r in rows]})
    print(report)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(f"{header}\n\n{table}\n\n{report}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
