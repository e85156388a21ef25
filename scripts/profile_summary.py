"""Print the top of a cProfile file: functions by own time, and this project's functions by
cumulative time (``python scripts/profile_summary.py FILE.prof [--top 25]``).

Used on profiles brought back from the GPU machine (``python -m cProfile -o FILE.prof
scripts/bench_gpu.py ...``; ``BENCH_SCALE_PROFILE=FILE.prof scripts/bench_scale.py ...``)."""

from __future__ import annotations

import argparse
import io
import pstats


def summary(path: str, top: int) -> str:
    """Both tables as text: own time (all functions), then cumulative time of ``autorubric_local``
    and the benchmark scripts."""
    out = io.StringIO()
    stats = pstats.Stats(path, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumtime").print_stats(r"autorubric_local|bench_\w+\.py", top)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print(summary(args.profile, args.top))


if __name__ == "__main__":
    main()
