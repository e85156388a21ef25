"""Time ``autorubric-local show RUN`` (piped, as a script or a pager reads it) per item.

Builds once a run of ``--items`` items (default 2,000) graded by a scripted judge (no model: the
tests' ``ScriptedEngine``, 6 binary criteria, one with an explanation-free error-free vote each),
then runs ``python -m autorubric_local.cli show RUN --db DB`` (and ``--votes``, and ``--json`` as
the floor: the same rows without tables) ``--rounds`` times each in a fresh process with stdout to
a file, and prints the median wall seconds and milliseconds per item, plus a SHA-256 of each output
(the same digest before and after a change means the same bytes).

Run: ``python scripts/bench_show.py [--items 2000] [--rounds 3] [--db PATH] [--tree DIR]``;
``--db`` keeps (or reuses) the run database, ``--tree`` puts another checkout's package first on
PYTHONPATH (e.g. one made by ``git archive``) to compare two versions on the same database.
Nothing here is a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITERIA = ("density", "cycle_life", "safety", "cost", "use_case", "errors")


def build(db: Path, n_items: int) -> None:
    """Grade ``n_items`` items with a scripted judge (MET with 0.3 .. 0.9 by item) into ``db``, run "show"."""
    import math
    import zlib

    from autorubric_local.core.rubric import Rubric
    from autorubric_local.core.types import Criterion
    from autorubric_local.data.dataset import DataItem, RubricDataset
    from autorubric_local.engine import ScoreRequest, ScriptedEngine
    from autorubric_local.graders import CriterionGrader
    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.runner import EvalConfig, EvalRunner

    def policy(request: ScoreRequest) -> list[float]:
        met = 0.3 + 0.6 * (zlib.crc32(str(request).encode()) % 100) / 100
        rest = len(request.labels) - 1
        return [math.log(met)] + [math.log((1 - met) / rest)] * rest

    rubric = Rubric([Criterion(name=name, weight=-1.0 if name == "errors" else 1.0, requirement=f"About {name}.")
                     for name in CRITERIA])
    items = [DataItem(submission=f"Item {i}: NMC is denser than LFP.", description=f"s{i}") for i in range(n_items)]
    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine(policy=policy)), seed=1)
    config = EvalConfig(db_path=db, experiment_name="show", show_progress=False)
    EvalRunner(RubricDataset(prompt="Compare NMC and LFP.", rubric=rubric, items=items, name="show"), grader,
               config).run_sync()


def timed(args: list[str], tree: Path, out: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    with out.open("wb") as sink:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "autorubric_local.cli", *args], stdout=sink, env=env, check=True)
        seconds = time.perf_counter() - started
    return seconds, hashlib.sha256(out.read_bytes()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--tree", type=Path, default=ROOT)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-show-"))
    db = args.db or work / "show.sqlite"
    if not db.exists():
        build(db, args.items)
    import sqlite_utils

    database = sqlite_utils.Database(db)
    n_items = database.execute("select count(*) from items").fetchone()[0]
    run = database.execute("select name from runs order by started_utc desc limit 1").fetchone()[0]
    database.close()
    row: dict[str, object] = {"tree": str(args.tree), "items": n_items, "load1": round(os.getloadavg()[0], 2)}
    for label, extra in (("show", []), ("show_votes", ["--votes"]), ("show_json", ["--json"])):
        runs = [timed(["show", run, "--db", str(db), *extra], args.tree, work / f"{label}.txt")
                for _ in range(args.rounds)]
        median = statistics.median(seconds for seconds, _ in runs)
        row[f"{label}_s"] = round(median, 2)
        row[f"{label}_ms_per_item"] = round(1000 * median / n_items, 2)
        row[f"{label}_sha256"] = runs[0][1]
    print(json.dumps(row))


if __name__ == "__main__":
    main()
