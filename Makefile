# Every target bootstraps the virtual environment it needs; a second run reinstalls nothing.
# `make help` lists the targets.

# The Python the venvs are made from: Debian's python3.11 where it is installed, else the first
# python3.11 on the PATH. Debian builds its Python with optimizations that a plain source build
# (pyenv's default, earlier on the test machines' PATH) lacks: pure-Python code ran 1.6 times as
# fast under it there, and a notebook, whose tracing is Python, on 15% less CPU (notebook 02).
PYTHON ?= $(firstword $(wildcard /usr/bin/python3.11) $(shell command -v python3.11 2>/dev/null || command -v python3))
# The venvs are created and filled by uv (UV_VERSION, installed into TOOLS_VENV by the Python
# above) from the lanes' lock files. Where uv cannot be installed, `make INSTALLER=pip ...`
# does the same with venv and pip.
INSTALLER ?= uv
UV_VERSION := 0.13.9
TOOLS_VENV := .venv-tools
UV := $(TOOLS_VENV)/bin/uv
UV_STAMP := $(TOOLS_VENV)/.uv-$(UV_VERSION)
VENV := .venv
BIN := $(VENV)/bin
# The stamps name the way a venv was filled: a venv filled before its bytecode was compiled
# (below) is filled again once, in seconds.
STAMP_NAME := .installed-compiled
STAMP := $(VENV)/$(STAMP_NAME)
CURRENT_VENV := .venv-current
CURRENT_BIN := $(CURRENT_VENV)/bin
CURRENT_STAMP := $(CURRENT_VENV)/$(STAMP_NAME)
COLAB_VENV := .venv-colab
COLAB_BIN := $(COLAB_VENV)/bin
COLAB_STAMP := $(COLAB_VENV)/$(STAMP_NAME)
# The TensorFlow that helpers.colab installs on Colab TPU runtimes (a test keeps the two equal).
COLAB_TF := $(shell sed -n 's/^tensorflow==//p' requirements-colab.txt)
DOCS_VENV := .venv-docs
DOCS_BIN := $(DOCS_VENV)/bin
DOCS_STAMP := $(DOCS_VENV)/$(STAMP_NAME)
BUILD := build
PYTEST_ARGS ?=
# Each lane's pytest keeps its temporary folders, and so the notebooks it executed, in
# build/pytest/LANE (CI keeps them when a run fails), and lists its ten slowest tests.
PYTEST_TMP = --basetemp=$(BUILD)/pytest/$(1) --durations=10
# `make test` runs its two halves at a time (TEST_JOBS) and goes on when a lane fails,
# so each line a lane prints starts with its name; pipefail keeps a failing pytest failing
# through the pipe. Each lane ends with its ten slowest tests (--durations above).
TEST_JOBS ?= 2
LANE_PREFIX = 2>&1 | sed -u 's/^/[$(1)] /'
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.DEFAULT_GOAL := help
.PHONY: help device-wheels run run-times check-notebook wheel test test-reference test-current test-colab test-docs test-fast test-newest \
	check-compat check-locks lint hooks record docs compat lock set-repository clean bench \
	bench-current test-nbval test-nbval-current test-first-half test-second-half \
	test-reference-notebooks test-reference-rest test-reference-slow

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 18

# $(call venv,FOLDER,LOCK): create FOLDER if needed, make its packages exactly the LOCK file's
# and install this repository's helpers into it (the recipe runs only when a stamp is older
# than the lock, so a second run reinstalls nothing). The packages' bytecode is compiled at
# install time: where PYTHONDONTWRITEBYTECODE is set (as on the test machines) Python would
# otherwise compile TensorFlow's 1,800 modules at every import, 6 s of a 9 s `import
# tensorflow` in the reference lane and 10 of 16 s in the current one, in each of the
# hundreds of kernels and processes `make test` starts. pip compiles by default.
ifeq ($(INSTALLER),uv)
UV_NEEDED := $(UV_STAMP)
define venv
	@test -x $(1)/bin/python || $(UV) venv --quiet --python $(PYTHON) $(1)
	$(UV) pip sync --quiet --compile-bytecode --python $(1)/bin/python $(2)
	$(UV) pip install --quiet --python $(1)/bin/python --no-deps -e .
endef
else ifeq ($(INSTALLER),pip)
UV_NEEDED :=
define venv
	@test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	@$(1)/bin/python -m pip --version >/dev/null 2>&1 || $(1)/bin/python -m ensurepip --default-pip >/dev/null
	$(1)/bin/python -m pip install -qq --disable-pip-version-check -r $(2)
	$(1)/bin/python -m pip install -qq --disable-pip-version-check --no-deps -e .
endef
else
$(error INSTALLER=$(INSTALLER): use uv or pip)
endif

$(UV_STAMP):
	@echo "Installing uv $(UV_VERSION) into $(TOOLS_VENV) (it creates and fills the other venvs)..."
	@test -x $(TOOLS_VENV)/bin/python || $(PYTHON) -m venv $(TOOLS_VENV)
	@$(TOOLS_VENV)/bin/python -m pip install -qq --disable-pip-version-check uv==$(UV_VERSION) || { \
	  echo "uv $(UV_VERSION) could not be installed: run make INSTALLER=pip ... to use pip instead."; \
	  exit 1; }
	@touch $@

# $(call kernel,FOLDER,DISPLAY NAME): register FOLDER's Python as the `python3` Jupyter kernel
# inside FOLDER, which papermill and nbval find when run from it. ipykernel stages the spec in a
# new temporary folder that it leaves behind empty (write_kernel_spec in ipykernel/kernelspec.py),
# so it stages it in a folder of FOLDER's, removed afterwards.
define kernel
	@mkdir -p $(1)/.kernel-staging
	TMPDIR=$(abspath $(1))/.kernel-staging $(1)/bin/python -m ipykernel install --sys-prefix \
	  --name python3 --display-name "$(2)" >/dev/null
	@rm -rf $(1)/.kernel-staging
endef

$(STAMP): requirements.txt pyproject.toml | $(UV_NEEDED)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { \
	  echo "The reference lane needs Python 3.11 (TensorFlow 2.15 has no wheels for newer" \
	       "Pythons). Install it and run: make PYTHON=/path/to/python3.11 ..."; exit 1; }
	@echo "Installing the reference lane into $(VENV) (TensorFlow 2.15.1) with $(INSTALLER)..."
	$(call venv,$(VENV),requirements.txt)
	$(call kernel,$(VENV),Python 3 (TPU migration, TF 2.15))
	@touch $@

$(CURRENT_STAMP): requirements-current.txt pyproject.toml | $(UV_NEEDED)
	@echo "Installing the current lane into $(CURRENT_VENV) (the newest TensorFlow when requirements-current.txt was last locked) with $(INSTALLER)..."
	$(call venv,$(CURRENT_VENV),requirements-current.txt)
	$(call kernel,$(CURRENT_VENV),Python 3 (TPU migration, newest TF))
	@touch $@

$(COLAB_STAMP): requirements-colab.txt pyproject.toml | $(UV_NEEDED)
	@echo "Installing the Colab lane into $(COLAB_VENV) (TensorFlow $(COLAB_TF), as on Colab) with $(INSTALLER)..."
	$(call venv,$(COLAB_VENV),requirements-colab.txt)
	$(call kernel,$(COLAB_VENV),Python 3 (TPU migration, TF $(COLAB_TF) as on Colab))
	@touch $@

$(DOCS_STAMP): requirements-docs.txt pyproject.toml | $(UV_NEEDED)
	@echo "Installing the site's tools into $(DOCS_VENV) (Sphinx, myst-nb, Playwright) with $(INSTALLER)..."
	$(call venv,$(DOCS_VENV),requirements-docs.txt)
	@touch $@

# make run executes RUN_JOBS notebooks at a time, the longest first (tools/run_notebooks.py);
# the run-time table needs a run of one at a time: make run RUN_JOBS=1, then make run-times.
RUN_JOBS ?= 2
run: $(STAMP) $(CURRENT_STAMP) ## execute every notebook with papermill into build/run (RUN_JOBS at a time, default 2) and summarise
	$(BIN)/python -m tools.run_notebooks --jobs $(RUN_JOBS) --out $(BUILD)/run

run-times: $(STAMP) ## rewrite CONTRIBUTING.md's run-time table from the last `make run RUN_JOBS=1` (build/run/run_times.json)
	$(BIN)/python -m tools.run_times

# What a change to one notebook needs, in minutes: its nbval (other-CPU stand-in), its papermill
# cases in the reference and current lanes, its claim tests and the conventions.
check-notebook: $(STAMP) $(CURRENT_STAMP) ## one notebook's nbval, papermill cases and claim tests: NB=15
	@test -n "$(NB)" || { echo "Name the notebook: make check-notebook NB=15"; exit 2; }
	$(BIN)/python -m tools.check_notebook $(NB)

test: ## the whole test suite: the three lanes, nbval (another CPU) and the site, two at a time, then the compatibility table
	@$(MAKE) --no-print-directory -k -j$(TEST_JOBS) test-first-half test-second-half
	@$(MAKE) --no-print-directory check-compat

# make test's two halves, of about the same amount of work on a 2-core machine (about 32
# minutes each on the machine of CONTRIBUTING.md's figures): the reference lane's papermill
# cases (its longest part) with the Colab lane, nbval-current and the site; and the current
# lane with the reference lane's other tests and nbval. The halves' makes share make test's
# job slots (TEST_JOBS), so a part of one half may start while the other half still runs.
# Each half goes on when one of its parts fails. The venvs are the halves' prerequisites, so
# the make that runs both creates them, once each.
test-first-half: $(STAMP) $(CURRENT_STAMP) $(COLAB_STAMP) $(DOCS_STAMP) ## the reference lane's notebooks and slowest other tests, the Colab lane, nbval-current, the site (half of make test)
	@$(MAKE) --no-print-directory -k test-reference-notebooks test-colab test-nbval-current test-docs test-reference-slow

test-second-half: $(STAMP) $(CURRENT_STAMP) ## the current lane, the reference lane's other tests but its slowest, nbval (half of make test)
	@$(MAKE) --no-print-directory -k test-current test-reference-rest test-nbval REST_SELECT="$(WITHOUT_SLOW)"

check-compat: ## fail if CONTRIBUTING.md's compatibility table disagrees with the lanes' last runs
	$(PYTHON) -m tools.compat_table --check

# The reference lane in two parts that make test runs in its two halves (the papermill cases
# are two thirds of the lane); `make test-reference` runs both, one after the other.
test-reference: ## reference lane (TF 2.15): lint, unit, conventions, papermill (nbval: test-nbval)
	@$(MAKE) --no-print-directory -k test-reference-rest test-reference-slow test-reference-notebooks REST_SELECT="$(WITHOUT_SLOW)"

# The reference lane's slowest other tests (about two and a half minutes, worker processes and
# kills): make test runs them in its first half (test-reference-slow) and the rest of
# test-reference-rest in its second (REST_SELECT), which evens out the halves' lengths;
# make test-reference runs both parts, and test-reference-rest alone runs them all.
REFERENCE_SLOW := tests/test_claims_07.py tests/test_preemption.py tests/test_tf1_run.py \
	tests/test_workbench_wheel.py
WITHOUT_SLOW := $(addprefix --ignore=,$(REFERENCE_SLOW))
REST_SELECT ?=

test-reference-rest: $(STAMP) lint ## the reference lane without its papermill cases: lint, unit, claims, conventions
	@mkdir -p $(BUILD)/pytest/reference
	TPU_MIGRATION_LANE=reference $(BIN)/python -m pytest tests --ignore=tests/test_site.py \
	  --ignore=tests/test_notebooks.py $(REST_SELECT) -p no:cacheprovider \
	  $(call PYTEST_TMP,reference/rest) $(PYTEST_ARGS) $(call LANE_PREFIX,reference)

test-reference-slow: $(STAMP) ## the reference lane's slowest other tests (part of test-reference-rest)
	@mkdir -p $(BUILD)/pytest/reference
	TPU_MIGRATION_LANE=reference $(BIN)/python -m pytest $(REFERENCE_SLOW) -p no:cacheprovider \
	  $(call PYTEST_TMP,reference/slow) $(PYTEST_ARGS) $(call LANE_PREFIX,reference-slow)

test-reference-notebooks: $(STAMP) ## the reference lane's papermill cases (tests/test_notebooks.py)
	@mkdir -p $(BUILD)/pytest/reference
	TPU_MIGRATION_LANE=reference $(BIN)/python -m pytest tests/test_notebooks.py \
	  -p no:cacheprovider $(call PYTEST_TMP,reference/notebooks) $(PYTEST_ARGS) \
	  $(call LANE_PREFIX,reference-notebooks)

# nbval runs every notebook once, at its defaults, in the reference lane, and compares each
# output with the committed one. The committed outputs were recorded on one CPU; oneDNN picks
# its kernels by the instruction set, so another CPU moves float results in their last bits.
# So nbval runs with oneDNN's TensorFlow kernels switched off (Eigen's instead), which moves
# float results in their last bits as another CPU does: a stand-in for it, on which the
# comparison (tools/output_compare.py) must pass, on the recording machine too. The papermill
# cases of test-reference run with oneDNN on, the default. `OTHER_CPU=` (empty) runs nbval
# with oneDNN on; `OTHER_CPU=ONEDNN_MAX_CPU_ISA=AVX2` is the other stand-in, but on the AMD
# EPYC (AVX512_BF16, no AMX) where it was tried, TensorFlow 2.15.1 crashed with SIGSEGV under
# it in a bfloat16 matmul of notebook 08's mixed precision.
OTHER_CPU ?= TF_ENABLE_ONEDNN_OPTS=0
test-nbval: $(STAMP) ## nbval of every notebook in the reference lane, oneDNN switched off (another CPU)
	@mkdir -p $(BUILD)/pytest
	env $(OTHER_CPU) TPU_MIGRATION_LANE=reference \
	  $(BIN)/python -m pytest notebooks --nbval --nbval-current-env \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider \
	  $(call PYTEST_TMP,nbval) $(PYTEST_ARGS) $(call LANE_PREFIX,nbval)

# The notebooks recorded in the current lane (Keras 3 on JAX: tools.project.recording_lane)
# are compared there. JAX computes with XLA's own CPU kernels, not oneDNN's, which XLA picks
# by the instruction set as well: XLA_FLAGS=--xla_cpu_max_isa=AVX2 keeps it to AVX2, the
# stand-in for another CPU on this one (the notebook keeps the flags it finds in XLA_FLAGS).
OTHER_CPU_CURRENT ?= TF_ENABLE_ONEDNN_OPTS=0 XLA_FLAGS=--xla_cpu_max_isa=AVX2
test-nbval-current: $(CURRENT_STAMP) ## nbval of the notebooks recorded in the current lane, on another CPU's stand-in
	@mkdir -p $(BUILD)/pytest
	env $(OTHER_CPU_CURRENT) TPU_MIGRATION_LANE=current \
	  $(CURRENT_BIN)/python -m pytest notebooks --nbval --nbval-current-env \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider \
	  $(call PYTEST_TMP,nbval-current) $(PYTEST_ARGS) $(call LANE_PREFIX,nbval-current)

test-current: $(CURRENT_STAMP) ## current lane (newest TF, Keras 3): unit tests, TF2 notebooks, upstream bugs
	@$(CURRENT_BIN)/python -c 'import tensorflow as tf, keras; print(f"current lane: TensorFlow {tf.__version__}, Keras {keras.__version__}")' 2>/dev/null
	@mkdir -p $(BUILD)/pytest
	TPU_MIGRATION_LANE=current $(CURRENT_BIN)/python -m pytest tests -m "not reference_only" \
	  --ignore=tests/test_site.py -p no:cacheprovider $(call PYTEST_TMP,current) $(PYTEST_ARGS) \
	  $(call LANE_PREFIX,current)

# The Colab lane runs what depends on its TensorFlow release: each notebook once, the Colab
# set-up's tests and the upstream pins. The unit and claim tests run in the current lane, whose
# Keras 3 is the same release (a TensorFlow minor apart): running them here too repeated about
# five minutes of one core for no other coverage.
COLAB_TESTS := tests/test_notebooks.py tests/test_colab.py tests/test_upstream_bugs.py
test-colab: $(COLAB_STAMP) ## Colab lane (the TF Colab's set-up installs): each notebook once, the set-up, upstream bugs
	@$(COLAB_BIN)/python -c 'import tensorflow as tf, keras; print(f"Colab lane: TensorFlow {tf.__version__}, Keras {keras.__version__}")' 2>/dev/null
	@mkdir -p $(BUILD)/pytest
	TPU_MIGRATION_LANE=colab $(COLAB_BIN)/python -m pytest $(COLAB_TESTS) -m "not reference_only" \
	  -p no:cacheprovider $(call PYTEST_TMP,colab) $(PYTEST_ARGS) \
	  $(call LANE_PREFIX,colab)

test-docs: $(DOCS_STAMP) ## the site: build with warnings as errors, links, pages in Chromium
	@bash tools/ensure_chromium.sh
	@mkdir -p $(BUILD)/pytest
	$(DOCS_BIN)/python -m pytest tests/test_site.py -p no:cacheprovider $(call PYTEST_TMP,docs) \
	  $(PYTEST_ARGS) $(call LANE_PREFIX,site)
	@echo "Screenshots of every page: $(BUILD)/site-shots/"

test-fast: $(STAMP) ## unit tests and notebook conventions only (no notebook, no TensorFlow): seconds
	TPU_MIGRATION_LANE=reference $(BIN)/python -m pytest tests -m "not notebook and not tensorflow" \
	  --ignore=tests/test_site.py -p no:cacheprovider $(PYTEST_ARGS)

test-newest: $(UV_STAMP) ## re-resolve the current lane to the newest releases, then test it (CI's weekly run)
	$(PYTHON) -m tools.lock --uv $(UV) --upgrade current
	@git diff --stat -- requirements-current.txt 2>/dev/null || true
	@$(MAKE) --no-print-directory test-current

lint: $(STAMP) ## ruff over helpers, workbench, tools, tests, docs and notebooks; lock files current
	$(BIN)/ruff check conftest.py helpers workbench tools tests docs notebooks
	$(BIN)/ruff format --check conftest.py helpers workbench tools tests docs
	@$(MAKE) --no-print-directory check-locks

check-locks: $(STAMP) ## fail if a lock file is stale against its .in file (offline)
	$(BIN)/python -m tools.lock --check

hooks: $(STAMP) ## install the git pre-commit hook (.pre-commit-config.yaml: ruff, conventions, workflows, locks)
	$(BIN)/pre-commit install

lock: $(UV_STAMP) ## compile the lanes' lock files from their .in files (keeps pins that still fit)
	$(PYTHON) -m tools.lock --uv $(UV)

record: $(STAMP) $(CURRENT_STAMP) ## re-execute the notebooks in place to refresh their committed outputs
	$(BIN)/python -m tools.record_notebooks notebooks/*.ipynb

wheel: $(UV_STAMP) ## build the workbench's wheel into build/dist (pip install it where your TF1 code lives)
	@rm -rf $(BUILD)/dist
	$(UV) build --quiet --out-dir $(BUILD)/dist
	@echo "Built $$(ls $(BUILD)/dist/*.whl): pip install it, then run tpu-workbench --help"

docs: $(DOCS_STAMP) ## build the site into build/site from the committed notebooks (no execution)
	$(DOCS_BIN)/python -m sphinx -W --keep-going -b html docs $(BUILD)/site
	@echo "The site is in $(BUILD)/site/index.html"

compat: $(STAMP) ## rewrite CONTRIBUTING.md's compatibility table from the last `make test` records
	$(BIN)/python -m tools.compat_table

bench: $(STAMP) ## training steps/s by steps per call (TPUEstimator, Model.fit, custom loop): build/bench/bench.md and bench.json
	$(BIN)/python -m tools.bench --out $(BUILD)/bench

bench-current: $(CURRENT_STAMP) ## the same benchmark in the current lane (Keras 3, no TPUEstimator): build/bench-current/
	$(CURRENT_BIN)/python -m tools.bench --out $(BUILD)/bench-current

# What Keras 3 needs that the lent GPU machine's image (Python 3.12, JAX with CUDA) lacks, at the
# current lock's versions: tools/device_run.py's docstring has the command that runs there.
DEVICE_WHEELS := keras namex optree

device-wheels: $(UV_STAMP) ## wheels for notebook 11 on the lent GPU machine (tools/device_run.py), in .whl/
	$(TOOLS_VENV)/bin/python -m pip download -q --no-deps --only-binary=:all: -d .whl \
	  --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
	  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	  $(foreach p,$(DEVICE_WHEELS),$(shell grep -m1 '^$(p)==' requirements-current.txt | cut -d' ' -f1))

set-repository: $(STAMP) ## point Colab links at another GitHub repository: SLUG=owner/name
	$(BIN)/python -m tools.set_repository $(SLUG)

clean: ## remove build outputs (keeps the virtual environment)
	rm -rf $(BUILD)
