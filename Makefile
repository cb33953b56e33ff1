# Two entry points: `make run` and `make test`. Both create .venv when missing and install
# the project itself into it, editable, with the extras they need (pyproject.toml lists every
# dependency) at the versions requirements.txt pins (`make lock` writes it); they reinstall only
# when pyproject.toml or requirements.txt changed (the stamp files record that).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
DEV_STAMP := $(VENV)/.dev-installed
RUN_STAMP := $(VENV)/.run-installed
PORT   ?= 8501
CHROMIUM := /usr/bin/chromium

.PHONY: run test test-fast docs bench bench-large bench-app results lock clean

# Python may write its bytecode caches (__pycache__/, ignored by git) even where the environment
# says not to: without them every test run compiles the package and re-rewrites the asserts of
# every test module again (about 20 s of the quick loop on 2 cores).
unexport PYTHONDONTWRITEBYTECODE

$(PY):
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  echo "python3 -m venv failed; installing Debian's python3-venv"; \
	  rm -rf $(VENV); apt-get update -qq && apt-get install -y -qq python3-venv && \
	  $(PYTHON) -m venv $(VENV); }

# The tests run on the pinned versions of the app's dependency set (-c: pins, nothing more);
# the test-only tools and Dask are not pinned.
$(DEV_STAMP): pyproject.toml requirements.txt | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c requirements.txt -e '.[app,dask,test]'
	@touch $@

$(RUN_STAMP): pyproject.toml requirements.txt | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -e '.[app]'
	@touch $@

# The browser tests drive Debian's chromium (never `playwright install`: it downloads a browser).
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && apt-get install -y -qq chromium; \
	else \
	  echo "The browser tests need Debian's chromium; run: sudo apt-get update && sudo apt-get install -y chromium" >&2; \
	fi

# `calibdash app` runs `streamlit run` of the package's calibdash_app/main.py on 127.0.0.1 (calibdash/cli.py: app_command).
run: $(RUN_STAMP)
	$(VENV)/bin/calibdash app --port $(PORT)

# Two passes, so that the whole suite fits CI's 90 minutes on 2 cores: everything but the browser
# tests on two workers (pytest-xdist; --dist loadfile as in test-fast), then the browser tests
# alone, each starting a real server and chromium, with the machine to themselves as before (their
# waits were set on an otherwise idle machine). Both passes always run; either failing fails.
test: $(DEV_STAMP) | $(CHROMIUM)
	@status=0; \
	$(PY) -m pytest -m "not browser" -n 2 --dist loadfile || status=$$?; \
	$(PY) -m pytest -m browser || status=$$?; \
	exit $$status

# The quick loop (under a minute on 2 cores): no test marked slow, no browser test, on every
# core (pytest-xdist; -n auto: one worker per core); --dist loadfile keeps a module's tests on one
# worker, so a module-scoped fixture (a validation, an evaluation) is computed once, not once a worker.
test-fast: $(DEV_STAMP)
	$(PY) -m pytest -q -m "not slow and not browser" -n auto --dist loadfile

# The API reference, built offline from the docstrings into docs/_build/html.
docs: $(RUN_STAMP)
	$(PY) -m pip install --quiet -e '.[docs]'
	$(PY) -m sphinx -W --keep-going -b html docs/api docs/_build/html

# Benchmarks write their figures to BENCHMARKS.md; run them on an otherwise idle machine.
bench: $(DEV_STAMP)
	$(PY) bench/bench_core.py
	$(PY) bench/bench_loading.py
	$(PY) bench/bench_literature.py
	$(PY) bench/bench_clinical.py
	$(PY) bench/bench_pipeline.py fold cifar100 scaling

bench-large: $(DEV_STAMP)
	$(PY) bench/bench_pipeline.py large

# Regenerates the tables of docs/results.md (a few minutes).
results: $(DEV_STAMP)
	$(PY) bench/results_tables.py

bench-app: $(DEV_STAMP) | $(CHROMIUM)
	$(PY) bench/bench_app.py

# requirements.txt: exact pins of the app's dependency set as installed in .venv. After changing
# a dependency in pyproject.toml: make lock (installs without the old pins, keeping what still
# fits), then make test; tests/test_package.py checks the pins against pyproject and the venv.
lock: | $(PY)
	$(PY) -m pip install --quiet -e '.[app,dask,test]'
	$(PY) tools/lock_requirements.py
	@touch $(DEV_STAMP)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build calibdash.egg-info
