"""A stored sweep for the crash test (tests/test_sweep_resume.py), in its own process.

Usage: ``python tests/sweep_crash_worker.py DB SWEEP_NAME HOLD_AFTER``

Sweeps :data:`ITEMS` with two scripted judges whose label log-probabilities are a hash of the
prompt (the same in every process), one item per chunk. Prints ``committed <judge> <chunk>``
after each committed chunk and ``done`` at the end. With ``HOLD_AFTER`` > 0 it prints
``holding`` after that many committed chunks and then blocks (holding the sweep's lease) until
it is killed, so the test kills it at a known point rather than racing a timer.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time

from autorubric_local.bias import SweepSettings
from autorubric_local.bias.stored import StoredSweep, SweepChunkReport, run_stored_sweep
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner.config import EvalConfig

N_ITEMS = 6
ROTATIONS_PER_ITEM = 4 + 3 + 5 + 4  # depth and tone, each also with an unrelated option
SETTINGS = SweepSettings(seed=3, unrelated_option=True, n_bootstrap=20)


def options(*labels: str) -> list[CriterionOption]:
    return [CriterionOption(label=label, value=i / (len(labels) - 1)) for i, label in enumerate(labels)]


RUBRIC = (
    Criterion(name="facts", requirement="States a figure"),  # binary: not swept
    Criterion(name="depth", requirement="How deep?", options=options("Vague", "Basic", "Solid", "Expert")),
    Criterion(name="tone", requirement="Which tone?", options=options("Formal", "Casual", "Rude"), scale_type="nominal"),
)
ITEMS = [GradeItem(submission=f"Essay {i}: NMC reaches {200 + i} Wh/kg.", rubric=RUBRIC, item_id=f"e{i}")
         for i in range(N_ITEMS)]


def hashed(salt: str):
    """Deterministic label log-probabilities from a hash of the prompt."""

    def policy(request: ScoreRequest) -> list[float]:
        digest = hashlib.sha256((salt + request.prefix + request.suffix).encode()).digest()
        weights = [1.0 + digest[i] for i in range(len(request.labels))]
        return [math.log(w / sum(weights)) for w in weights]

    return policy


def judges() -> list[JudgeSpec]:
    return [JudgeSpec(LLMConfig(model="scripted", engine=ScriptedEngine(model_id=j, policy=hashed(j))), j)
            for j in ("a", "b")]


def sweep(db_path: str, name: str, on_chunk=None) -> StoredSweep:
    config = EvalConfig(db_path=db_path, experiment_name=name, chunk_judgments=ROTATIONS_PER_ITEM,
                        show_progress=False)
    return run_stored_sweep(ITEMS, judges(), SETTINGS, config, on_chunk=on_chunk)


def main(argv: list[str]) -> int:
    db_path, name, hold_after = argv[1], argv[2], int(argv[3])
    committed = 0

    def report(chunk: SweepChunkReport) -> None:
        nonlocal committed
        committed += 1
        print(f"committed {chunk.judge_id} {chunk.chunk_index}", flush=True)
        if committed == hold_after:
            print("holding", flush=True)
            while True:
                time.sleep(1)

    sweep(db_path, name, report)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
