#!/usr/bin/env bash
# Do one vLLM release's own requirements resolve together with this package?
#
# Reads the release's requirements from PyPI (metadata only; nothing is installed), keeps those
# whose markers hold on this machine, drops the version bound of each package named in
# UNPIN (space-separated; e.g. a floor the index cannot meet yet), and runs a
# `pip install --dry-run` of this package (without its [vllm] extra) plus that list, isolated
# from this machine's pip config like scripts/check_gpu_install.sh. Used to tell a real
# conflict with this package's pins from a requirement the index cannot meet.
#
#   UNPIN=certifi bash scripts/check_vllm_requirements.sh 0.33.0
#
# Exit status: pip's.
set -uo pipefail

VERSION="${1:?usage: check_vllm_requirements.sh VLLM_VERSION}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PIP=(env -u PIP_FIND_LINKS -u PIP_CONSTRAINT -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null "$WORK/venv/bin/python" -m pip)

"${PYTHON:-python3}" -m venv "$WORK/venv"
"${PIP[@]}" install -q --upgrade pip >/dev/null
git -C "$ROOT" archive HEAD | tar -x -C "$WORK" --one-top-level=src
cp "$ROOT/pyproject.toml" "$WORK/src/pyproject.toml"
"${PIP[@]}" install -q --dry-run --no-deps --ignore-installed --report "$WORK/meta.json" "vllm==$VERSION" >/dev/null
UNPIN="${UNPIN:-}" "$WORK/venv/bin/python" - "$WORK/meta.json" > "$WORK/requirements.txt" <<'EOF'
import json, os, sys
from pip._vendor.packaging.requirements import Requirement

unpin = {name.lower() for name in os.environ["UNPIN"].split()}
for line in json.load(open(sys.argv[1]))["install"][0]["metadata"]["requires_dist"]:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    if req.name.lower() in unpin:
        print(f"{req.name}  # bound {req.specifier} dropped (UNPIN)")
    else:
        print(req)
EOF
echo "# requirements of vllm $VERSION on $(uname -sm)${UNPIN:+, bound dropped: $UNPIN}:"
cat "$WORK/requirements.txt"
"${PIP[@]}" install --dry-run --ignore-installed --report "$WORK/report.json" "$WORK/src" -r "$WORK/requirements.txt" \
  2>&1 | grep -E "^(ERROR|Would install)"
status=${PIPESTATUS[0]}
echo "# pip exit status $status (vllm itself is not in the set: only its requirements are)"
[ "$status" -eq 0 ] && "$WORK/venv/bin/python" "$ROOT/scripts/summarize_pip_report.py" "$WORK/report.json" | head -9
exit "$status"
