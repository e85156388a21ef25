#!/usr/bin/env bash
# Idempotent set-up of distributed grading (Ray) in .venv (run scripts/setup.sh first).
#
# Installs ray 2.60.0 (~80 MB wheel, ~240 MB installed): EvalConfig(distributed=...) and
# `autorubric-local grade --ray local|auto|ADDRESS` grade chunks on Ray actors; the base install
# never imports Ray. The same pin is the [ray] extra (pip install 'autorubric-local[ray]').
# Every node of a cluster needs this environment (same Python, this package, Ray and the judge's
# model files). Ray's dependencies install at the versions in scripts/constraints.txt (see
# scripts/setup.sh). A stamp file keyed by this script and the constraints makes a second run a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "scripts/setup_ray.sh: run scripts/setup.sh first (no .venv here)" >&2
  exit 1
fi
stamp=".venv/.setup-ray-$(cat scripts/setup_ray.sh scripts/constraints.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q -c scripts/constraints.txt 'ray==2.60.0'
  .venv/bin/python -c "import ray, autorubric_local.runner.distributed"
  rm -f .venv/.setup-ray-*
  touch "$stamp"
fi
