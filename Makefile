# The two commands a new machine needs: `make demo` (the main job) and `make test` (the suite).
# Both create the virtual environment in .venv on first use; only the package registries are used.
# `make demo` installs sdckit with its core dependencies only (the report needs nothing else);
# `make test` adds the test extras (protocol services, frames, formats, pytest, playwright, ruff, mypy).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_STAMP := $(VENV)/.sdckit-demo
STAMP := $(VENV)/.sdckit-test
OUT ?= out
JOBS ?= 2

.PHONY: demo test lint bench install clean

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

test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) -q

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache .mypy_cache .ruff_cache
