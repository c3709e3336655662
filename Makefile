# Overseer — the commands of CONTRACT.md. Everything installs into .venv.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test test-unit test-integration bench lint fmt typecheck clean install system-deps

$(PY):
	$(PYTHON) -m venv $(VENV)

# shell.run runs in a bubblewrap jail (docs/executor.md): Debian's bubblewrap, installed only when bwrap is missing.
system-deps:
	@command -v bwrap >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap; }

# Reinstall when the project's metadata changes.
$(STAMP): $(PY) pyproject.toml setup.py | system-deps
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet -e '.[dev,peers]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/overseer up

# Every tier that needs no Docker engine: unit, integration, e2e.
test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$status

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

test-integration: $(STAMP)
	$(PY) -m pytest -q tests/integration tests/e2e

bench: $(STAMP)
	$(PY) bench/run.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck

# mypy does not run setuptools' editable finder: give it the `overseer` namespace as symlinks.
typecheck: $(STAMP)
	@rm -rf .mypy-src && mkdir -p .mypy-src/overseer
	@ln -s ../../libs/events .mypy-src/overseer/events && ln -s ../../libs/cli .mypy-src/overseer/cli
	@for s in reasoning executor col firewall observer gateway; do ln -s ../../services/$$s .mypy-src/overseer/$$s; done
	cd .mypy-src && ../$(PY) -m mypy --config-file ../pyproject.toml -p overseer.events -p overseer.cli \
		-p overseer.reasoning -p overseer.firewall -p overseer.executor -p overseer.observer -p overseer.col \
		-p overseer.gateway

fmt: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) .overseer .pytest_cache .mypy_cache .ruff_cache .mypy-src
