"""The llama.cpp backend against the transformers backend: verdicts, probabilities, memory, raw speed.

Per GGUF judge (SmolLM2-135M-Instruct Q4_1, Gemma 3 270M Q4_K_M), on the workload of the
equivalence tests (the bundled example's 64 judgments plus 16 on two long answers, 80 in all):

- ``same_verdict``: share of judgments whose argmax label is the same on both backends;
  ``prob_diff_mean`` / ``prob_diff_max``: |p_llamacpp - p_transformers| over every label
  probability; ``flips``: the judgments whose verdict differs, with the transformers backend's
  top-two probability margin (how close to a tie the float32 reading was).
  Both backends read the same GGUF: transformers de-quantises it to float32 and computes in
  float32; llama.cpp keeps the quantised weights and multiplies them with 8-bit-quantised
  activations (ggml's ``vec_dot_type`` for Q4_1 / Q4_K is Q8_1 / Q8_K), so they differ by more
  than float noise.
- ``equivalence_f32_gguf``: the same figures with llama.cpp reading a float32 re-encoding of
  the GGUF (``tests/gguf_float32.py``, written to ``--f32-dir``): the weights transformers
  computes with, so what is left is the backend itself (float32 summation order), without the
  quantised kernels' 8-bit activations.
- ``llamacpp_added_rss_mib``: resident memory (``VmRSS``) a fresh process gains by loading the
  judge on llama.cpp and scoring the workload, measured after its tokenizer (and so
  transformers and torch) is loaded; against the GGUF's size and the KV cache llama.cpp
  allocates (``n_ctx`` cells). ``peak_rss_mib`` is the process's whole peak, torch included.
  ``kv_mib``, ``compute_mib``, ``output_mib``: the buffers llama.cpp's load log reports (the
  KV cache; the compute buffer reserved for a full ``n_ubatch`` of outputs, which holds
  ``n_ubatch`` x vocabulary logits; the output buffer). Issue 16's bound, 1.5x the GGUF plus the
  context, is given two ways: ``bound_kv_mib`` (context = the KV cache) and ``bound_context_mib``
  (context = every buffer of the llama.cpp context), each with ``within_*``.
- ``prefill_tok_s`` / ``decode_tok_s``: raw model throughput, same machine and threads, best of
  3: a 512-token prefill (logits of the last position) and 64 one-token decode steps, for
  llama.cpp (``LlamaContext``) and transformers (float32, ``logits_to_keep=1``).

``system_info`` names the instruction sets the installed llama.cpp was compiled for
(``scripts/setup_llamacpp.sh`` builds portable x86-64-v3); to measure another build, install
it elsewhere (``CMAKE_ARGS="-DGGML_NATIVE=ON" pip install --no-cache-dir --no-deps --target DIR
llama-cpp-python==0.3.36``) and put ``DIR`` first on ``PYTHONPATH``.

Run: ``python scripts/bench_llamacpp.py [--judges smollm2 gemma] [--no-throughput | --memory-only]
[--f32-dir DIR]``; the last line printed is one JSON object with every figure. Needs
``scripts/setup_llamacpp.sh``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

PRESETS = {"smollm2": "smollm2-135m-instruct", "gemma": "gemma3-270m"}


def requests_for(engine: object) -> list:
    from example_workload import example_items

    from autorubric_local.engine import ScoreRequest
    from autorubric_local.graders.planning import plan_tasks

    tasks = plan_tasks(example_items(), [("bench", engine.format_chat)], seed=0)
    return [ScoreRequest(t.prefix, t.suffix, t.labels()) for t in tasks]


def argmax(values: object) -> int:
    return max(range(len(values)), key=lambda i: values[i])


def equivalence(name: str, threads: int, gguf: Path | None = None) -> dict[str, object]:
    import torch

    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.engines import load_engine

    torch.set_num_threads(threads)
    reference_engine = load_engine(LLMConfig(model=PRESETS[name], backend="transformers"))
    ours_engine = load_engine(LLMConfig(model=str(gguf or PRESETS[name]), backend="llamacpp"))
    requests = requests_for(reference_engine)
    reference = reference_engine.score(requests)
    ours = ours_engine.score(requests)
    diffs = [abs(p - q) for a, b in zip(ours, reference) for p, q in zip(a.probabilities, b.probabilities)]
    flips = []
    for index, (a, b) in enumerate(zip(ours, reference)):
        if argmax(a.logprobs) != argmax(b.logprobs):
            top = sorted(b.probabilities, reverse=True)
            flips.append({"judgment": index, "transformers_margin": round(top[0] - top[1], 4),
                          "transformers": [round(p, 4) for p in b.probabilities],
                          "llamacpp": [round(p, 4) for p in a.probabilities]})
    margins = sorted(sorted(b.probabilities, reverse=True)[0] - sorted(b.probabilities, reverse=True)[1]
                     for b in reference)
    return {
        "judgments": len(requests),
        "same_verdict": round(1 - len(flips) / len(requests), 4),
        "prob_diff_mean": round(sum(diffs) / len(diffs), 4),
        "prob_diff_max": round(max(diffs), 4),
        "off_label_diff_max": round(max(abs(a.off_label_mass - b.off_label_mass) for a, b in zip(ours, reference)), 4),
        "median_transformers_margin": round(margins[len(margins) // 2], 4),
        "flips": flips,
    }


def _rss_mib() -> float:
    """Resident memory of this process now (``VmRSS``), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def rss_child(name: str) -> None:
    """In a fresh process: resident memory added by loading the judge on llama.cpp and scoring.

    The tokenizer (and with it transformers and torch) is loaded first, so the figure is what
    llama.cpp adds: the mapped GGUF pages it touched, the KV cache and its compute buffers.
    """
    import llama_cpp._logger

    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.engines import gguf_tokenizer, load_engine
    from autorubric_local.judges.presets import resolve_model

    llama_cpp._logger.set_verbose = lambda verbose: None  # keep llama.cpp's load log: its buffer sizes
    path = resolve_model(PRESETS[name]).path
    tokenizer = gguf_tokenizer(path)
    before = _rss_mib()
    engine = load_engine(LLMConfig(model=PRESETS[name], backend="llamacpp"))
    engine.score(requests_for(engine))
    after = _rss_mib()
    del tokenizer
    print(json.dumps({"llamacpp_added_rss_mib": after - before, "rss_before_load_mib": before,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "gguf_mib": path.stat().st_size / 2**20, "n_ctx": engine.context_length}))


def memory(name: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, __file__, "--rss-child", name], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"rss child failed:\n{done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures.update(llama_buffers(done.stderr))
    file_part = 1.5 * figures["gguf_mib"]
    figures["bound_kv_mib"] = file_part + figures["kv_mib"]
    figures["bound_context_mib"] = file_part + figures["kv_mib"] + figures["compute_mib"] + figures["output_mib"]
    for bound in ("kv", "context"):
        figures[f"within_{bound}"] = figures["llamacpp_added_rss_mib"] <= figures[f"bound_{bound}_mib"]
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items()}


def llama_buffers(log: str) -> dict[str, float]:
    """KV, compute and output buffer sizes (MiB) from llama.cpp's load log (KV summed over caches)."""
    sizes = {"kv_mib": 0.0, "compute_mib": 0.0, "output_mib": 0.0}
    for line in log.splitlines():
        found = re.search(r"CPU (KV|compute|\s*output) buffer size =\s*([0-9.]+) MiB", line)
        if found and not line.startswith("~"):
            sizes[f"{found.group(1).strip()}_mib".replace("KV", "kv")] += float(found.group(2))
    if not sizes["kv_mib"] or not sizes["compute_mib"]:
        raise SystemExit(f"no llama.cpp buffer sizes in the child's log:\n{log[-2000:]}")
    return sizes


def throughput(name: str, threads: int) -> dict[str, object]:
    import torch

    from autorubric_local.engine.llamacpp.context import LlamaContext
    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.engines import load_engine
    from autorubric_local.judges.presets import resolve_model

    torch.set_num_threads(threads)
    tokens = [100 + (i * 7919) % 30000 for i in range(512)]
    ctx = LlamaContext(str(resolve_model(PRESETS[name]).path), n_ctx=4096, n_seq=1, n_batch=512, n_threads=threads)
    best_prefill = best_decode = float("inf")
    for _ in range(3):
        ctx.truncate(0, 0)
        start = time.perf_counter()
        ctx.extend(0, tokens, [511])
        best_prefill = min(best_prefill, time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(64):
            ctx.step([0], [tokens[7]])
        best_decode = min(best_decode, time.perf_counter() - start)
    ctx.close()
    model = load_engine(LLMConfig(model=PRESETS[name], backend="transformers")).model
    ids = torch.tensor([tokens])
    tf_prefill = tf_decode = float("inf")
    with torch.inference_mode():
        for _ in range(3):
            start = time.perf_counter()
            out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
            tf_prefill = min(tf_prefill, time.perf_counter() - start)
            cache = out.past_key_values
            step = torch.tensor([[tokens[7]]])
            start = time.perf_counter()
            for _ in range(64):
                cache = model(input_ids=step, past_key_values=cache, use_cache=True, logits_to_keep=1).past_key_values
            tf_decode = min(tf_decode, time.perf_counter() - start)
    return {"llamacpp_prefill_tok_s": round(512 / best_prefill), "llamacpp_decode_tok_s": round(64 / best_decode, 1),
            "transformers_prefill_tok_s": round(512 / tf_prefill), "transformers_decode_tok_s": round(64 / tf_decode, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judges", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--no-throughput", action="store_true",
                        help="skip the speed figures (when the machine is not quiet)")
    parser.add_argument("--memory-only", action="store_true", help="only the memory figures")
    parser.add_argument("--f32-dir", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the float32 re-encodings of the GGUF judges are written (kept for re-runs)")
    parser.add_argument("--rss-child", choices=list(PRESETS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
        return 0
    import llama_cpp
    from gguf_float32 import dequantised_gguf

    from autorubric_local.judges.presets import resolve_model

    report: dict[str, object] = {"threads": args.threads, "llama_cpp_python": llama_cpp.__version__,
                                 "system_info": llama_cpp.llama_print_system_info().decode().strip()}
    for name in args.judges:
        if args.memory_only:
            report[name] = {"memory": memory(name)}
            print(f"{name}: memory {report[name]['memory']}", flush=True)  # type: ignore[index]
            continue
        source = resolve_model(PRESETS[name]).path
        f32 = dequantised_gguf(source, args.f32_dir / f"{source.stem}.F32.gguf")
        figures = {"equivalence": equivalence(name, args.threads),
                   "equivalence_f32_gguf": equivalence(name, args.threads, f32), "memory": memory(name),
                   "throughput": None if args.no_throughput else throughput(name, args.threads)}
        report[name] = figures
        eq = figures["equivalence"]
        print(f"{name}: same verdict {eq['same_verdict']:.4f} of {eq['judgments']}, |p diff| mean "
              f"{eq['prob_diff_mean']} max {eq['prob_diff_max']}, flips' transformers margins "
              f"{[f['transformers_margin'] for f in eq['flips']]} (median margin of all "
              f"{eq['median_transformers_margin']})")
        eq = figures["equivalence_f32_gguf"]
        print(f"{name}, float32 GGUF: same verdict {eq['same_verdict']:.4f} of {eq['judgments']}, |p diff| mean "
              f"{eq['prob_diff_mean']} max {eq['prob_diff_max']}")
        print(f"{name}: memory {figures['memory']}")
        print(f"{name}: throughput {figures['throughput']}", flush=True)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
