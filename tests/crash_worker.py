"""A run for the crash tests (tests/test_resume.py), in its own process.

Usage: ``python tests/crash_worker.py DB RUN_NAME N_ITEMS CHUNK_JUDGMENTS DELAY_S``

Grades a deterministic dataset of ``N_ITEMS`` items (2 binary criteria and one 3-option
criterion each) with a ScriptedEngine whose label probabilities are a hash of the prompt, so
every process gives the same verdicts; each engine request sleeps ``DELAY_S`` so the parent can
kill the run part-way. Prints ``committed <items done>`` after each committed chunk, ``done``
at the end; exits 130 on Ctrl-C (SIGINT) after the runner marked the run interrupted, and
:data:`LOCKED_EXIT` (printing ``locked: <message>``) when another process holds the run.

With ``CRASH_WORKER_GO=<file>`` in the environment it prints ``ready`` once imported and waits
for that file to exist before opening the run, so a test can start several workers at once;
with ``CRASH_WORKER_HOLD=<file>`` it waits after its first committed chunk, holding the run,
until that file exists.
"""

from __future__ import annotations

import hashlib
import math
import os
import signal
import sys
import time
from pathlib import Path

from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import ChunkReport, EvalConfig, EvalRunner, RunLockedError

LOCKED_EXIT = 75
"""Exit status when the run is refused because another process holds its lease."""

RUBRIC = Rubric(
    [
        Criterion(name="density", weight=10.0, requirement="States the energy density"),
        Criterion(name="error", weight=-5.0, requirement="Claims LFP is denser"),
        Criterion(
            name="depth",
            weight=4.0,
            requirement="How deep is it?",
            scale_type="ordinal",
            options=[
                CriterionOption(label="Vague", value=0.0),
                CriterionOption(label="Basic", value=0.5),
                CriterionOption(label="Expert", value=1.0),
            ],
        ),
    ]
)


def build_dataset(n_items: int) -> RubricDataset:
    """``n_items`` distinct submissions; every third one has ground truth."""
    dataset = RubricDataset(prompt="Compare NMC and LFP cells.", rubric=RUBRIC, name="crash")
    for i in range(n_items):
        truth = ["MET", "UNMET", "Basic"] if i % 3 == 0 else None
        dataset.add_item(f"Submission {i}: NMC reaches {200 + i} Wh/kg.", ground_truth=truth)
    return dataset


def make_policy(delay: float):
    """Deterministic label log-probabilities from a hash of the prompt."""

    def policy(request: ScoreRequest) -> list[float]:
        if delay:
            time.sleep(delay)
        digest = hashlib.sha256((request.prefix + request.suffix).encode()).digest()
        weights = [1.0 + digest[i] for i in range(len(request.labels))]
        return [math.log(w / sum(weights)) for w in weights]

    return policy


def build_grader(delay: float = 0.0) -> CriterionGrader:
    return CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine(policy=make_policy(delay))), seed=11)


def wait_for(path: Path) -> None:
    """Return once ``path`` exists."""
    while not path.exists():
        time.sleep(0.001)


def main(argv: list[str]) -> int:
    db_path, name, n_items, chunk_judgments, delay = argv[1], argv[2], int(argv[3]), int(argv[4]), float(argv[5])
    # A test suite started in the background (`cmd &`) hands its children SIGINT ignored, and then
    # Python installs no KeyboardInterrupt handler; Ctrl-C is what the SIGINT test simulates.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    hold = os.environ.get("CRASH_WORKER_HOLD")

    def report(chunk: ChunkReport) -> None:
        print(f"committed {chunk.completed_items}", flush=True)
        if hold and chunk.chunk_index == 0:
            wait_for(Path(hold))

    config = EvalConfig(db_path=db_path, experiment_name=name, chunk_judgments=chunk_judgments, chunk_seconds=None,
                        show_progress=False)
    runner = EvalRunner(build_dataset(n_items), build_grader(delay), config, on_chunk=report)
    go = os.environ.get("CRASH_WORKER_GO")
    if go:
        print("ready", flush=True)
        wait_for(Path(go))
    try:
        runner.run_sync()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        return 130
    except RunLockedError as exc:
        print(f"locked: {exc}", flush=True)
        return LOCKED_EXIT
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
