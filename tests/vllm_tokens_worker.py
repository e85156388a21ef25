"""Token ids the vLLM backend builds for prompts, with a given tokenizer; a subprocess of
tests/test_injection_tokens.py, run inside ``.venv-vllm`` (it needs vllm's ``SamplingParams``).

Usage: ``.venv-vllm/bin/python tests/vllm_tokens_worker.py IN.json OUT.json`` where ``IN.json``
is ``{"tokenizer": folder, "prompts": [{prefix, suffix}]}``; ``OUT.json`` holds
``{"ids": [...], "special_ids": [...]}``. No model is loaded: the ``vllm.LLM`` handed to the
engine is a stand-in that only gives the tokenizer and a context length.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace


def main(source: Path, target: Path) -> None:
    from transformers import AutoTokenizer

    from autorubric_local.engine.vllm.backend import VLLMEngine

    job = json.loads(source.read_text(encoding="utf-8"))
    tokenizer = AutoTokenizer.from_pretrained(job["tokenizer"])
    llm = SimpleNamespace(get_tokenizer=lambda: tokenizer, model_config=SimpleNamespace(max_model_len=8192))
    engine = VLLMEngine(llm, model_id="tokens-only")
    ids = [engine.prompt_tokens(p["prefix"], p["suffix"]) for p in job["prompts"]]
    special = sorted(i for i, t in tokenizer.added_tokens_decoder.items() if t.special)
    target.write_text(json.dumps({"ids": ids, "special_ids": special}), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
