#!/usr/bin/env bash
# A/B of bench_scale's host/engine split, interleaved A B B A on one machine:
#   A = BASE (a tree holding the old autorubric_local, e.g. `git archive COMMIT autorubric_local`),
#   B = this checkout. One bench_scale run with --trees (one judge built for all four rows), so
#   the benchmark script is this checkout's in both.
# Usage: scripts/ab_scale.sh BASE PYTHON [BENCH_SCALE_ARGS...] > scripts/results/ab_scale_<what>_<cpus>_<date>.txt
# e.g. `... --judge tiny --items 100 --grade-only --max-batch-tokens 16384`.
set -euo pipefail
BASE=$1; PY=$2; shift 2
HERE=$(cd "$(dirname "$0")/.." && pwd)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
echo "# scripts/ab_scale.sh $BASE $PY $*; B = $(git -C "$HERE" rev-parse --short HEAD); $(nproc) CPUs; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
"$PY" "$HERE/scripts/bench_scale.py" "$@" --trees "A=$BASE" "B=$HERE" "B=$HERE" "A=$BASE" 2>/dev/null
