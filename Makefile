# One command to run, one to test. Everything installs from requirements.lock (hashes checked).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install run test lint typecheck pytest reliability postgres lock bench clean

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $(STAMP)

run: install
	$(BIN)/animahub init --demo
	$(BIN)/animahub start

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck: install
	$(BIN)/mypy

# The PostgreSQL half of the store tests needs a real server; scripts/postgres.sh starts one
# (installing the Debian package if needed) and prints its URL. The browser tests need
# Debian's Chromium; scripts/chromium.sh installs it if missing and prints its path.
pytest: install
	# PASSIVE: the embedder's OpenMP threads sleep instead of spinning while they wait, which
	# on two shared cores made tests/privacy take 72 s instead of 125 s (measured once, loaded).
	OMP_WAIT_POLICY=PASSIVE ANIMAHUB_TEST_DATABASE_URL="$${ANIMAHUB_TEST_DATABASE_URL:-$$(scripts/postgres.sh)}" \
	  ANIMAHUB_CHROMIUM="$${ANIMAHUB_CHROMIUM:-$$(scripts/chromium.sh)}" \
	  $(BIN)/pytest -q $(PYTEST_ARGS)

test: lint typecheck pytest

# The crash and storm suites alone (they also run in make test); at their full sizes with
# ANIMAHUB_SUITE_SIZE=full (docs/reliability.md).
reliability: install
	OMP_WAIT_POLICY=PASSIVE ANIMAHUB_TEST_DATABASE_URL="$${ANIMAHUB_TEST_DATABASE_URL:-$$(scripts/postgres.sh)}" \
	  $(BIN)/pytest -q -s tests/reliability $(PYTEST_ARGS)

postgres:
	scripts/postgres.sh

# Re-resolve the lock file (needs the network); never admits litellm 1.82.7 or 1.82.8.
lock:
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 -o requirements.lock

bench: install
	$(BIN)/python bench/hub_overhead.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
