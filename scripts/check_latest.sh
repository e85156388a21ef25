#!/usr/bin/env bash
# Tries the latest versions pyproject.toml allows, which scripts/setup.sh does not install (it
# installs the versions in scripts/constraints.txt). In a throwaway venv in a temp dir: installs
# this package with its test and hosted extras WITHOUT the constraints (torch stays at 2.13.0, the
# CPU wheel: an unpinned torch pulls a multi-GB CUDA build), prints the packages whose versions
# differ from scripts/constraints.txt, then runs a quick subset of the tests (not the slow ones)
# against them. The venv is removed at the end.
#
# CI does not run it: CI installs the constraints, so a new release elsewhere cannot turn it red.
# Run it by hand to learn whether new releases break this package; once the whole suite passes on
# newer versions, move the constraints on with scripts/lock_versions.sh.
#
# Usage: bash scripts/check_latest.sh [PYTEST ARGS]   (default: the quick subset below)
# Exit status: the tests'.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
echo "scripts/check_latest.sh: installing the latest allowed versions into $work/venv"
"$py" -m pip install -q --disable-pip-version-check torch==2.13.0
"$py" -m pip install -q --disable-pip-version-check ".[test,hosted,browse]" torch==2.13.0

echo "scripts/check_latest.sh: versions that differ from scripts/constraints.txt:"
"$py" -m pip freeze --disable-pip-version-check | "$py" -c '
import re, sys

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

def pins(lines):
    found = {}
    for line in lines:
        name, sep, version = line.strip().partition("==")
        if sep and not name.startswith("#"):
            found[norm(name)] = version.split("+")[0]  # torch 2.13.0+cpu is pinned as 2.13.0
    return found

locked = pins(open("scripts/constraints.txt", encoding="utf-8"))
latest = pins(sys.stdin)
latest.pop("autorubric-local", None)
changed = [f"  {name}: {locked[name]} -> {version}" for name, version in sorted(latest.items())
           if name in locked and locked[name] != version]
new = [f"  {name}: not in the constraints, {version}" for name, version in sorted(latest.items())
       if name not in locked]
print("\n".join(changed + new) or "  none")
'

if [ "$#" -eq 0 ]; then
  set -- -q -m "not slow" tests/test_rubric_strict.py tests/test_panel_strict.py \
    tests/test_metrics_reference.py tests/test_exports.py
fi
echo "scripts/check_latest.sh: pytest $*"
# python -m pytest puts this checkout first on sys.path: its code, the venv's dependencies
"$py" -m pytest "$@"
