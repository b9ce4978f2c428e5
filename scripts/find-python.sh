#!/usr/bin/env bash
# Print the path of a Python X.Y interpreter (the argument, e.g. 3.12), or nothing when
# there is none: pythonX.Y on PATH if it runs (a pyenv shim may not), else pyenv's newest
# X.Y.z.  The project's venv wants 3.12 (find-python312.sh); `make lock` also resolves the
# pins for 3.11, the fallback, when one is found.
want="${1:?usage: find-python.sh X.Y}"
candidates=()
command -v "python$want" >/dev/null 2>&1 && candidates+=("$(command -v "python$want")")
root="${PYENV_ROOT:-$HOME/.pyenv}"
for path in $(ls -d "$root"/versions/"$want".*/bin/python"$want" 2>/dev/null | sort -V -r); do
  candidates+=("$path")
done
for python in "${candidates[@]}"; do
  if "$python" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$want')" >/dev/null 2>&1; then
    echo "$python"
    exit 0
  fi
done
exit 0
