# cps.gpu_cluster: run it, test it.
#   make lab            run playbooks/site.yml against a local podman lab
#   make test           every test tier (what CI runs)
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
# the distribution's python3 when it is new enough, else python3 on PATH (scripts/python.sh says why)
PYTHON ?= $(shell bash scripts/python.sh)
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
export CONTAINERS_CONF := $(CURDIR)/tests/container/containers.conf
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_INJECT_FACT_VARS := false
export ANSIBLE_FORCE_COLOR ?= 0
COLLECTION_LINK := collections/ansible_collections/cps/gpu_cluster
TIERS := $(CURDIR)/scripts/tier.sh

.PHONY: help host-deps deps dev-deps venv collection image test test-fresh bench lint ruff yamllint ansible-lint sanity unit integration render molecule lab lab-destroy clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

host-deps: ## install the Debian packages the tests and the lab need (podman, debootstrap...)
	PYTHON=$(PYTHON) bash scripts/install-host-deps.sh

# .venv/bin/.runtime: the control node's runtime (requirements.txt); .venv/bin/.installed: that
# plus the test and lint tools (requirements-dev.txt, which includes requirements.txt).
$(BIN)/.runtime: requirements.txt
	@if [ -e $(BIN)/.installed ] && [ $(BIN)/.installed -nt requirements.txt ]; then touch $@; else \
	  $(PYTHON) -m venv $(VENV) && $(BIN)/pip install -q --upgrade pip && \
	  $(BIN)/pip install -q -r requirements.txt && touch $@; fi

$(BIN)/.installed: requirements.txt requirements-dev.txt
	PYTHON=$(PYTHON) bash scripts/install-host-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@ $(BIN)/.runtime

# The test venv's localhost module runs skip zipimport's compile of their payload
# (tests/container/ansiballz_bytecode_cache.py; the test image has it too): test machines only.
$(BIN)/.bytecode-cache: tests/container/ansiballz_bytecode_cache.py $(BIN)/.installed
	site=$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
	  install -m 0644 tests/container/ansiballz_bytecode_cache.py "$$site/ansiballz_bytecode_cache.py" && \
	  echo "import ansiballz_bytecode_cache" > "$$site/ansiballz_bytecode_cache.pth"
	touch $@

# jupyterhub's jupyter_events asks for jsonschema[format-nongpl], whose rfc3987-syntax builds some 40 Earley
# parsers whenever jsonschema is imported (1.5 CPU-seconds). The kubernetes client imports kubernetes_validate
# (and so jsonschema) on `import kubernetes`: every kubernetes.core module run of the tests paid it. Without
# it jsonschema only leaves the "iri" formats unchecked (jsonschema/_format.py); no test uses them. Test venv only.
$(BIN)/.no-rfc3987-syntax: $(BIN)/.installed
	$(BIN)/pip uninstall -q -y rfc3987-syntax
	touch $@

venv: $(BIN)/.runtime ## create .venv with the control node's runtime requirements (requirements.txt)

$(COLLECTION_LINK):
	mkdir -p $(dir $(COLLECTION_LINK))
	ln -sfn ../../.. $(COLLECTION_LINK)

collection: $(COLLECTION_LINK) ## make cps.gpu_cluster resolvable from this checkout

deps: venv collection ## what the playbooks need on the control node (requirements.txt only)

dev-deps: $(BIN)/.installed $(BIN)/.bytecode-cache $(BIN)/.no-rfc3987-syntax collection ## deps plus the test and lint tools (requirements-dev.txt)

# bookworm is Proxmox VE 8's Debian, trixie Proxmox VE 9's: the molecule scenarios run hosts of both.
TEST_RELEASES ?= bookworm trixie
image: host-deps ## build (or reuse) the systemd Debian test images (bookworm and trixie)
	for release in $(TEST_RELEASES); do bash scripts/build-test-image.sh $$release || exit 1; done

# The venv and the test images first, side by side (neither needs the other; scripts/test-all.sh).
test: host-deps ## every tier, with a summary; fails if any tier fails (scripts/test-all.sh)
	@MAKE="$(MAKE)" bash scripts/test-all.sh

test-fresh: ## the whole suite as on a new machine: no cached image, venv or ~/.cache
	bash scripts/test-fresh.sh

lint: ruff yamllint ansible-lint ## ruff, yamllint and ansible-lint (production profile)

ruff: dev-deps
	ruff check plugins tests scripts

yamllint: dev-deps
	yamllint -s .

ansible-lint: dev-deps
	ansible-lint --profile production

sanity: dev-deps ## ansible-test sanity on a copy under ansible_collections/cps/gpu_cluster
	bash scripts/sanity.sh

unit: dev-deps ## pytest unit tests (modules, filters, parsers)
	pytest -q tests/unit

bench: dev-deps ## the scaling benchmarks up to 50,000 nodes: prints the timings (make test runs them to 5,000; ratios only, no wall clock)
	GPU_CLUSTER_BENCH=1 pytest -q -s tests/unit/benchmark

# Two workers or more (pytest-xdist): most of these tiers' time is ansible-playbook on one core.
# A test file stays on one worker (--dist loadfile): its module fixtures run once.
PYTEST_WORKERS ?= auto
integration: dev-deps ## ansible-playbook on localhost: preflight table, module integration
	pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=15 tests/integration

render: dev-deps ## render every component and validate it against the real schemas
	pytest -q tests/render

molecule: dev-deps image ## every molecule scenario (podman containers)
	bash scripts/molecule-all.sh

lab: TEST_RELEASES = bookworm
lab: deps image ## build the podman lab and run playbooks/site.yml against it
	bash lab/lab.sh up

lab-destroy: ## tear the lab down
	bash lab/lab.sh down

clean: lab-destroy
	rm -rf $(VENV) collections build .ansible .pytest_cache .tiers.log .molecule-lane.log .image.log

.PHONY: docs
docs: venv ## regenerate the role READMEs' variables reference from meta/argument_specs.yml
	python scripts/role-docs.py

.PHONY: mutants
mutants: dev-deps ## mutation testing of plugins/module_utils/ and plugin_utils/ (slow; not in make test): MUTANTS_FILES="phase k3s"
	bash scripts/mutants.sh
