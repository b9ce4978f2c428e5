#!/usr/bin/env bash
# Print the path of a Python 3.12 interpreter for the project's venv (Harbor, and so the
# `harbor` extra, needs 3.12+), or nothing when there is none (find-python.sh says how it
# looks).
exec bash "$(dirname "$0")/find-python.sh" 3.12
