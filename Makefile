# One command to run, one to test. Two hash-pinned locks (README, "Dependencies"):
# requirements.lock, what the hub needs to run, which `make run` installs; requirements-dev.lock,
# the same pins plus the test and lint tools, which `make test` installs. The installer is uv
# (hashes checked, much faster than pip: bench/README.md), itself put into the venv by pip from
# requirements-uv.lock, so nothing but Python and make is needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
UV     := $(BIN)/uv
# uv installs into this venv whichever venv, if any, the shell has activated
UV_PIP := $(UV) pip install --python $(BIN)/python
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install install-dev run test lint typecheck pytest reliability postgres lock bench clean

install: $(VENV)/.installed-run

install-dev: $(VENV)/.installed-dev

$(BIN)/python:
	@echo "==> make: creating the virtual environment $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)

$(UV): requirements-uv.lock | $(BIN)/python
	@echo "==> make: installing the installer (uv) with pip from requirements-uv.lock, hashes checked"
	$(BIN)/python -m pip install --require-hashes --no-deps -r requirements-uv.lock
	@touch $(UV)

# Each lock installs with --no-deps: the lock is the whole closure (tests/unit/test_locks.py),
# and the project itself builds with the lock's hatchling (--no-build-isolation), not one
# fetched unpinned. --compile-bytecode, as pip does: the first start does not compile, and a
# venv the hub cannot write (deploy/animahub.service, ProtectSystem=strict) never has to.
$(VENV)/.installed-%: $(UV) pyproject.toml
	@echo "==> make: installing $(LOCK) with uv, hashes checked ($(WHAT))"
	$(UV_PIP) --require-hashes --no-deps --compile-bytecode -r $(LOCK)
	@echo "==> make: installing animahub itself into $(VENV) (editable)"
	$(UV_PIP) --no-deps --no-build-isolation -e .
	@touch $@
	@echo "==> make: $(LOCK) installed"

$(VENV)/.installed-run: requirements.lock
$(VENV)/.installed-run: LOCK := requirements.lock
$(VENV)/.installed-run: WHAT := what the hub needs to run
$(VENV)/.installed-dev: requirements-dev.lock
$(VENV)/.installed-dev: LOCK := requirements-dev.lock
$(VENV)/.installed-dev: WHAT := the runtime plus the test, lint and type-check tools

run: install
	$(BIN)/animahub init --demo
	$(BIN)/animahub start

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck: install-dev
	$(BIN)/mypy

# The PostgreSQL half of the store tests needs a real server; scripts/postgres.sh starts one
# (installing the Debian package if needed) and prints its URL. The browser tests need
# Debian's Chromium; scripts/chromium.sh installs it if missing and prints its path.
pytest: install-dev
	# PASSIVE: the embedder's OpenMP threads sleep instead of spinning while they wait, which
	# on two shared cores made tests/privacy take 72 s instead of 125 s (measured once, loaded).
	OMP_WAIT_POLICY=PASSIVE ANIMAHUB_TEST_DATABASE_URL="$${ANIMAHUB_TEST_DATABASE_URL:-$$(scripts/postgres.sh)}" \
	  ANIMAHUB_CHROMIUM="$${ANIMAHUB_CHROMIUM:-$$(scripts/chromium.sh)}" \
	  $(BIN)/pytest -q $(PYTEST_ARGS)

test: lint typecheck pytest

# The crash and storm suites alone (they also run in make test); at their full sizes with
# ANIMAHUB_SUITE_SIZE=full (docs/reliability.md).
reliability: install-dev
	OMP_WAIT_POLICY=PASSIVE ANIMAHUB_TEST_DATABASE_URL="$${ANIMAHUB_TEST_DATABASE_URL:-$$(scripts/postgres.sh)}" \
	  $(BIN)/pytest -q -s tests/reliability $(PYTEST_ARGS)

postgres:
	scripts/postgres.sh

# Re-resolve the three locks (needs the network). Each keeps the pins it already has unless
# they must move: add a dependency to pyproject.toml and run `make lock`; upgrade with
# `make lock LOCK_ARGS=--upgrade` (or `--upgrade-package NAME`). The development lock is
# constrained by the runtime one, so the packages they share have the same versions and hashes.
# pyproject.toml never admits litellm 1.82.7 or 1.82.8 (tests/unit/test_locks.py checks all three).
LOCK_FLAGS := --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28
# (-q: uv would print each lock whole besides writing it.)
lock: $(UV)
	@echo "==> make: resolving requirements-uv.lock (the installer)"
	$(UV) pip compile -q --group installer $(LOCK_FLAGS) $(LOCK_ARGS) -o requirements-uv.lock
	@echo "==> make: resolving requirements.lock (runtime)"
	$(UV) pip compile -q pyproject.toml --group build $(LOCK_FLAGS) $(LOCK_ARGS) -o requirements.lock
	@echo "==> make: resolving requirements-dev.lock (development, within requirements.lock)"
	$(UV) pip compile -q pyproject.toml --extra dev -c requirements.lock $(LOCK_FLAGS) $(LOCK_ARGS) \
	  -o requirements-dev.lock
	@grep -c '==' requirements-uv.lock requirements.lock requirements-dev.lock

bench: install
	$(BIN)/python bench/hub_overhead.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
