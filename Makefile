# The two commands of the README. Both create .venv when it is missing and install the
# project into it; torch is installed first, pinned, so pip never resolves a CUDA build.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/contrastkit demo

test: $(STAMP)
	$(VENV)/bin/ruff check contrastkit tests benchmarks
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/loss_speed.py
