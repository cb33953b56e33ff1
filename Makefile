# Two entry points: `make run` and `make test`. Both create .venv when missing and
# reinstall only when a requirements file changed (the stamp files record that).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
DEV_STAMP := $(VENV)/.dev-installed

.PHONY: run test bench clean

$(PY):
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  echo "python3 -m venv failed; installing Debian's python3-venv"; \
	  rm -rf $(VENV); apt-get update -qq && apt-get install -y -qq python3-venv && \
	  $(PYTHON) -m venv $(VENV); }

$(DEV_STAMP): requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	@touch $@

run:
	@echo "The app is not built yet (it comes with the dashboard issue)." >&2; exit 1

test: $(DEV_STAMP)
	$(PY) -m pytest

bench: $(DEV_STAMP)
	$(PY) bench/bench_core.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
