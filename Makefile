# rewardkit: `make demo` runs the main job, `make test` runs every test (both set up first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# every distribution of the repo, installed editable into one environment
DISTS  := $(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml sandbox/pyproject.toml trainers/pyproject.toml tests/thirdparty/*/pyproject.toml))
STAMP  := $(VENV)/.installed
# optional extras a distribution needs for its tests
EXTRAS_rewardkit-gui := [generate]
EXTRAS_rewardkit-judge := [model,http]
EXTRAS_trainers      := [trl,sagemaker,test]
# the CPU build of torch lies on disk; pinned first so nothing pulls a CUDA build
TORCH  := torch==2.13.0

.PHONY: setup backends test demo lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml $(addsuffix /pyproject.toml,$(DISTS)) Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q "$(TORCH)" -e ".[math,cjk,tokens,test]" \
	  $(foreach d,$(DISTS),-e "$(d)$(EXTRAS_$(notdir $(d)))")
	touch $(STAMP)

# ms-swift and verl pin their own trl / transformers: each gets its own venv for its tests
backends: setup
	PYTHON=$(PYTHON) trainers/scripts/make_backend_venvs.sh swift verl

test: setup backends
	$(BIN)/python -m pytest -q

# the main job: GRPO with TRL on CPU on the embedded default (tiny model, generated data),
# reward curves in runs/quickstart/, then base vs trained evaluation
demo: setup
	$(BIN)/rewardkit train examples/quickstart.yaml
	$(BIN)/rewardkit eval examples/quickstart.yaml

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: setup
	$(BIN)/python benchmarks/bench_core.py
	$(BIN)/python benchmarks/bench_math.py
	$(BIN)/python benchmarks/bench_sandbox.py

clean:
	rm -rf $(VENV) .venv-swift .venv-verl runs
