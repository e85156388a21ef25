"""Read-command benchmark (issue 33, "memory flat"): ``runs``, ``show``, ``export``, ``report`` and
``metrics`` on one run's database at 10^3, 10^4 and 10^5 items, each in its own process (wall
seconds and peak RSS, ``wait4``'s ``ru_maxrss``).

Grading 10^5 items takes 90 minutes on this machine, so only the smallest size is graded:
``grade`` of ``--base`` items (the tiny random judge of ``bench_scale.py``, 6 binary criteria,
``--submission-tokens``-token submissions, every item with ground truth), then each larger
database is that run with its item rows copied ``size / base`` times under new ids and item
indexes (``items``, ``judgments``, ``item_criteria``; the copies share the originals' stored
prompts). The copies hold the same verdicts as the originals, so the figures measure how the
commands scale with the number of rows, not anything about grading. Nothing here is a test.

Run: ``python scripts/bench_read.py --sizes 1000 10000 100000``; one JSON line per size, then a
table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_scale, beside this script
from bench_scale import build_tiny_judge, run_child, tokens_per_word, write_dataset  # noqa: E402

RENAMED = {"item_id": "item_id || '-r' || :copy"}


def grade(model: str, data: Path, db: Path) -> None:
    run_child([sys.executable, "-m", "autorubric_local.cli", "grade", str(data), "--model", model, "--db", str(db),
               "--run", "scale", "--no-progress", "--jsonl"])


def replicate(source: Path, target: Path, copies: int) -> None:
    """``target``: ``source``'s database with the run's item rows copied ``copies - 1`` more times
    (copy k: item ids suffixed ``-r<k>``, item indexes shifted by k times the run's items)."""
    shutil.copyfile(source, target)
    db = sqlite3.connect(target)
    n_items = db.execute("select count(*) from items").fetchone()[0]
    tables: dict[str, dict[str, str]] = {
        "items": {**RENAMED, "item_index": "item_index + :copy * :n",
                  "item_json": "json_set(item_json, '$.id', item_id || '-r' || :copy)"},
        "judgments": RENAMED,
        "item_criteria": RENAMED,
    }
    for copy in range(1, copies):
        for table, changed in tables.items():
            columns = [row[1] for row in db.execute(f"pragma table_info({table})")]
            select = ", ".join(changed.get(column, column) for column in columns)
            db.execute(f"insert into {table} ({', '.join(columns)}) select {select} from {table} "
                       f"where item_id not like '%-r%'", {"copy": copy, "n": n_items})
        db.commit()
    db.execute("update runs set total_items = ?", [n_items * copies])
    db.commit()
    db.close()


def read_commands(db: Path, work: Path, only: list[str] | None = None) -> dict[str, Any]:
    cli = [sys.executable, "-m", "autorubric_local.cli"]
    report = work / "report"
    commands = {
        "runs": [*cli, "runs", "--db", str(db)],
        "show": [*cli, "show", "scale", "--db", str(db)],
        "export": [*cli, "export", "scale", "--db", str(db), "--per", "judgment", "--format", "jsonl",
                   "--out", str(work / "export.jsonl")],
        "export_item_parquet": [*cli, "export", "scale", "--db", str(db), "--per", "item", "--format", "parquet",
                                "--out", str(work / "export.parquet")],
        "report": [*cli, "report", "scale", "--db", str(db), "--out", str(report)],
        "metrics": [*cli, "metrics", "scale", "--db", str(db), "--no-save"],
    }
    row: dict[str, Any] = {}
    for name, command in commands.items():
        if only is not None and name not in only:
            continue
        wall, rss, _ = run_child(command)
        row[f"{name}_s"] = round(wall, 1)
        row[f"{name}_peak_rss_mib"] = round(rss)
    if report.exists():
        row["report_pages"] = len(list(report.glob("*.html")))
        row["report_largest_page_mib"] = round(max(f.stat().st_size for f in report.glob("*.html")) / 2**20, 2)
        shutil.rmtree(report)
    for leftover in (work / "export.jsonl", work / "export.parquet"):
        leftover.unlink(missing_ok=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--submission-tokens", type=int, default=1000)
    parser.add_argument("--only", nargs="+", metavar="COMMAND", help="time only these commands (runs, show, export, "
                        "export_item_parquet, report, metrics)")
    args = parser.parse_args()
    base = args.sizes[0]
    if any(size % base for size in args.sizes):
        parser.error("each size must be a multiple of the first (the graded run)")
    work = Path(tempfile.mkdtemp(prefix="bench-read-"))
    try:
        print(f"# bench_read on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}; "
              f"python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.2f}", flush=True)
        model = str(build_tiny_judge(work / "tiny-judge"))
        data, graded = work / "data.jsonl", work / f"{base}.sqlite"
        write_dataset(data, base, round(args.submission_tokens / tokens_per_word(model)))
        grade(model, data, graded)
        rows = []
        for size in args.sizes:
            db = graded if size == base else work / f"{size}.sqlite"
            if size != base:
                replicate(graded, db, size // base)
            row = {"items": size, "graded": size == base, "db_mib": round(db.stat().st_size / 2**20, 1),
                   **read_commands(db, work, args.only), "load_average_1m_after": round(os.getloadavg()[0], 2)}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if db != graded:
                db.unlink()
        keys = [key for key in rows[0] if key.endswith(("_s", "_mib", "items"))]  # the same commands each row
        print("\n| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
        for row in rows:
            print("| " + " | ".join(str(row[key]) for key in keys) + " |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
