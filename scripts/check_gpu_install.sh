#!/usr/bin/env bash
# Does `pip install '.[vllm]'` resolve, with a CUDA torch, in one environment?
#
# A dry run in a throwaway venv: pip reads the metadata of this package's `vllm` extra and of
# everything it pulls in from PyPI (the registry serves wheel metadata on its own, so the big
# wheels are normally not downloaded) and reports the set it would install; nothing is
# installed. torch from PyPI on Linux x86_64 is the CUDA build: the nvidia-* packages in the
# resolution show it. Writes pip's output and a summary (the key versions, then every package
# pip would install) to the file given, by default scripts/results/gpu_install_dryrun_<date>.txt.
# The package is the committed tree with the working tree's pyproject.toml, so a change to the
# extra's pins can be checked before it is committed.
#
#   bash scripts/check_gpu_install.sh [OUT.txt]
#
# Exit status: pip's (0 when the set resolves).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/scripts/results/gpu_install_dryrun_$(date -u +%F).txt}"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$(dirname "$OUT")"

"$PYTHON" -m venv "$WORK/venv"
PIP_CONFIG_FILE=/dev/null "$WORK/venv/bin/python" -m pip install -q --upgrade pip >/dev/null
git -C "$ROOT" archive HEAD | tar -x -C "$WORK" --one-top-level=src
cp "$ROOT/pyproject.toml" "$WORK/src/pyproject.toml"

{
  echo "# pip install --dry-run '.[vllm]' (commit $(git -C "$ROOT" rev-parse --short HEAD)), $(date -u +%FT%TZ)"
  echo "# $("$WORK/venv/bin/python" --version), $("$WORK/venv/bin/python" -m pip --version | cut -d' ' -f1-2), $(uname -sm)"
  echo "# vllm extra: $(grep -E '^vllm = ' "$WORK/src/pyproject.toml")"
  start=$(date +%s)
  # This workplace's pip config (a local folder holding a CPU torch wheel, a cap on torch)
  # is left out, so pip sees PyPI as a GPU box would.
  env -u PIP_FIND_LINKS -u PIP_CONSTRAINT -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
    "$WORK/venv/bin/python" -m pip install --dry-run --ignore-installed --report "$WORK/report.json" \
    "$WORK/src[vllm]" 2>&1 | grep -v '^\s*\(Downloading\|Using cached\|Obtaining\|Collecting\)' | tail -n 60
  status=${PIPESTATUS[0]}
  echo "# pip exit status $status after $(( $(date +%s) - start )) s"
  if [ "$status" -eq 0 ] && [ -s "$WORK/report.json" ]; then
    "$WORK/venv/bin/python" "$ROOT/scripts/summarize_pip_report.py" "$WORK/report.json"
  fi
  exit "$status"
} 2>&1 | tee "$OUT"
exit "${PIPESTATUS[0]}"
