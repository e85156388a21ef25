"""A distributed run for the driver-crash test (tests/test_ray_distributed.py), in its own process.

Usage: ``python tests/ray_crash_worker.py DB RUN_NAME MODEL_DIR N_ITEMS CHUNK_JUDGMENTS RAY_ADDRESS``

Grades tests/crash_worker.py's dataset of ``N_ITEMS`` items with the judge in ``MODEL_DIR`` on two
Ray actors of the cluster at ``RAY_ADDRESS``, committing in this process. Prints ``committed N``
after each committed chunk and ``done`` at the end. With ``RAY_CRASH_WORKER_HOLD_AFTER=K`` it
stops (blocks) after its K-th committed chunk, so the test can SIGKILL it there while other
chunks are in flight on the actors.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from crash_worker import build_dataset  # noqa: E402

from autorubric_local.graders import CriterionGrader  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.runner import (  # noqa: E402
    ChunkReport,
    DistributedConfig,
    EvalConfig,
    EvalRunner,
)


def build_grader(model_dir: str) -> CriterionGrader:
    return CriterionGrader(LLMConfig(model=model_dir, device="cpu", backend="transformers"), seed=11)


def main(argv: list[str]) -> int:
    db_path, name, model_dir, n_items, chunk_judgments, address = argv[1:7]
    hold_after = int(os.environ.get("RAY_CRASH_WORKER_HOLD_AFTER", "0"))
    committed = 0

    def report(chunk: ChunkReport) -> None:
        nonlocal committed
        committed += 1
        print(f"committed {chunk.completed_items}", flush=True)
        if committed == hold_after:
            threading.Event().wait()  # until killed

    config = EvalConfig(db_path=db_path, experiment_name=name, chunk_judgments=int(chunk_judgments),
                        show_progress=False,
                        distributed=DistributedConfig(address=address, workers=2, num_cpus=1))
    EvalRunner(build_dataset(int(n_items)), build_grader(model_dir), config, on_chunk=report).run_sync()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
