#!/usr/bin/env bash
# Make sure swipl, bwrap, tmux, chromium and chromedriver are on PATH; install them with
# apt-get when we may.  (tmux: the live progress display is tested in a real
# pseudo-terminal; chromium: the HTML report is tested in Debian's headless Chromium.)
set -euo pipefail
missing=()
command -v swipl >/dev/null 2>&1 || missing+=(swi-prolog-nox)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
[ ${#missing[@]} -eq 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo=none; fi
  if [ "$sudo" != none ]; then
    echo "installing ${missing[*]} with apt-get" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    exit 0
  fi
fi
echo "error: deonticbench needs the packages ${missing[*]} (SWI-Prolog, bubblewrap, tmux, and Chromium for the report's tests); install them with your system's package manager and run make again." >&2
exit 1
