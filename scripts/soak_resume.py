"""Kill-and-resume soak (issue 52): a run of ``--items`` items killed ``--kills`` times at random
points, SIGKILL and SIGTERM alternately, and resumed each time, must end with exactly the rows
of an uninterrupted run of the same seed.

The run is ``tests/crash_worker.py``'s (a scripted judge whose label probabilities are a hash of
the prompt, so every process gives the same verdicts; ``--delay`` seconds per engine request),
started as its own process with SIGTERM handled as the CLI handles it
(:func:`autorubric_local.cli.common.stops_on_termination`). Each cycle waits for a random number
(1 to ``--max-chunks``) of committed chunks, then a random 0-50 ms, and signals. After every
stop the file must pass ``PRAGMA integrity_check``; after a SIGTERM the run must be
``interrupted`` with its lease given back; a SIGKILL leaves it ``running`` and the next start
takes the dead holder's lease over. The last start runs to the end. Compared with the
uninterrupted run: every item's stored report and every judgment row (verdicts, label
probabilities, option orders, errors), and no judgment stored twice.

Run: ``python scripts/soak_resume.py [--items 500] [--kills 20] [--seed 0]``. Prints one line
per cycle, then one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import crash_worker  # noqa: E402

from autorubric_local.runner import EvalConfig, EvalRunner  # noqa: E402

COLUMNS = ("item_id", "criterion_index", "judge_id", "permutation_index", "verdict", "selected_index",
           "selected_label", "label_probabilities_json", "shuffle_order_json", "error")
WORKER = ("import sys, crash_worker; from autorubric_local.cli.common import stops_on_termination; "
          "sys.exit(stops_on_termination(crash_worker.main)(sys.argv))")


def rows(db: Path, run: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with sqlite3.connect(db) as con:
        run_id = con.execute("select id from runs where name = ?", (run,)).fetchone()[0]
        items = con.execute("select item_id, score, raw_score, error, report_json from items where run_id = ? "
                            "order by item_index", (run_id,)).fetchall()
        judgments = con.execute(f"select {', '.join(COLUMNS)} from judgments where run_id = ? "
                                "order by item_id, criterion_index, judge_id, permutation_index", (run_id,)).fetchall()
    return items, judgments


def state(db: Path) -> tuple[str, int, int, str]:
    with sqlite3.connect(db) as con:
        status = con.execute("select status from runs where name = 'soak'").fetchone()
        leases = con.execute("select count(*) from run_leases").fetchone()[0]
        done = con.execute("select count(*) from items where report_json is not null").fetchone()[0]
        check = con.execute("pragma integrity_check").fetchone()[0]
    return (status[0] if status else "none"), leases, done, check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--chunk-judgments", type=int, default=12)
    parser.add_argument("--delay", type=float, default=0.01)
    parser.add_argument("--max-chunks", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    reference, db = folder / "reference.sqlite", folder / "soak.sqlite"
    config = EvalConfig(db_path=reference, experiment_name="soak", chunk_judgments=args.chunk_judgments,
                        chunk_seconds=None, show_progress=False)
    EvalRunner(crash_worker.build_dataset(args.items), crash_worker.build_grader(), config).run_sync()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    command = [sys.executable, "-c", WORKER, str(db), "soak", str(args.items), str(args.chunk_judgments),
               str(args.delay)]
    problems: list[str] = []
    cycles = []
    started = time.perf_counter()
    for cycle in range(args.kills):
        sig = signal.SIGKILL if cycle % 2 == 0 else signal.SIGTERM
        wanted = rng.randint(1, args.max_chunks)
        worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert worker.stdout is not None
        seen = 0
        finished = False
        for line in worker.stdout:
            if line.startswith("committed"):
                seen += 1
                if seen == wanted:
                    time.sleep(rng.uniform(0.0, 0.05))
                    worker.send_signal(sig)
                    break
            if line.startswith("done"):
                finished = True
        code = worker.wait(timeout=120)
        status, leases, done, check = state(db)
        cycles.append({"cycle": cycle, "signal": sig.name, "after_chunks": seen, "exit": code, "status": status,
                       "leases": leases, "items_done": done, "integrity": check})
        print(f"cycle {cycle:2d}: {sig.name} after {seen} committed chunks -> exit {code}, status {status}, "
              f"leases {leases}, {done}/{args.items} items done, integrity {check}", flush=True)
        if check != "ok":
            problems.append(f"cycle {cycle}: integrity_check {check}")
        if finished or done == args.items:
            problems.append(f"cycle {cycle}: the run finished before the signal; use a longer --delay")
        if sig is signal.SIGTERM and code != 130:  # crash_worker exits 130 after the runner marked it interrupted
            problems.append(f"cycle {cycle}: SIGTERM exit {code}, expected 130 ({worker.stderr.read()[-500:]})")
        if sig is signal.SIGTERM and (status != "interrupted" or leases != 0):
            problems.append(f"cycle {cycle}: after SIGTERM status {status}, {leases} leases")
    final = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    status, leases, done, check = state(db)
    print(f"final start: exit {final.returncode}, status {status}, leases {leases}, {done}/{args.items} items, "
          f"integrity {check}", flush=True)
    got, want = rows(db, "soak"), rows(reference, "soak")
    keys = [r[:4] for r in got[1]]
    equal_items, equal_judgments = got[0] == want[0], got[1] == want[1]
    if final.returncode != 0 or status != "finished" or done != args.items:
        problems.append(f"final run: exit {final.returncode}, status {status}, {done} items")
    if not equal_items or not equal_judgments or len(set(keys)) != len(keys):
        problems.append(f"rows differ from the uninterrupted run: items equal {equal_items}, judgments equal "
                        f"{equal_judgments}, duplicate judgments {len(keys) - len(set(keys))}")
    result = {"items": args.items, "kills": args.kills, "seed": args.seed, "seconds": time.perf_counter() - started,
              "judgment_rows": len(got[1]), "equal_items": equal_items, "equal_judgments": equal_judgments,
              "problems": problems, "cycles": cycles}
    print(f"{args.kills} kills, {len(got[1])} judgment rows; items equal to the uninterrupted run: {equal_items}; "
          f"judgments equal: {equal_judgments}; problems: {problems or 'none'}")
    print(json.dumps(result))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
