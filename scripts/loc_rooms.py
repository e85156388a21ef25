"""Lines of code per room at two git revisions (issue 32's "lines of code before and after").

Counts physical lines of the ``.py`` files under each room of ``autorubric_local/`` as stored at
each revision (``git ls-tree`` / ``git show``; the work tree is not read), and the number of
modules. Nothing is imported or run.

Run: ``python scripts/loc_rooms.py BEFORE AFTER [ROOM ...]``
(default rooms: engine judges runner bias store).
"""

from __future__ import annotations

import subprocess
import sys


def files(rev: str, room: str) -> list[str]:
    out = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, f"autorubric_local/{room}/"],
                         capture_output=True, text=True, check=True).stdout.split()
    return [f for f in out if f.endswith(".py")]


def lines(rev: str, path: str) -> int:
    return len(subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True,
                              check=True).stdout.splitlines())


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(f"usage: {sys.argv[0]} BEFORE AFTER [ROOM ...]")
    before, after, *rooms = sys.argv[1:]
    rooms = rooms or ["engine", "judges", "runner", "bias", "store"]
    print(f"| room | modules {before} | lines {before} | modules {after} | lines {after} | change |")
    print("|---|---|---|---|---|---|")
    totals = [0, 0, 0, 0]
    for room in rooms:
        a, b = files(before, room), files(after, room)
        la, lb = sum(lines(before, f) for f in a), sum(lines(after, f) for f in b)
        totals = [totals[0] + len(a), totals[1] + la, totals[2] + len(b), totals[3] + lb]
        print(f"| {room}/ | {len(a)} | {la} | {len(b)} | {lb} | {lb - la:+d} |")
    print(f"| all | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} | {totals[3] - totals[1]:+d} |")


if __name__ == "__main__":
    main()
