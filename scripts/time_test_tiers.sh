#!/usr/bin/env bash
# Time the fast test tier (docs/contributing.md) on this machine and print the 25 slowest tests.
# Usage: bash scripts/time_test_tiers.sh [OUT]   (PYTHON defaults to .venv/bin/python)
# Runs niced (nice -n 10), so on a shared machine the time is an upper bound. The fast tier uses the
# dev Hypothesis profile; README command 2 and .ci/run run every tier with the ci profile.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
out=${1:-/dev/stdout}
fast="not slow and not vllm and not llamacpp and not ray and not browser and not wheel"
{
  echo "# fast test tier, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD)"
  echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start; nice -n 10; HYPOTHESIS_PROFILE=dev"
  echo "# command: pytest -q -p no:cacheprovider -m \"$fast\" --durations=25"
  start=$(date +%s)
  status=0
  HYPOTHESIS_PROFILE=dev nice -n 10 "$python" -m pytest -q -p no:cacheprovider -m "$fast" --durations=25 2>&1 || status=$?
  end=$(date +%s)
  echo "# wall time: $((end - start)) s (pytest exit status $status); load average $(cut -d' ' -f1-3 /proc/loadavg) at end"
} > "$out"
