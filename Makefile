# The two commands of the README:
#   make book   set everything up and build the site into _build/html
#   make test   set everything up, build the book and run the whole test suite
# Both create the Python environment in .venv/ on first use.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
export IDMAP_DATA ?= $(abspath ../shared/data)

# JavaScript the site serves itself, so that math and widgets also work offline (npm registry;
# book/_ext/vendor.sha256 pins the exact tarballs).
VENDOR       := .vendor
VENDOR_STAMP := $(VENDOR)/.stamp
JS_PACKAGES  := mathjax@3.2.2 @jupyter-widgets/html-manager@1.0.6 requirejs@2.3.4 axe-core@4.14.1
# axe-core: the browser tests' accessibility check (WCAG 2.1 AA); never served by the site
AXE          := $(VENDOR)/axe
SITE_JS      := $(VENDOR)/site/vendor
CHROMIUM     := /usr/bin/chromium
BWRAP        := /usr/bin/bwrap
SLURMCTLD    := /usr/sbin/slurmctld
# Every build re-executes every chapter (--all): pages always show what the current code computes.
BOOK_FLAGS   ?= --all -W --keep-going

.PHONY: setup vendor book test colab-freeze clean mutation mutation-sample mutation-setup mutation-results

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -e .
	touch $@

vendor: $(VENDOR_STAMP)

$(VENDOR_STAMP): Makefile book/_ext/vendor.sha256
	rm -rf $(VENDOR)
	mkdir -p $(VENDOR)/npm $(SITE_JS)/mathjax $(SITE_JS)/html-manager $(SITE_JS)/requirejs $(AXE)
	cd $(VENDOR)/npm && npm pack --silent $(JS_PACKAGES) && sha256sum -c ../../book/_ext/vendor.sha256
	tar -xzf $(VENDOR)/npm/mathjax-3.2.2.tgz -C $(SITE_JS)/mathjax --strip-components=2 package/es5
	tar -xzf $(VENDOR)/npm/jupyter-widgets-html-manager-1.0.6.tgz -C $(SITE_JS)/html-manager \
	    --strip-components=1 --exclude='*.map' package/dist package/LICENSE
	tar -xzf $(VENDOR)/npm/requirejs-2.3.4.tgz -C $(SITE_JS)/requirejs --strip-components=1 package/require.js
	tar -xzf $(VENDOR)/npm/axe-core-4.14.1.tgz -C $(AXE) --strip-components=1 package/axe.min.js package/LICENSE
	touch $@

book: setup vendor
	IDMAP_BOOK_BUILD=1 $(VENV)/bin/jupyter-book build book/ $(BOOK_FLAGS)

# The browser test drives Debian's chromium through Playwright (never `playwright install`).
$(CHROMIUM):
	apt-get update && apt-get install -y chromium

# The batch grader runs each student's notebook inside bubblewrap (idmap_class/sandbox.py).
$(BWRAP):
	apt-get update && apt-get install -y bubblewrap

# The cluster path's test starts a real SLURM on this machine (tests/test_slurm_real.py).
$(SLURMCTLD):
	apt-get update && apt-get install -y slurm-wlm

test: book $(CHROMIUM) $(BWRAP) $(SLURMCTLD)
	$(PY) -m pytest
	bash tools/colab_freeze.sh

# Colab's runtime frozen (tools/colab_runtime.txt: Python 3.13, its torch, plotly, ipywidgets...), built from the
# package registries in a Debian 13 chroot, and chapters run in it as a Colab student runs them; `make test` runs
# it too, and says "colab-freeze skipped: <why>" where it cannot be built (not root, no debootstrap, no registry).
colab-freeze:
	bash tools/colab_freeze.sh

# Mutation testing on demand (slow on 2 cores: NOT part of `make test` or CI). mutmut plants one small change
# at a time in the core modules and runs the fast tests that reach it ([tool.mutmut] in pyproject.toml);
# tests/MUTATION.md records the score and the survivors we accept. Narrow a run with a glob of mutant names:
#   make mutation MUTANTS='idmap_lib.models.units.* idmap_lib.models.shortcuts.*'
# mutmut keeps its results in mutants/ and re-runs only what changed. The whole run is ~5,000 mutants (hours on
# 2 cores); `make mutation-sample SAMPLE=400 BLOCK=0` runs a seeded random sample of them instead (the first
# mutmut call only brings mutants/ and the test statistics up to date, running one mutant) and scores it with a
# 95 % interval. Once tests were written from a block's survivors, the next BLOCK (disjoint) measures afresh.
MUTANTS       ?=
MUTATION_JOBS ?= 2
SAMPLE        ?= 400
BLOCK         ?= 0
MUTATION_NICE ?= 15
MUTMUT = IDMAP_ROOT=$(abspath mutants/idmap-root) OMP_NUM_THREADS=1 nice -n $(MUTATION_NICE) $(VENV)/bin/mutmut run --max-children $(MUTATION_JOBS)
# (tools/mutation_import_time.py runs the mutants of import-time code, which mutmut cannot exercise.)
IMPORT_TIME = IDMAP_ROOT=$(abspath mutants/idmap-root) nice -n $(MUTATION_NICE) $(PY) tools/mutation_import_time.py
mutation: mutation-setup
	$(MUTMUT) $(MUTANTS) || true
	$(IMPORT_TIME)
	$(MAKE) --no-print-directory mutation-results

mutation-sample: mutation-setup
	$(MUTMUT) 'idmap_lib.engine.augment.x_crop_flip__mutmut_1' > /dev/null || true  # (mutants and statistics first)
	$(MUTMUT) $$($(PY) tools/mutation_summary.py --draw $(SAMPLE) --block $(BLOCK)) || true
	$(IMPORT_TIME) $$($(PY) tools/mutation_summary.py --draw $(SAMPLE) --block $(BLOCK))
	$(PY) tools/mutation_summary.py --sample $(SAMPLE) --block $(BLOCK)

# A mutant may write where the real code would not (results, checkpoints, caches): mutants get a data root of
# their own, never data/ (its decoded-dataset cache copied in, so the tests need not decode the JPEGs again).
mutation-setup: setup
	$(PY) -m pip install -q -r requirements-mutation.txt
	mkdir -p mutants/idmap-root && cp -ru data/cache mutants/idmap-root/
	mkdir -p mutants/data && ln -sfn ../../data/mechanisms mutants/data/mechanisms  # (tests read the recorded forwards
	ln -sfn ../tools mutants/tools  # and run the benchmarks)

mutation-results:
	$(PY) tools/mutation_summary.py

clean:
	rm -rf _build
