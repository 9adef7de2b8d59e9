# The two commands of the README. Both create .venv when it is missing and install the
# project into it; torch is installed first, pinned, so pip never resolves a CUDA build
# (pyproject.toml only asks for torch >= the oldest tested release). Development and CI get
# every extra (train, images, graph, text, umap, dev, docs); see README "Install" for users.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench test-oldest-torch docs docs-check

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[all]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/contrastkit demo
	rm -rf runs/demo
	$(VENV)/bin/contrastkit compare --config configs/demo.yaml --no-progress

test: $(STAMP)
	$(VENV)/bin/ruff check contrastkit tests benchmarks
	$(VENV)/bin/ruff format --check contrastkit tests benchmarks
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

# The documentation site (mkdocs.yml), built offline into site/ in strict mode: a warning,
# a broken link or a missing anchor fails it. docs-check then serves the built site and
# takes screenshots with headless Chromium into site-shots/ (apt-get install chromium).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-check: docs
	$(PY) docsite/check_site.py --site site --out site-shots

# Peers for the speed benchmark, without their dependencies (lightly's would pull torchvision).
bench: $(STAMP)
	$(PY) -m pip install --quiet --no-deps pytorch-metric-learning==2.9.0 lightly==1.6.0
	$(PY) benchmarks/loss_speed.py
	$(PY) benchmarks/tiled_memory.py

# The oldest torch that pyproject.toml accepts (its lower bound), in a venv of its own: PyPI's
# CUDA build (a few GB; runs on CPU). Checks that `pip install .` keeps that torch and runs the
# loss, training and packaging tests against it. Not part of `make test`.
OLDEST_TORCH := 2.3.1
OLD_VENV := .venv-oldest-torch
test-oldest-torch:
	test -x $(OLD_VENV)/bin/python || $(PYTHON) -m venv $(OLD_VENV)
	$(OLD_VENV)/bin/python -m pip install --quiet torch==$(OLDEST_TORCH)
	$(OLD_VENV)/bin/python -m pip install --quiet ".[train,dev]"
	$(OLD_VENV)/bin/python -c "import torch; v = torch.__version__; print('torch', v); \
		assert v.split('+')[0] == '$(OLDEST_TORCH)', 'pip replaced torch'"
	OMP_NUM_THREADS=1 $(OLD_VENV)/bin/python -m pytest tests/losses tests/training tests/packaging
