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
export NOVAPOD_CONFIG ?= $(CONFIG)

.PHONY: help setup synth test lint typecheck unit bench mutation clean client pipeline-synth pipeline-review compliance

help:
	@echo "make synth   synthesize $(CONFIG) with the pinned CDK CLI into cdk.out/"
	@echo "make test    ruff, mypy and pytest"
	@echo "make bench   synthesis and planner benchmarks (not part of the tests)"
	@echo "make compliance  checkov (pinned, in $(COMPLIANCE_VENV)/) over every shipped config's templates"
	@echo "make mutation  mutation score of the purchase path (not part of make test)"
	@echo "make pipeline-synth PIPELINE=FILE  synthesize the CDK Pipelines app (pipeline_app.py) into cdk.out/"
	@echo "make client  the HyperPod CLI for \`novapod launch --run\` in $(CLIENT_VENV)/ (needs GitHub and helm)"

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

unit: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q

test: lint typecheck unit

bench: setup
	$(BIN)/python benchmarks/synth_time.py
	$(BIN)/python benchmarks/deploy_critical_path.py
	$(BIN)/python benchmarks/plan_time.py

# mutmut mutates the modules listed in pyproject.toml [tool.mutmut] inside mutants/ and,
# per mutant, runs the fast tests that call the mutated function; results are cached in
# mutants/, so a second run only checks what changed. MUTMUT_ARGS selects mutants, e.g.
# MUTMUT_ARGS='"novapod.naming*"'. Survivors: killed by a test or listed, with the reason,
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
# python3). Note: its setup.py runs `git submodule update --remote`, so the recipes
# (aws/sagemaker-hyperpod-recipes) come from the tip of the submodule's branch
# (release-2.0.0) at install time, not from the commit the CLI records. Not part of
# `make setup` or CI. The Helm charts it renders are installed with `helm`, which must be on PATH.
CLIENT_VENV := .venv-client
CLIENT_PYTHON ?= python3.11
HYPERPOD_CLI_COMMIT := abcdc77b3e4ca160874021c6615baf0dbb96c69b
HYPERPOD_CLI := git+https://github.com/aws/sagemaker-hyperpod-cli@$(HYPERPOD_CLI_COMMIT)

client: $(CLIENT_VENV)/.installed-$(HYPERPOD_CLI_COMMIT)

$(CLIENT_VENV)/.installed-$(HYPERPOD_CLI_COMMIT):
	rm -rf $(CLIENT_VENV)
	$(CLIENT_PYTHON) -m venv $(CLIENT_VENV)
	$(CLIENT_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=23"
	$(CLIENT_VENV)/bin/python -m pip install --disable-pip-version-check "hyperpod @ $(HYPERPOD_CLI)"
	$(CLIENT_VENV)/bin/hyperpod --help > /dev/null
	touch $@

# checkov over the templates of config/default.yaml and every example, synthesized with
# the NIST 800-53 R5 and HIPAA packs (`novapod compliance-report`, which also prints the
# README's Compliance section). checkov is pinned and lives in its own virtual
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
	rm -rf cdk.out review review-base .pytest_cache .mypy_cache .ruff_cache mutants $(COMPLIANCE_OUT)
