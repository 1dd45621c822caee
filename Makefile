# Every target bootstraps the virtual environment it needs; a second run reinstalls nothing.
# `make help` lists the targets.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BUILD := build
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help run test test-fast lint record set-repository clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 18

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { \
	  echo "The reference lane needs Python 3.11 (TensorFlow 2.15 has no wheels for newer" \
	       "Pythons). Install it and run: make PYTHON=/path/to/python3.11 ..."; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing the reference lane into $(VENV) (TensorFlow 2.15.1; about a minute)..."
	$(BIN)/python -m pip install -qq --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -qq --disable-pip-version-check --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 \
	  --display-name "Python 3 (TPU migration, TF 2.15)" >/dev/null
	@touch $@

run: $(STAMP) ## execute every notebook with papermill into build/run and summarise
	$(BIN)/python -m tools.run_notebooks --out $(BUILD)/run

test: $(STAMP) lint ## the whole test suite: lint, unit, notebook conventions, papermill, nbval
	$(BIN)/python -m pytest tests notebooks --nbval --nbval-current-env \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider $(PYTEST_ARGS)

test-fast: $(STAMP) ## unit tests and notebook conventions only (no notebook execution)
	$(BIN)/python -m pytest tests -m "not notebook" -p no:cacheprovider $(PYTEST_ARGS)

lint: $(STAMP) ## ruff over helpers, tools, tests and notebooks
	$(BIN)/ruff check helpers tools tests notebooks
	$(BIN)/ruff format --check helpers tools tests

record: $(STAMP) ## re-execute the notebooks in place to refresh their committed outputs
	$(BIN)/python -m tools.record_notebooks notebooks/*.ipynb

set-repository: $(STAMP) ## point Colab links at another GitHub repository: SLUG=owner/name
	$(BIN)/python -m tools.set_repository $(SLUG)

clean: ## remove build outputs (keeps the virtual environment)
	rm -rf $(BUILD)
