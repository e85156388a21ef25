#!/usr/bin/env bash
# A/B of our host work (issue 33), interleaved A B B A on one machine:
#   A = BASE (a tree holding the old autorubric_local, e.g. `git archive 9ab4793 autorubric_local`),
#   B = this checkout.
# Each step: scripts/bench_host.py (CLI grade, tiny random judge, 200 items x 6 criteria), then
# scripts/bench_engine.py --quick with the same judge folder (score mode; explain mode).
# Usage: scripts/ab_host.sh BASE PYTHON JUDGE_FOLDER > scripts/results/ab_host_<cpus>_<date>.txt
set -euo pipefail
BASE=$1; PY=$2; JUDGE=$3
HERE=$(cd "$(dirname "$0")/.." && pwd)
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
for step in A B B A; do
  if [ "$step" = A ]; then tree=$BASE; engine_script=$BASE/bench_engine_base.py; else tree=$HERE; engine_script=$HERE/scripts/bench_engine.py; fi
  echo "=== $step ($tree) $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  PYTHONPATH=$tree "$PY" "$HERE/scripts/bench_host.py" --items 200 --rounds 1 2>/dev/null | tail -1
  PYTHONPATH=$tree:$HERE/scripts "$PY" "$engine_script" --quick --model "$JUDGE" 2>/dev/null | tail -1
done
