# rulesgen: `make render` renders the bundled catalog; `make test` proves it with promtool and vmalert.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: render test check bench tools fixtures clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

tools:
	./scripts/get-tools.sh

render: $(STAMP)
	$(BIN)/rulesgen render

check: $(STAMP)
	$(BIN)/rulesgen check

test: $(STAMP) tools
	PATH="$(CURDIR)/.tools/bin:$$PATH" $(BIN)/python -m pytest

bench: $(STAMP) tools
	PATH="$(CURDIR)/.tools/bin:$$PATH" $(BIN)/python benchmarks/run.py

fixtures: $(STAMP)
	$(BIN)/python fixtures/build_scenarios.py

clean:
	rm -rf $(VENV) .tools .pytest_cache .hypothesis
