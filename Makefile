# rewardkit: `make demo` runs the main job, `make test` runs every test (both set up first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# every distribution of the repo, installed editable into one environment
DISTS  := $(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml sandbox/pyproject.toml trainers/pyproject.toml tests/thirdparty/*/pyproject.toml))
STAMP  := $(VENV)/.installed
# optional extras a distribution needs for its tests
EXTRAS_rewardkit-gui := [generate]

.PHONY: setup test demo lint typecheck bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml $(addsuffix /pyproject.toml,$(DISTS)) Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[math,test]" $(foreach d,$(DISTS),-e "$(d)$(EXTRAS_$(notdir $(d)))")
	touch $(STAMP)

test: setup
	$(BIN)/python -m pytest -q

demo: setup
	@mkdir -p runs/demo
	@for cfg in examples/*.yaml; do \
	  name=$$(basename $$cfg .yaml); data=examples/data/$$name.jsonl; \
	  [ -f $$data ] || continue; \
	  echo "== $$cfg"; \
	  $(BIN)/rewardkit score $$cfg $$data --out runs/demo/$$name.scored.jsonl || exit $$?; \
	done

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: setup
	$(BIN)/python benchmarks/bench_core.py

clean:
	rm -rf $(VENV) runs
