#!/usr/bin/env bash
# Writes scripts/constraints.txt: the version of every package in .venv, as pip constraints
# (name==version), for scripts/setup.sh, setup_llamacpp.sh and setup_ray.sh to install with -c.
#
# Run it after the whole test suite passed in a .venv built by README command 2 (setup.sh,
# setup_llamacpp.sh, setup_ray.sh), so the file records the versions the suite was last green
# with; commit the file with the change that needed new versions. This package itself (editable)
# and pip are left out. A local version label is dropped (torch 2.13.0+cpu -> torch==2.13.0:
# the pin matches the local build, and `pip install torch==2.13.0` is what setup.sh asks for).
# Packages installed from a URL or a path cannot be constraints: the script refuses them.
# scripts/check_latest.sh tries the latest allowed versions instead (not run by CI).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "scripts/lock_versions.sh: no .venv here (run scripts/setup.sh first)" >&2
  exit 1
fi
# --all: setuptools too (torch needs it at run time); pip itself is left out
frozen=$(.venv/bin/python -m pip freeze --all --exclude-editable --disable-pip-version-check 2>/dev/null \
  | grep -v -i -E '^pip==')
unpinned=$(grep -v -E '^[A-Za-z0-9._-]+==[^ ]+$' <<<"$frozen" || true)
if [ -n "$unpinned" ]; then
  echo "scripts/lock_versions.sh: these are not name==version, so they cannot be constraints:" >&2
  echo "$unpinned" >&2
  exit 1
fi
{
  echo "# Versions the test suite was last green with (pip constraints); written by"
  echo "# scripts/lock_versions.sh from .venv; scripts/setup.sh, setup_llamacpp.sh and setup_ray.sh"
  echo "# install with them. Do not edit by hand."
  grep -v -i -E '^autorubric[-_.]local==' <<<"$frozen" | sed -E 's/\+[^ ]*$//' | LC_ALL=C sort -f
} > scripts/constraints.txt
echo "scripts/lock_versions.sh: wrote scripts/constraints.txt ($(grep -c '==' scripts/constraints.txt) packages)"
