#!/usr/bin/env bash
# Idempotent set-up of .venv-peer: the upstream tool, AutoRubric 1.6.1 (PyPI `autorubric`),
# next to llama-cpp-python's OpenAI-compatible server, for scripts/peer_autorubric.py.
#
# It lives in its own venv so upstream's dependencies (litellm etc.) never touch .venv.
#  - llama-cpp-python 0.3.36 is source-only on PyPI. The wheel is taken from $LLAMA_CPP_WHEEL,
#    else the newest wheel in /work/llama-build/wheels, else pip compiles it with the same
#    portable x86-64-v3 flags as scripts/setup_llamacpp.sh (a few minutes on 2 cores).
#  - the server extras ([server] of llama-cpp-python) are installed by name, so a local wheel
#    needs no index look-up of its own extras metadata.
#  - torch is pinned to 2.13.0 should anything pull it (an unpinned torch is a multi-GB CUDA
#    build); a constraints file does this without installing torch when nothing needs it.
# A stamp file keyed by this script makes a second run a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=.venv-peer
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
stamp="$venv/.setup-$(sha256sum < scripts/setup_peer.sh | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  pip=("$venv/bin/python" -m pip install -q -c "$venv/constraints.txt")
  echo "torch==2.13.0" > "$venv/constraints.txt"
  wheel=${LLAMA_CPP_WHEEL:-$(ls -t /work/llama-build/wheels/llama_cpp_python-*.whl 2>/dev/null | head -n1 || true)}
  if [ -n "$wheel" ]; then
    "${pip[@]}" "$wheel"
  else
    export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}"
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
    "${pip[@]}" llama-cpp-python==0.3.36
  fi
  "${pip[@]}" autorubric==1.6.1 fastapi uvicorn sse-starlette starlette-context pydantic-settings
  LITELLM_LOCAL_MODEL_COST_MAP=True "$venv/bin/python" -c "import autorubric, llama_cpp, llama_cpp.server.app"
  rm -f "$venv"/.setup-*
  touch "$stamp"
fi
