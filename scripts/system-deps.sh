#!/usr/bin/env bash
# Make sure swipl and bwrap (what every run needs) are on PATH, and with --test also tmux,
# chromium and chromedriver (what the tests need: the live progress display is tested in a
# real pseudo-terminal, the HTML report in Debian's headless Chromium); install them with
# apt-get when we may.
set -euo pipefail
missing=()
command -v swipl >/dev/null 2>&1 || missing+=(swi-prolog-nox)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
if [ "${1:-}" = "--test" ]; then
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
fi
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
echo "error: deonticbench needs the packages ${missing[*]} (SWI-Prolog and bubblewrap to run programs; tmux and Chromium for the tests); install them with your system's package manager and run make again." >&2
exit 1
