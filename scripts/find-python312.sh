#!/usr/bin/env bash
# Print the path of a Python 3.12 interpreter for the project's venv (Harbor, and so the
# `harbor` extra, needs 3.12+), or nothing when there is none: python3.12 on PATH if it
# runs (a pyenv shim may not), else pyenv's newest 3.12.x.
candidates=()
command -v python3.12 >/dev/null 2>&1 && candidates+=("$(command -v python3.12)")
root="${PYENV_ROOT:-$HOME/.pyenv}"
for path in $(ls -d "$root"/versions/3.12.*/bin/python3.12 2>/dev/null | sort -V -r); do
  candidates+=("$path")
done
for python in "${candidates[@]}"; do
  if "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; then
    echo "$python"
    exit 0
  fi
done
exit 0
