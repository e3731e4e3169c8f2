# The only entry points: `make run` and `make test` (work with just Python + pip).
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
PIP_INSTALL = $(PIP) install -q --use-pep517
# torch==2.13.0 resolves to a local CPU wheel on our machines; a bare `pip install torch`
# would pull a multi-GB CUDA build, so torch is only ever installed pinned and only if missing.
TORCH_PIN ?= torch==2.13.0

.PHONY: install torch run test

# Bytecode for tilec's own modules, as a wheel install writes it (this machine's PYTHONDONTWRITEBYTECODE=1
# would otherwise have every process compile ~800 KB of source: ~0.2 s of a cold kernel build).
COMPILE_BYTECODE = $(PYTHON) -m compileall -q tilec dialects passes targets

install:
	$(PIP_INSTALL) -e .
	$(COMPILE_BYTECODE)

torch:
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP_INSTALL) "$(TORCH_PIN)"

run: torch install
	$(PYTHON) examples/run_examples.py

test: torch
	$(PIP_INSTALL) -e ".[test]"
	$(COMPILE_BYTECODE)
	$(PYTHON) -m pytest -n 2 -q
