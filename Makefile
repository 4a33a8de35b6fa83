# novapod make targets. `make synth` and `make test` do their own set-up on a fresh
# machine (virtualenv, pinned Python packages, the pinned CDK CLI) and are no-ops
# for set-up on a second run.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONFIG ?= config/default.yaml

# jsii warns on every run under Node.js 20, which the CDK still supports.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_VERSION_CHECK := 1
# Which config `make synth` reads: CONFIG=FILE on the command line wins over an exported
# NOVAPOD_CONFIG (docs/deploying.md exports it); without CONFIG=, NOVAPOD_CONFIG, else the
# default. Both given on the command line and different: stop, naming both.
ifeq ($(origin CONFIG),command line)
  ifeq ($(origin NOVAPOD_CONFIG),command line)
    ifneq ($(CONFIG),$(NOVAPOD_CONFIG))
      $(error CONFIG=$(CONFIG) and NOVAPOD_CONFIG=$(NOVAPOD_CONFIG) name different configs; give one of them)
    endif
  endif
  override NOVAPOD_CONFIG := $(CONFIG)
endif
export NOVAPOD_CONFIG ?= $(CONFIG)

.PHONY: help setup synth destroy test lint typecheck unit bench bench-suite mutation clean client client-tools client-wheel upstream-facts pipeline-synth pipeline-review compliance docs

help:
	@echo "make synth   synthesize $(NOVAPOD_CONFIG) with the pinned CDK CLI into cdk.out/"
	@echo "make destroy STACK=\"NAME ...\"  cdk destroy --exclusively of those stacks of $(NOVAPOD_CONFIG) (exit 2 if one is not)"
	@echo "make test    ruff, mypy and pytest"
	@echo "make bench   synthesis and planner benchmarks (not part of the tests)"
	@echo "make bench-suite  wall time of make test, step by step, and the 20 slowest tests"
	@echo "make docs    the documentation site (MkDocs, --strict) into site/"
	@echo "make compliance  checkov (pinned, in $(COMPLIANCE_VENV)/) over every shipped config's templates"
	@echo "make mutation  mutation score of the purchase path (not part of make test)"
	@echo "make pipeline-synth PIPELINE=FILE  synthesize the CDK Pipelines app (pipeline_app.py) into cdk.out/"
	@echo "make client  the HyperPod CLI for \`novapod launch --run\` in $(CLIENT_VENV)/ (needs helm, aws, and GitHub or CLIENT_WHEEL=FILE)"
	@echo "make client-wheel  build the pinned HyperPod CLI once into $(CLIENT_WHEEL_DIR)/ (needs GitHub)"
	@echo "make upstream-facts  regenerate novapod/data/nova_upstream.yaml from the pinned commits (needs GitHub)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=23"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

setup: $(VENV)/.installed node_modules/.installed

synth: setup
	rm -rf cdk.out  # only this config's templates, none left from an earlier synth
	PATH="$(CURDIR)/$(BIN):$$PATH" npx --no-install cdk synth --quiet -c config=$(NOVAPOD_CONFIG)
	@echo "templates written to cdk.out/"

# `cdk destroy --exclusively` of the stacks STACK names (names or wildcards) of the config
# synth reads, through tools/cdk_destroy.py: it stops with exit 2 and a sentence when a
# name selects none of that config's stacks, where `cdk destroy` alone says "No stacks
# match" and exits 0. The CLI asks before it deletes anything.
STACK ?=
destroy: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python tools/cdk_destroy.py --config $(NOVAPOD_CONFIG) $(foreach stack,$(STACK),'$(stack)')

# The CDK Pipelines app (pipeline_app.py): the pipeline stack and a stage per environment
# file of PIPELINE, as the pipeline's own synth step builds it (novapod/stacks/pipeline.py).
PIPELINE ?= config/pipeline.example.yaml
CDK_PIPELINE := PATH="$(CURDIR)/$(BIN):$$PATH" npx --no-install cdk synth --quiet --no-lookups \
	-a "python3 pipeline_app.py" -c pipeline=$(PIPELINE)

pipeline-synth: setup
	rm -rf cdk.out
	$(CDK_PIPELINE)
	@echo "templates written to cdk.out/ (each stage's in cdk.out/assembly-*)"

# In the pipeline's synth step, after pipeline-synth: `novapod review` of each stage, this
# commit (cdk.out) against its parent (synthesized from a git worktree of HEAD~1 into
# review-base/), one review/<stage>.md each, also printed to the log. Without a parent,
# or when the parent does not synthesize (e.g. it predates the pipeline), the base is
# empty and the review reports everything as added. The approvals point at these files.
pipeline-review: setup
	rm -rf review review-base && mkdir -p review review-base/cdk.out
	if git rev-parse --quiet --verify HEAD~1 > /dev/null \
	  && git worktree add --detach review-base/src HEAD~1 > /dev/null \
	  && ln -s "$(CURDIR)/node_modules" review-base/src/node_modules \
	  && (cd review-base/src && $(CDK_PIPELINE) -o "$(CURDIR)/review-base/cdk.out"); then \
	  echo "review base: $$(git rev-parse HEAD~1)"; \
	else \
	  echo "review base: none (no parent commit, or it does not synthesize)"; \
	  rm -rf review-base/cdk.out && mkdir -p review-base/cdk.out; \
	fi
	for head in cdk.out/assembly-*/; do \
	  assembly=$$(basename "$$head"); stage=$${assembly##*-pipeline-}; \
	  mkdir -p "review-base/cdk.out/$$assembly"; \
	  $(BIN)/novapod review --base "review-base/cdk.out/$$assembly" --head "$$head" \
	    --format markdown > "review/$$stage.md"; \
	  cat "review/$$stage.md"; \
	done
	-git worktree remove --force review-base/src

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed
	$(BIN)/mypy

# On every core (pytest-xdist); the workers share synthesized configs through the disk
# cache of tests/synth_cache.py (.cache/synth, keyed by the sources), so a rerun
# synthesizes only what changed. PYTEST_ARGS adds options (e.g. PYTEST_ARGS="-n 0").
PYTEST_ARGS ?=
unit: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q -n auto $(PYTEST_ARGS)

test: lint typecheck unit

bench: setup
	$(BIN)/python benchmarks/synth_time.py
	$(BIN)/python benchmarks/deploy_critical_path.py
	$(BIN)/python benchmarks/plan_time.py

# The wall time of what `make test` runs, step by step, and the 20 slowest tests (goal:
# 180 s warm). COLD=1 empties the synthesis cache first, as on a fresh clone.
bench-suite: setup
	$(BIN)/python benchmarks/suite_time.py $(if $(COLD),--cold)

# mutmut mutates the modules listed in pyproject.toml [tool.mutmut] inside mutants/ and,
# per mutant, runs the fast tests that call the mutated function; results are cached in
# mutants/, so a second run only checks what changed. MUTMUT_ARGS selects mutants, e.g.
# MUTMUT_ARGS='"novapod.capacity.naming*"'. Survivors: killed by a test or listed, with the reason,
# in tests/mutation_equivalents.md.
MUTATION_WORKERS ?= 2
MUTMUT_ARGS ?=
mutation: setup
	mkdir -p mutants
	@start=$$(date +%s); \
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/mutmut run --max-children $(MUTATION_WORKERS) $(MUTMUT_ARGS) \
	  > mutants/run.log 2>&1 || { tail -c 3000 mutants/run.log; exit 1; }; \
	echo "mutmut run took $$(( $$(date +%s) - start )) s (progress in mutants/run.log)"
	$(BIN)/python benchmarks/mutation_report.py

# The HyperPod CLI, the documented launcher of Nova recipes on HyperPod: package `hyperpod`
# from branch release_v2 of aws/sagemaker-hyperpod-cli (not on PyPI), pinned to the commit
# our reference describes, in its own virtual environment (it pins click, kubernetes,
# hydra-core, awscli ... which must not meet novapod's). `novapod launch --run` finds it
# there and puts its bin/ first on PATH (the CLI runs `aws` and the recipes launcher's
# python3). The recipes it launches (aws/sagemaker-hyperpod-recipes, a git submodule of
# the CLI) are pinned too, to the commit the Nova catalog and novapod/data/
# nova_upstream.yaml were written from: the CLI's setup.py runs `git submodule update
# --remote`, which would take the tip of branch release-2.0.0 (and silently keep the
# CLI's older recorded commit when that fetch fails), so the build checks the recipes
# out itself, tells git not to update them, and refuses a build whose recipes are not
# the pinned commit. `make client-wheel` builds the client once into
# $(CLIENT_WHEEL_DIR)/ (needs GitHub); `make client CLIENT_WHEEL=FILE` installs from that
# file on a machine without GitHub access. Not part of `make setup` or CI. The charts
# are installed with `helm` (Helm 3 or 4: the scientists' Role grants what both need) and
# connect-cluster runs `aws`: both must be on PATH.
CLIENT_VENV := .venv-client
CLIENT_PYTHON ?= python3.11
HYPERPOD_CLI_COMMIT := abcdc77b3e4ca160874021c6615baf0dbb96c69b
HYPERPOD_RECIPES_COMMIT := 263199555b2e1f8eb9b17459892e440f3242b5d9
# The Kubeflow training operator the chart at HYPERPOD_CLI_COMMIT runs (its image tag
# v1-855e096 in charts/training-operators/values.yaml); read by make upstream-facts.
TRAINING_OPERATOR_COMMIT := 855e0960668b34992ba4e1fd5914a08a3362cfb1
HYPERPOD_CLI_GIT ?= https://github.com/aws/sagemaker-hyperpod-cli.git
HYPERPOD_RECIPES_GIT ?= https://github.com/aws/sagemaker-hyperpod-recipes.git
RECIPES_SUBMODULE := src/hyperpod_cli/sagemaker_hyperpod_recipes
CLIENT_BUILD := build/client
CLIENT_WHEEL_DIR := dist-client/$(HYPERPOD_CLI_COMMIT)-$(HYPERPOD_RECIPES_COMMIT)
CLIENT_WHEEL ?= $(CLIENT_WHEEL_DIR)/hyperpod-2.0.0-py3-none-any.whl
# Written into the recipes before the build; the install checks it (a wheel built
# from other pins is refused).
RECIPES_MARK := NOVAPOD_RECIPES_COMMIT
CLIENT_STAMP := $(CLIENT_VENV)/.installed-$(HYPERPOD_CLI_COMMIT)-$(HYPERPOD_RECIPES_COMMIT)

client: client-tools $(CLIENT_STAMP)

client-tools:
	@command -v helm > /dev/null || { echo "make client: helm is not on PATH; install Helm 3 or 4 (https://helm.sh/docs/intro/install/), which the recipes launcher runs."; exit 1; }
	@command -v aws > /dev/null || { echo "make client: the aws CLI is not on PATH; install it (https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html), which hyperpod connect-cluster runs."; exit 1; }
	@case "$$(helm version --template '{{.Version}}' 2> /dev/null)" in v3.*|v4.*) ;; \
	  *) echo "make client: helm $$(helm version --template '{{.Version}}' 2> /dev/null) is neither Helm 3 nor Helm 4, the versions novapod/data/nova_upstream.yaml grants verbs for; install one of them."; exit 1;; esac

$(CLIENT_STAMP): $(CLIENT_WHEEL)
	rm -rf $(CLIENT_VENV)
	$(CLIENT_PYTHON) -m venv $(CLIENT_VENV)
	$(CLIENT_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=23"
	$(CLIENT_VENV)/bin/python -m pip install --disable-pip-version-check "$(CLIENT_WHEEL)"
	@test "$$(cat $(CLIENT_VENV)/$(RECIPES_MARK) 2> /dev/null)" = $(HYPERPOD_RECIPES_COMMIT) \
	  || { echo "make client: $(CLIENT_WHEEL) holds recipes $$(cat $(CLIENT_VENV)/$(RECIPES_MARK) 2> /dev/null || echo 'of unknown commit'), not $(HYPERPOD_RECIPES_COMMIT); build it with make client-wheel at this novapod commit."; rm -rf $(CLIENT_VENV); exit 1; }
	$(CLIENT_VENV)/bin/hyperpod --help > /dev/null
	touch $@

client-wheel: $(CLIENT_WHEEL_DIR)/hyperpod-2.0.0-py3-none-any.whl
	@echo "copy $< to a machine without GitHub access and run make client CLIENT_WHEEL=<that file> there"

# The CLI at its commit, the recipes submodule at ours (its own submodules, the NeMo
# launcher main.py imports, at the commits it records), `update = none` so setup.py's
# `git submodule update --remote` leaves them, then a wheel; the recipes commit is
# checked before and after the build.
$(CLIENT_WHEEL_DIR)/hyperpod-2.0.0-py3-none-any.whl:
	rm -rf $(CLIENT_BUILD) && mkdir -p $(CLIENT_BUILD) $(CLIENT_WHEEL_DIR)
	git init --quiet $(CLIENT_BUILD)/cli
	git -C $(CLIENT_BUILD)/cli fetch --quiet --depth 1 $(HYPERPOD_CLI_GIT) $(HYPERPOD_CLI_COMMIT)
	git -C $(CLIENT_BUILD)/cli checkout --quiet FETCH_HEAD
	git init --quiet --separate-git-dir $(CURDIR)/$(CLIENT_BUILD)/recipes.git $(CLIENT_BUILD)/cli/$(RECIPES_SUBMODULE)
	git -C $(CLIENT_BUILD)/cli/$(RECIPES_SUBMODULE) fetch --quiet --depth 1 $(HYPERPOD_RECIPES_GIT) $(HYPERPOD_RECIPES_COMMIT)
	git -C $(CLIENT_BUILD)/cli/$(RECIPES_SUBMODULE) checkout --quiet FETCH_HEAD
	git -C $(CLIENT_BUILD)/cli/$(RECIPES_SUBMODULE) submodule update --quiet --init --recursive --depth 1
	git -C $(CLIENT_BUILD)/cli config submodule.$(RECIPES_SUBMODULE).update none
	test "$$(git -C $(CLIENT_BUILD)/cli/$(RECIPES_SUBMODULE) rev-parse HEAD)" = $(HYPERPOD_RECIPES_COMMIT)
	echo $(HYPERPOD_RECIPES_COMMIT) > $(CLIENT_BUILD)/cli/$(RECIPES_SUBMODULE)/$(RECIPES_MARK)
	$(CLIENT_PYTHON) -m pip wheel --quiet --disable-pip-version-check --no-deps \
	  -w $(CLIENT_WHEEL_DIR) ./$(CLIENT_BUILD)/cli
	@test "$$(git -C $(CLIENT_BUILD)/cli/$(RECIPES_SUBMODULE) rev-parse HEAD)" = $(HYPERPOD_RECIPES_COMMIT) \
	  || { echo "make client-wheel: the CLI's build moved the recipes off $(HYPERPOD_RECIPES_COMMIT); the wheel is not the pinned launcher."; rm -f $@; exit 1; }
	@echo "built $@ (CLI $(HYPERPOD_CLI_COMMIT), recipes $(HYPERPOD_RECIPES_COMMIT))"

# novapod/data/nova_upstream.yaml from the pinned commits (tools/upstream_facts.py; needs
# GitHub, or UPSTREAM_GIT_ARGS="--recipes-git DIR --cli-git DIR --training-operator-git DIR
# --helm-git DIR --apiserver-git DIR" for local copies). Helm: the bootstrap's Helm 3 and a Helm 4;
# the API server: the Kubernetes minor of novapod/data/eks.yaml's default.
HELM3_TAG := v3.20.1
HELM4_TAG := v4.2.4
APISERVER_TAG := v0.35.7
UPSTREAM_GIT_ARGS ?=

upstream-facts: $(VENV)/.installed
	$(BIN)/python tools/upstream_facts.py --recipes-commit $(HYPERPOD_RECIPES_COMMIT) \
	  --cli-commit $(HYPERPOD_CLI_COMMIT) --training-operator-commit $(TRAINING_OPERATOR_COMMIT) --helm3-tag $(HELM3_TAG) --helm4-tag $(HELM4_TAG) \
	  --apiserver-tag $(APISERVER_TAG) $(UPSTREAM_GIT_ARGS)

# The documentation site (docs/, mkdocs.yml): the configuration reference must match the
# schema (tools/config_reference.py --check; regenerate it without --check), the stacks
# diagram is written from a synth of DOCS_CONFIG (tools/stack_diagram.py) into
# docs/generated/, which docs/architecture.md includes, then mkdocs builds with --strict:
# a broken link, a missing anchor or page, or a missing include fails the build.
DOCS_CONFIG ?= config/examples/nova-jobs.yaml

docs: setup
	$(BIN)/python tools/config_reference.py --check
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python tools/stack_diagram.py --config $(DOCS_CONFIG) \
	  --out docs/generated/stacks.md
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
	@echo "site written to site/"

# checkov over the templates of config/default.yaml and every example, synthesized with
# the NIST 800-53 R5 and HIPAA packs (`novapod compliance-report`, which also prints the
# Compliance section of docs/security.md). checkov is pinned and lives in its own virtual
# environment: it pins ~90 packages of its own (~290 MB, about a minute to install),
# which must not meet novapod's. Exit 1 on any failed check that is not suppressed with
# a reason in the resource's Metadata.checkov.skip (novapod/constructs/acknowledge.py).
# --skip-download: no call to the Prisma Cloud API (it only adds guideline links).
COMPLIANCE_VENV := .venv-compliance
CHECKOV_VERSION := 3.3.30
COMPLIANCE_OUT := compliance.out

compliance: setup $(COMPLIANCE_VENV)/.installed-$(CHECKOV_VERSION)
	rm -rf $(COMPLIANCE_OUT) && mkdir -p $(COMPLIANCE_OUT)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/novapod compliance-report \
	  --synth-dir $(COMPLIANCE_OUT)/cdk.out > $(COMPLIANCE_OUT)/report.md
	$(COMPLIANCE_VENV)/bin/checkov --skip-download --framework cloudformation --quiet \
	  --compact $$(find $(COMPLIANCE_OUT)/cdk.out -name '*.template.json' | sort | sed 's/^/-f /')

$(COMPLIANCE_VENV)/.installed-$(CHECKOV_VERSION):
	rm -rf $(COMPLIANCE_VENV)
	$(PYTHON) -m venv $(COMPLIANCE_VENV)
	$(COMPLIANCE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=23"
	$(COMPLIANCE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check "checkov==$(CHECKOV_VERSION)"
	touch $@

clean:
	rm -rf cdk.out review review-base .cache .pytest_cache .mypy_cache .ruff_cache mutants $(COMPLIANCE_OUT) $(CLIENT_BUILD) site docs/generated
