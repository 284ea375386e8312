# zeropipe — set-up, training, tests, lint and benchmarks. Everything runs in $(VENV).
# TORCH_SPEC pins torch's version, not its build: pip takes whichever build of it its indexes
# offer (from PyPI on Linux x86-64 that is the multi-GB CUDA build; on macOS and Windows the CPU
# one). TORCH_INDEX picks the build: PyTorch's wheel index for it, which the torch step then reads
# instead of pip's own indexes (the rest installs as before). Empty (the default): pip's own.
#   make install TORCH_INDEX=https://download.pytorch.org/whl/cpu     # the small CPU wheel
#   make install TORCH_INDEX=https://download.pytorch.org/whl/cu128   # CUDA 12.8
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
CONFIG ?= configs/cartpole_muzero.yaml
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install train test test-all lint format docs docs-serve bench bench-learning bench-gpu clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_SPEC)"$(if $(TORCH_INDEX), --index-url "$(TORCH_INDEX)")
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

train: $(STAMP)
	$(VENV)/bin/zeropipe train $(CONFIG)

# The fast path (CI's): every test not marked slow. test-all adds the slow end-to-end tests
# (every type in both pipelines, Ray faults, the long Atari traces); about 1.5× as long.
test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" --durations=15

test-all: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

format: $(STAMP)
	$(VENV)/bin/ruff check --fix src tests benchmarks
	$(VENV)/bin/ruff format src tests benchmarks

# The documentation site (mkdocs + material, source in docs/, config mkdocs.yml) into site/;
# --strict turns a broken link or a missing page into an error. The docs extra is in dev, so an
# install made before it was added gets it here.
docs: $(STAMP)
	$(PY) -c "import mkdocs, material, mkdocstrings" 2>/dev/null || $(PY) -m pip install --quiet -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

docs-serve: docs
	$(VENV)/bin/mkdocs serve

bench: $(STAMP)
	$(PY) -m benchmarks

# Configs x seeds judged by their eval curves (long: tens of minutes on 2 cores).
bench-learning: $(STAMP)
	$(PY) -m benchmarks learning

# Pong sync/async table on a GPU machine: CUDA torch in build/venv-gpu, GPU-sized models
# (from TORCH_INDEX when set, else the script's CUDA 12.8 index).
bench-gpu:
	TORCH_SPEC="$(TORCH_SPEC)" $(if $(TORCH_INDEX),TORCH_INDEX="$(TORCH_INDEX)" )benchmarks/gpu_pong.sh

# numba's on-disk cache keys a kernel by its own file only: after editing mcts/ kernels that are
# inlined into others (selection.py, backup.py, qtransform.py; models/compiled_step.py, inlined
# into algos/compiled_search.py), `make clean` drops stale builds.
clean:
	rm -rf $(VENV) runs site .pytest_cache .ruff_cache
	find src -name '*.nbi' -o -name '*.nbc' | xargs rm -f
