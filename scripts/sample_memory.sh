#!/usr/bin/env bash
# Sample host memory while a command runs: every 2 s, the used memory (free -m) and the three
# largest processes by resident memory (ps RSS). Usage:
#   bash scripts/sample_memory.sh OUT.txt COMMAND...
# Writes the samples to OUT.txt, then the command's output tail and exit status.
set -uo pipefail
out="$1"; shift
: > "$out"
(
  while true; do
    echo "$(date +%T) used=$(free -m | awk '/Mem:/{print $3}')MB $(ps -eo rss,comm --sort=-rss | sed -n 2,4p | awk '{printf "%s:%dMB ", $2, $1/1024}')"
    sleep 2
  done
) >> "$out" &
sampler=$!
"$@" > "$out.cmd" 2>&1
status=$?
kill "$sampler"
{ echo "--- command: $*"; grep -a -v "it/s\]" "$out.cmd" | tail -40; echo "--- exit $status"; } >> "$out"
rm -f "$out.cmd"
exit "$status"
