#!/usr/bin/env bash
# The fresh-machine check: clone a commit into a new folder, with a fresh .venv and an empty pip
# cache, and run the README's two commands there, each timed. Command 2's pytest gets -rs (the
# reason for every skip) and --durations=40 (the slowest tests), which change nothing else.
# Usage: bash scripts/proof_fresh_clone.sh [OUT] [REPO] [DIR]
#   OUT  where the summary goes (default stdout); REPO what to clone (default this checkout);
#   DIR  the clone (default /tmp/proof, replaced).
# Takes about 80 minutes on the 2-core development machine; keep the machine quiet meanwhile.
set -u
out=${1:-/dev/stdout}
repo=${2:-$(cd "$(dirname "$0")/.." && pwd)}
dir=${3:-/tmp/proof}
cmd1_log=$(mktemp /tmp/proof_cmd1.XXXX)
cmd2_log=$(mktemp /tmp/proof_cmd2.XXXX)
{
  rm -rf "$dir" && git clone -q "$repo" "$dir" && cd "$dir" || exit 1
  PIP_CACHE_DIR=$(mktemp -d /tmp/pipcache.XXXX)
  export PIP_CACHE_DIR
  echo "# fresh clone of $(git rev-parse --short HEAD) into $dir, empty pip cache, $(nproc) CPUs"
  echo "# started $(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  # README command 1
  start=$(date +%s)
  bash scripts/setup.sh > "$cmd1_log" 2>&1 \
    && .venv/bin/autorubric-local grade examples/battery_rubric.yaml examples/battery_submissions.jsonl >> "$cmd1_log" 2>&1
  echo "command 1: exit $? in $(( $(date +%s) - start )) s"
  tail -n 15 "$cmd1_log"
  # README command 2
  start=$(date +%s)
  { bash scripts/setup.sh && bash scripts/setup_vllm.sh && bash scripts/setup_llamacpp.sh \
    && bash scripts/setup_ray.sh && bash scripts/setup_browser.sh; } > "$cmd2_log" 2>&1
  status=$?
  [ "$status" -eq 0 ] || tail -n 30 "$cmd2_log"
  echo "command 2 set-up: exit $status in $(( $(date +%s) - start )) s"
  if [ "$status" -eq 0 ]; then
    tests=$(date +%s)
    .venv/bin/python -m pytest -q -n 2 --dist worksteal -rs --durations=40 > "$cmd2_log" 2>&1
    status=$?
    echo "command 2 tests: exit $status in $(( $(date +%s) - tests )) s"
  fi
  echo "command 2: exit $status in $(( $(date +%s) - start )) s"
  echo "# ended $(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -v '^\.*\( *\[ *[0-9]*%\]\)\?$' "$cmd2_log"
} > "$out" 2>&1
