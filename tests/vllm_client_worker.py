"""``LLMClient`` on the vLLM backend; a subprocess of tests/test_local_client.py.

Runs inside ``.venv-vllm`` (scripts/setup_vllm.sh)::

    .venv-vllm/bin/python tests/vllm_client_worker.py MODEL_FOLDER OUT.json

``OUT.json``: ``{"free": {content, completion_tokens, truncated_at}, "verdict": content}`` of a
free-text answer (``max_tokens`` 64) and a ``response_format`` answer (a one-field verdict).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path


def main(folder: str, target: Path) -> None:
    from pydantic import BaseModel

    from autorubric_local.core.types import CriterionVerdict
    from autorubric_local.client.api import LLMClient
    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.engines import load_engine

    class Verdict(BaseModel):
        criterion_status: CriterionVerdict

    engine = load_engine(LLMConfig(model=folder, backend="vllm", device="cpu", prompt_format="chat"))
    client = LLMClient(LLMConfig(model=folder, max_tokens=64, engine=engine))
    free = asyncio.run(client.generate("You are a helpful assistant.", "Reply with one word: hello.",
                                       return_result=True))
    verdict = asyncio.run(client.generate("You judge answers.", "Question: 2 + 2? Answer: 4. Is the answer right?",
                                          response_format=Verdict))
    target.write_text(json.dumps({
        "free": {"content": free.content, "completion_tokens": free.usage.completion_tokens, "max_tokens": 64},
        "verdict": verdict.model_dump(mode="json"),
    }), encoding="utf-8")


if __name__ == "__main__":  # vLLM starts its engine core with spawn: the module must not run on import
    main(sys.argv[1], Path(sys.argv[2]))
