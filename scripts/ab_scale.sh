#!/usr/bin/env bash
# A/B of our host work at 1,000-token submissions (issue 33), interleaved A B B A on one machine:
#   A = BASE (a tree holding the old autorubric_local, e.g. `git archive d548342 autorubric_local`),
#   B = this checkout.
# Each step: scripts/bench_scale.py --judge tiny --items N --submission-tokens 1000 (CLI grade in a
# child process; host = wall - judge load - the model's forward passes), its JSON line kept.
# Usage: scripts/ab_scale.sh BASE PYTHON [N] > scripts/results/ab_scale_<cpus>_<date>.txt
set -euo pipefail
BASE=$1; PY=$2; N=${3:-1000}
HERE=$(cd "$(dirname "$0")/.." && pwd)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
for step in A B B A; do
  if [ "$step" = A ]; then tree=$BASE; else tree=$HERE; fi
  echo "=== $step ($tree) $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  PYTHONPATH=$tree "$PY" "$HERE/scripts/bench_scale.py" --judge tiny --items "$N" --submission-tokens 1000 2>/dev/null \
    | grep '^{' | "$PY" -c 'import json,sys; r=json.loads(sys.stdin.read()); print(json.dumps({k: r[k] for k in ("items","judgments","grade_wall_s","judgments_per_s","host_ms_per_judgment","engine_ms_per_judgment","grade_peak_rss_mib")}))'
done
