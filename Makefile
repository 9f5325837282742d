# perfsuite: two commands on a fresh Linux machine with Python 3.10+ and make.
#   make bench   set up .venv on first use, run the benches at default scale,
#                save a baseline and compare with the previous saved run
#   make test    set up .venv on first use, lint, type-check and run the tests
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SCALE  ?= default
PYTEST_ARGS ?=
EXTRAS ?= all,dev
comma  := ,
# one stamp per set of extras, so `make setup EXTRAS=all,dev,cuda` installs them after any earlier make
STAMP  := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: bench smoke test tests lint typecheck actionlint setup clean-venv pytest-benchmark-suite

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[$(EXTRAS)]'
	@touch $@

setup: $(STAMP)

bench: $(STAMP)
	$(BIN)/pytest benches --perf-scale=$(SCALE) --benchmark-autosave --benchmark-compare \
		--perf-report=reports/latest $(PYTEST_ARGS)

smoke: $(STAMP)
	$(BIN)/pytest benches --perf-scale=smoke $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

actionlint: $(STAMP)
	$(BIN)/actionlint .github/workflows/*.yml

tests: $(STAMP)
	$(BIN)/pytest tests $(PYTEST_ARGS)

# Lint, types, workflows, the plugin's tests and every bench at smoke scale, in one pytest run.
test: lint typecheck actionlint
	$(BIN)/pytest tests benches --perf-scale=smoke $(PYTEST_ARGS)

# pytest-benchmark's own test suite in two venvs (without, with perfsuite), in
# $XDG_CACHE_HOME/perfsuite/pytest-benchmark-suite; fails if perfsuite changes an outcome.
# Slow (two venvs, the suite twice): not part of `make test`.
pytest-benchmark-suite: $(STAMP)
	$(BIN)/python tools/pytest_benchmark_suite.py

clean-venv:
	rm -rf $(VENV)
