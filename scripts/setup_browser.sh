#!/usr/bin/env bash
# Set-up of a headless browser for the report's browser test (tests/test_report.py): Debian's
# chromium and chromium-driver, driven by selenium (the package's `test` extra, from
# scripts/setup.sh). Run after scripts/setup.sh. Idempotent, and it never fails the set-up: when
# the browser cannot be installed (not root, no apt-get, no network) it says why and exits 0,
# and the browser test then skips.
#
# On success it writes the stamp .venv/.browser-ready: from then on the browser test fails,
# rather than skips, when it cannot start the browser (as it does whenever CI is set), so a
# broken browser cannot hide behind a skip.
cd "$(dirname "$0")/.." || exit 0
stamp=".venv/.browser-ready"
say() { echo "scripts/setup_browser.sh: $*"; }
have_browser() { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }

if ! have_browser; then
  if [ "$(id -u)" != 0 ]; then
    say "chromium or chromedriver is missing and this is not root: install them with" \
        "'apt-get install chromium chromium-driver'; the browser test will be skipped"
  elif ! command -v apt-get >/dev/null 2>&1; then
    say "chromium or chromedriver is missing and there is no apt-get; the browser test will be skipped"
  else
    say "installing chromium and chromium-driver with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -q update >/dev/null 2>&1 || say "apt-get update failed; trying the install anyway"
    if ! apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 chromium chromium-driver \
        >/tmp/setup_browser_apt.log 2>&1; then
      say "apt-get install failed (see /tmp/setup_browser_apt.log); the browser test will be skipped"
    fi
  fi
fi

if ! have_browser; then
  rm -f "$stamp"
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  say "chromium is installed, but there is no .venv (run scripts/setup.sh first); no stamp written"
  exit 0
fi
if ! .venv/bin/python -c "import selenium" >/dev/null 2>&1; then
  say "chromium is installed, but selenium is missing from .venv (scripts/setup.sh installs it); no stamp written"
  exit 0
fi
touch "$stamp"
say "ready: $(chromium --version 2>/dev/null | head -1), $(chromedriver --version 2>/dev/null | head -1)"
exit 0
