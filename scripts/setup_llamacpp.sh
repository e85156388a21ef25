#!/usr/bin/env bash
# Idempotent set-up of the llama.cpp backend in .venv (run scripts/setup.sh first).
#
# llama-cpp-python 0.3.36 is published as source only: pip compiles llama.cpp (a few minutes
# on 2 cores with the flags below; pip's wheel cache makes a second install on the same machine
# take seconds). The build is portable x86-64-v3 (AVX2, FMA, F16C) rather than tuned to this
# CPU (GGML_NATIVE=OFF), so a cached wheel never meets a CPU that lacks an instruction it uses;
# set CMAKE_ARGS yourself for another target (e.g. -DGGML_CUDA=ON on a GPU box). Examples, tests
# and the multimodal library are not built. Once installed, GGUF judges run on llama.cpp by
# default (LLMConfig.backend="auto"), and its OpenAI-compatible server runs (the hosted-judge
# tests start one). Everything installs at the versions in scripts/constraints.txt (see
# scripts/setup.sh). A stamp file keyed by this script and the constraints makes a second run a
# no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "scripts/setup_llamacpp.sh: run scripts/setup.sh first (no .venv here)" >&2
  exit 1
fi
stamp=".venv/.setup-llamacpp-$(cat scripts/setup_llamacpp.sh scripts/constraints.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}"
  export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
  .venv/bin/python -m pip install -q -c scripts/constraints.txt llama-cpp-python==0.3.36
  # its OpenAI-compatible server (python -m llama_cpp.server), which the hosted-judge tests start;
  # named one by one so the compiled wheel is not rebuilt for its [server] extra
  .venv/bin/python -m pip install -q -c scripts/constraints.txt fastapi uvicorn sse-starlette starlette-context \
    pydantic-settings
  .venv/bin/python -c "import llama_cpp, llama_cpp.server.app, autorubric_local.engine.llamacpp.backend"
  rm -f .venv/.setup-llamacpp-*
  touch "$stamp"
fi
