#!/usr/bin/env bash
# Time the fast test tier (docs/contributing.md) on this machine and print the 30 slowest tests.
# Usage: bash scripts/time_test_tiers.sh [OUT]   (PYTHON defaults to .venv/bin/python)
# The fast tier runs on every core (pytest-xdist -n auto) with the dev Hypothesis profile; README
# command 2 and .ci/run run every tier on two pinned xdist workers, with the ci profile. Python may write
# bytecode here (some environments set PYTHONDONTWRITEBYTECODE=1, and then pytest rewrites every
# test module's asserts at every start): a contributor's second run is what the tier is for.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
out=${1:-/dev/stdout}
fast="fast or not (slow or vllm or llamacpp or ray or browser or wheel)"
run() {
  env -u PYTHONDONTWRITEBYTECODE HYPOTHESIS_PROFILE=dev "$python" -m pytest -q -p no:cacheprovider -n auto --dist worksteal \
    -m "$fast" "$@"
}
{
  echo "# fast test tier, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' + uncommitted changes')"
  run --collect-only > /dev/null 2>&1 || true  # warm the bytecode caches, as any earlier run would
  echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start; HYPOTHESIS_PROFILE=dev"
  echo "# command: pytest -q -p no:cacheprovider -n auto --dist worksteal -m \"$fast\" --durations=30"
  start=$(date +%s)
  status=0
  run --durations=30 2>&1 | grep -v -E '^\s|Warning|^tests/.*: [0-9]+ warnings?$' || status=$?
  end=$(date +%s)
  echo "# wall time: $((end - start)) s (exit status $status); load average $(cut -d' ' -f1-3 /proc/loadavg) at end"
} > "$out"
