# Two commands do all the set-up: `make run` and `make test`.
# The venv is (re)built only when pyproject.toml or constraints.txt changed.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ddp-viz-installed

.PHONY: setup run test test-frameworks mutants lint bench clean

# pip byte-compiles every installed file here, once: with PYTHONDONTWRITEBYTECODE set (as it
# is on CI) nothing else would, and every rank would compile torch's imports from source.
$(STAMP): pyproject.toml setup.py constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/ddp-viz $(ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# Three workers on two cores: a real-run test spends much of its time waiting on its rank
# processes (two workers kept the cores 75% busy: 602 s; three, 579 s, 2026-12-04), and
# TEST_WORKERS=0 runs in one process, for pdb. worksteal: a worker that is done takes the
# tail of another's share (tests/conftest.py deals the shares out evenly).
TEST_WORKERS ?= 3

# The package's own bytecode is written once before the run (into the ignored __pycache__
# folders): with PYTHONDONTWRITEBYTECODE set, as on CI, every process the suite starts (the
# CLI, engines, watched ranks: hundreds) compiled the modules it imports from source, about a
# quarter of a CPU second each. Python recompiles a module whose source is newer.
test: lint
	$(BIN)/python -m compileall -q src
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# Lightning and Accelerate, watched unchanged: an optional extra (a minute to install), so
# `make test` stays within its ten minutes; CI runs this after it (.ci/run). The import
# check makes a missing package an error here, where the tests alone would skip.
FW_STAMP := $(VENV)/.ddp-viz-frameworks

$(FW_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test,frameworks]'
	$(BIN)/python -c "import lightning, accelerate"
	@touch $(FW_STAMP)

test-frameworks: $(FW_STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -p no:cacheprovider tests/watch/test_watch_frameworks.py

# Mutation testing (docs/internals.md, "Tests"): `make mutants PATHS=src/ddp_viz/model/quiz.py`
# runs the mutants of what a change touched (a file or a folder) and shows the survivors;
# `make mutants` reruns every module whose committed figure (tests/mutation/scores.json) is
# stale and fails when one falls. ARGS=--update records the figures of what ran.
MUT_STAMP := $(VENV)/.ddp-viz-mutants

$(MUT_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test,mutants]'
	@touch $(MUT_STAMP)

mutants: $(MUT_STAMP)
	$(BIN)/python tools/mutants.py $(PATHS) $(ARGS)

bench: setup
	$(BIN)/ddp-viz bench $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache src/*.egg-info mutants
