"""SIGTERM and SIGHUP stop `grade` as Ctrl-C does (issue 52): the run is marked interrupted, its
lease released, the same message names what is kept, and the exit status is 128 + the signal.

Before the mend, SIGTERM (what `kill`, systemd, Slurm and Kubernetes send) ended the process at
once with status 143 and no message, leaving the run `running` with its lease held."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import sqlite_utils

REPO = Path(__file__).resolve().parent.parent
N_ITEMS = 600


def test_sigterm_mid_run_interrupts_releases_the_lease_and_says_what_is_kept(
        tmp_path: Path, tiny_model_dir: Path) -> None:
    sig = signal.SIGTERM  # SIGHUP goes through the same handler (cli/common.py stops_on_termination)
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps([{"name": "cites", "weight": 1.0, "requirement": "Cites a source"},
                                  {"name": "rude", "weight": -1.0, "requirement": "Is rude"}]), encoding="utf-8")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"i{k}", "submission": f"Answer {k}."}) + "\n" for k in range(N_ITEMS)),
                    encoding="utf-8")
    db = tmp_path / "results.sqlite"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "autorubric_local.cli", "grade", str(rubric), str(data), "--model", str(tiny_model_dir),
         "--db", str(db), "--run", "stopped", "--chunk-judgments", "4", "--jsonl", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()  # the first committed chunk's items, streamed
    assert first.startswith("{"), process.stderr.read()
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + sig, stderr
    assert f"interrupted by {sig.name}: committed chunks are kept in {db}" in stderr
    database = sqlite_utils.Database(db)
    run = next(iter(database["runs"].rows))
    assert run["status"] == "interrupted"
    assert database["run_leases"].count == 0  # another host need not wait for the lease to time out
    done = database.execute("select count(*) from items where report_json is not null").fetchone()[0]
    assert 1 <= done < N_ITEMS
