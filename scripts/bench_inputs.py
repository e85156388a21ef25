"""Input-safety figures: how fast oversized rubrics are refused, and concurrent opens of one file.

1. A rubric YAML of 100,000 criteria (over the 10,000 limit) through ``Rubric.from_file``:
   refused with the project's own error; seconds to refuse (best of 3).
2. A rubric of exactly 10,000 criteria (the limit): seconds to load (best of 3).
3. ``PROCESSES`` processes open one new results database at the same moment (``open_db``,
   which applies every migration), ``TRIALS`` times: how many opens failed, and whether each
   migration was recorded exactly once.

Run: ``python scripts/bench_inputs.py``; the last line printed is one JSON object.
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
import time
from pathlib import Path

from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.store import MIGRATIONS, open_db

PROCESSES = 6
TRIALS = 5


def rubric_yaml(path: Path, n: int) -> Path:
    path.write_text("".join(f"- {{weight: 1, requirement: 'criterion {i}'}}\n" for i in range(n)), encoding="utf-8")
    return path


def best_seconds(path: Path, expect_refusal: bool) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        try:
            Rubric.from_file(path)
            refused = False
        except InputError:
            refused = True
        times.append(time.perf_counter() - start)
        assert refused == expect_refusal, f"{path}: refused={refused}"
    return min(times)


def open_once(path: str, barrier: multiprocessing.synchronize.Barrier) -> str | None:  # type: ignore[name-defined]
    barrier.wait()
    try:
        open_db(path).close()
    except Exception as exc:  # noqa: BLE001 - the figure counts any failure to open
        return f"{type(exc).__name__}: {exc}"
    return None


def concurrent_opens(folder: Path) -> dict[str, object]:
    failures: list[str] = []
    exactly_once = True
    for trial in range(TRIALS):
        path = str(folder / f"trial-{trial}.sqlite")
        with multiprocessing.Manager() as manager:
            barrier = manager.Barrier(PROCESSES)
            with multiprocessing.Pool(PROCESSES) as pool:
                outcomes = pool.starmap(open_once, [(path, barrier)] * PROCESSES)
        failures += [o for o in outcomes if o is not None]
        db = open_db(path)
        numbers = [row["number"] for row in db["_migrations"].rows]
        db.close()
        exactly_once &= sorted(numbers) == [m[0] for m in MIGRATIONS]
    return {"processes": PROCESSES, "trials": TRIALS, "failed_opens": len(failures),
            "first_failure": failures[0] if failures else None, "migrations_recorded_once": exactly_once}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        figures = {
            "refuse_100k_criteria_seconds": best_seconds(rubric_yaml(folder / "big.yaml", 100_000), True),
            "load_10k_criteria_seconds": best_seconds(rubric_yaml(folder / "limit.yaml", 10_000), False),
            "concurrent_opens": concurrent_opens(folder),
        }
    print(f"100,000-criteria rubric refused in {figures['refuse_100k_criteria_seconds']:.2f} s (best of 3)")
    print(f"10,000-criteria rubric loaded in {figures['load_10k_criteria_seconds']:.2f} s (best of 3)")
    opens = figures["concurrent_opens"]
    print(f"{opens['processes']} processes x {opens['trials']} trials opening one new database: "  # type: ignore[index]
          f"{opens['failed_opens']} failed opens; every migration recorded once: {opens['migrations_recorded_once']}")  # type: ignore[index]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
