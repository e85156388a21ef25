#!/usr/bin/env bash
# The worked example of docs/comparisons.md: `compare` on the bundled comparison file with the
# embedded default judge, then `ranking` of the stored comparison with the swap rule.
# Usage: bash scripts/compare_example.sh [OUT_FILE]   (default: stdout)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/dev/stdout}
db=$(mktemp -d)/compare.sqlite
{
  echo "# bash scripts/compare_example.sh at $(git rev-parse --short HEAD), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo '$ autorubric-local compare examples/compare_responses.jsonl --run cmp'
  .venv/bin/autorubric-local compare examples/compare_responses.jsonl --run cmp --db "$db" 2>&1 | grep -v "Converting\|Writing model shards"
  echo '$ autorubric-local ranking cmp --method swap'
  .venv/bin/autorubric-local ranking cmp --db "$db" --method swap
} > "$out"
