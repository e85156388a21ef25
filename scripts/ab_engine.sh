#!/usr/bin/env bash
# A/B of the judge engine's score and explain throughput (issue 32's "bench_engine before and
# after"), interleaved A B B A on one machine:
#   A = BASE (a tree holding the old autorubric_local, e.g. `git archive 6eb98e3 autorubric_local`),
#   B = this checkout.
# Each step: scripts/bench_engine.py on the embedded judge (smollm2-135m-instruct, transformers) over
# ITEMS items x 14 judgments in score mode and EXPLAIN items in explain mode, its JSON line kept.
# Usage: scripts/ab_engine.sh BASE PYTHON [ITEMS] [EXPLAIN] [BENCH_ENGINE_ARGS...] > scripts/results/ab_engine_<cpus>_<date>.txt
# (e.g. `... 8 1 --batch-tokens 16384`: the batched scoring path accelerators take, on this CPU)
set -euo pipefail
BASE=$1; PY=$2; ITEMS=${3:-8}; EXPLAIN=${4:-2}; EXTRA=("${@:5}")
HERE=$(cd "$(dirname "$0")/.." && pwd)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
echo "# scripts/ab_engine.sh $BASE $PY $ITEMS $EXPLAIN ${EXTRA[*]}; B = $(git -C "$HERE" rev-parse --short HEAD); $(nproc) CPUs; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
for step in A B B A; do
  if [ "$step" = A ]; then tree=$BASE; else tree=$HERE; fi
  echo "=== $step ($tree) $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  PYTHONPATH=$tree "$PY" "$HERE/scripts/bench_engine.py" --items "$ITEMS" --explain-items "$EXPLAIN" --naive-sample 2 "${EXTRA[@]}" 2>/dev/null \
    | grep '^{' | "$PY" -c 'import json,sys; r=json.loads(sys.stdin.read().splitlines()[-1]); print(json.dumps({k: r.get(k) for k in ("judgments","score_jps","explain_jps","engine_seconds_score","host_seconds_score","host_ms_per_judgment_score","engine_seconds_explain","host_seconds_explain","host_ms_per_judgment_explain","peak_rss_mib")}))'
done
