#!/usr/bin/env bash
# The first screen (1400x1000) of `report` for the bundled example graded by the embedded
# default judge, as docs/img/report-first-screen.png (issue 51: the report leads with results).
# Needs chromium (scripts/setup_browser.sh). Usage: bash scripts/report_screenshot.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
.venv/bin/autorubric-local grade examples/battery_rubric.yaml examples/battery_submissions.jsonl \
  --db "$work/r.sqlite" --run battery --seed 0 --no-progress > /dev/null
.venv/bin/autorubric-local report battery --db "$work/r.sqlite" --out "$work/report" > /dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1000 \
  --screenshot="$PWD/docs/img/report-first-screen.png" "file://$work/report/index.html" 2> /dev/null
echo "docs/img/report-first-screen.png from $work/report/index.html"
