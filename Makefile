# The two commands a new machine needs: `make demo` (the main job) and `make test` (the suite).
# Both create the virtual environment in .venv on first use; only the package registries are used.
# `make demo` installs sdckit with its core dependencies only (the report needs nothing else);
# `make test` adds the test extras (protocol services, frames, formats, pytest, playwright, ruff, mypy),
# and first runs the TypeScript device SDK's tests (clients/js: `npm ci` once, then `npm test`, which
# also builds the browser bundle the Chromium test loads); without npm they are skipped, saying so.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_STAMP := $(VENV)/.sdckit-demo
STAMP := $(VENV)/.sdckit-test
OUT ?= out
JOBS ?= 2

JS := clients/js

.PHONY: demo demo-check test js-test lint bench install clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP) $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/sdckit run examples/pipelines/adult.yaml   # writes out/adult-protected.parquet and out/adult-report.html

# `make demo` in a clean clone of the committed HEAD with a core-only venv in a temporary folder,
# then the report's figures checked (what CI runs first: .ci/run)
demo-check:
	.ci/demo-check

test: $(STAMP) js-test
	$(PY) -m pytest -n $(JOBS) -q

js-test:
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "make test: npm not found: skipping the TypeScript SDK's tests (clients/js; install Node.js >= 20 and npm)"; \
	else \
	  cd $(JS) && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund; } && npm test; \
	fi

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache .mypy_cache .ruff_cache $(JS)/node_modules $(JS)/dist $(JS)/build
