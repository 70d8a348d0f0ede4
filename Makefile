# rulesgen: `make render` renders the bundled catalog; `make test` proves it with promtool and vmalert.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Python's byte-code cache (__pycache__/, ignored by git) stays on: container images and CI runners often set
# PYTHONDONTWRITEBYTECODE=1, and then each pytest worker, each target and each CLI process a test starts
# compiles every module again (pytest's collection: 7.0 s -> 4.3 s a process with the cache).
unexport PYTHONDONTWRITEBYTECODE

# pytest with the engines on PATH, its tests spread over the cores by pytest-xdist (one worker per core;
# tests that share one expensive run carry an xdist_group mark and land in one worker).
PYTEST = PATH="$(CURDIR)/.tools/bin:$$PATH" $(BIN)/python -m pytest
XDIST  ?= -n auto --dist loadgroup
# More pytest options for make test, e.g. PYTEST_ARGS=-x (stop at the first failure: make mutants does).
PYTEST_ARGS ?=

# The *-all targets replay every case by default (REPLAY=all); REPLAY=rest: only the cases `make test`
# leaves out (marker slow; CI runs them after make test has passed); REPLAY=rest-not-sharded: and not the
# scenarios whose promtool test the equality proof replays (marker sharded: make test-sharding).
# None of them replays what CI's proof leaves to make test-exhaustive (marker exhaustive).
REPLAY ?= all
MARK_all               := not live and not exhaustive
MARK_rest              := slow and not exhaustive
MARK_rest-not-sharded  := slow and not sharded and not exhaustive
SELECT = -m "$(or $(MARK_$(REPLAY)),$(error REPLAY=$(REPLAY): expected all, rest or rest-not-sharded))"

.PHONY: setup render test pictures test-live test-package test-sharding test-exhaustive test-interrupts-all test-vm-all test-dialects-all test-2.42-all test-scenarios-all check bench tools fixtures mutants clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

tools:
	./scripts/get-tools.sh

# The venv and the engines at once, CI's first step: pip and the Debian packages' checks and unpacking each keep
# about one core busy (on a clean clone, 2 cores, 2026-12-01: the venv 28 s, make tools 24 s alone).
setup:
	$(MAKE) --no-print-directory -j2 $(STAMP) tools

render: $(STAMP)
	$(BIN)/rulesgen render

check: $(STAMP)
	$(BIN)/rulesgen check

test: $(STAMP) tools
	@echo "engines (.tools/versions):"; sed 's/^/  /' .tools/versions 2>/dev/null || true
	$(BIN)/ruff check --quiet rulesgen tests scripts fixtures benchmarks
	$(PYTEST) $(XDIST) $(PYTEST_ARGS)

# Pictures of the dashboards for docs/dashboards.md (scripts/dashboard_pictures.py: their layout drawn with matplotlib,
# filled by one scenario replayed through promtool; a few minutes, not part of make check or make test).
pictures: $(STAMP) tools
	PATH="$(CURDIR)/.tools/bin:$$PATH" $(BIN)/python scripts/dashboard_pictures.py

# An alert's whole trip through running servers (synthetic dcgm-exporter -> Prometheus 3.5, and
# victoria-metrics + vmalert -> Alertmanager -> webhook): ~18 minutes, both engines at once; writes benchmarks/results/live-latency.md.
test-live: $(STAMP) tools
	$(PYTEST) -q -s -m live tests/live

# The built wheel installed into a fresh venv and used as users use it: the repository its `rulesgen init`
# scaffolds runs its own `make test` and `make test-vmalert` (marker package, tests/test_package.py): about
# 1-2 minutes on 2 cores, mostly pip and one Python process; CI runs it.
test-package: $(STAMP) tools
	$(PYTEST) -q -m package tests/test_package.py

# The equality proofs (marker equality): two shards and a global tier against one server on each failure
# mode at each scrape interval of the multi-node scenarios (49 of 81, the others in make test-exhaustive;
# tests/test_sharding.py, 3 promtool replays each: one server, both shards in one run, the global tier), the
# SLO rules over their synthetic fleets (tests/test_slos.py: records and alerts), the regrouped files against
# the unsplit ones, one shard plus the global tier, the live rules against every rule (tests/test_live_rules.py:
# every replay evaluates only the rules live on its input), the SLOs' backfilled hourly sums against the live
# rules' (tests/test_backfill.py). make test runs none of them; a quicker loop: pytest -m sharding_quick
# tests/test_sharding.py. The one-server replay of a scenario is its own promtool test: make
# test-scenarios-all REPLAY=rest-not-sharded leaves those to this target.
test-sharding: $(STAMP) tools
	$(PYTEST) $(XDIST) -q -m "equality and not exhaustive" tests/test_sharding.py tests/test_tiers.py tests/test_engine_fit.py tests/test_slos.py tests/test_live_rules.py tests/test_backfill.py

# On demand, not in CI: what CI's proofs leave out to stay within its budget (marker exhaustive): the fault
# scenarios that repeat a failure mode at a scrape interval already held, on vmalert-tool and in the two-shard
# proof (docs/testing.md, "What CI proves"): about 20 minutes on 2 cores.
test-exhaustive: $(STAMP) tools
	$(PYTEST) $(XDIST) -q -m exhaustive tests/test_victoriametrics.py tests/test_sharding.py

# An interrupt after every rename of a render's commit phase (make test interrupts a spread of them): ~30 s.
test-interrupts-all: $(STAMP)
	$(PYTEST) $(XDIST) -q $(SELECT) tests/test_interrupts.py::test_ctrl_c_after_every_rename_of_the_commit_phase_leaves_the_new_tree_and_no_temporary

# On vmalert-tool every normal scenario and each failure mode at each scrape interval (make test runs a subset; the
# others: make test-exhaustive): CI's longest suite (replays several scenarios to a run: tests/batches.py).
test-vm-all: $(STAMP) tools
	$(PYTEST) $(XDIST) -q $(SELECT) tests/test_victoriametrics.py::test_scenario_passes_vmalert_tool tests/test_slos.py::test_slo_rules_replayed_over_a_synthetic_fleet tests/test_slos.py::test_a_lost_node_pages_the_capacity_slo_from_the_dcgm_series

# Every scenario on promtool 3.5 (make test replays QUICK of tests/test_scenarios.py): about 7 minutes on 2 cores in batches.
test-scenarios-all: $(STAMP) tools
	$(PYTEST) $(XDIST) -q $(SELECT) tests/test_scenarios.py::test_scenario_passes_in_promtool

# The whole promtool 2.42 subset (make test runs one of its six scenarios): ~1 minute on 2 cores.
test-2.42-all: $(STAMP) tools
	$(PYTEST) $(XDIST) -q $(SELECT) tests/test_engines.py::test_scenario_passes_on_promtool_2_42 tests/test_slos.py::test_slo_alerts_on_promtool_2_42

# Every dialect cell on promtool (make test runs one per dialect): ~2 minutes on 2 cores.
test-dialects-all: $(STAMP) tools
	$(PYTEST) $(XDIST) -q $(SELECT) tests/test_dialects.py::test_scenario_passes_in_dialect

# Fleet benchmark (benchmarks/fleet.py, ~35 min on 2 cores): override e.g. FLEET_ARGS="--gpus 16 --days 2".
FLEET_ARGS ?= --gpus 800 --days 14 --prom-backfill-days 0
# Sharded topology, live (benchmarks/sharded.py, ~20 min on 2 cores): two Prometheus shards + vmalert global tier
# against one reference server; writes benchmarks/results/sharded-<N>.md. Override e.g. SHARDED_ARGS="--gpus 32".
SHARDED_ARGS ?= --gpus 800

bench: $(STAMP) tools
	PATH="$(CURDIR)/.tools/bin:$$PATH" $(BIN)/python benchmarks/latency.py
	$(BIN)/python benchmarks/live_latency.py
	$(BIN)/python benchmarks/split_lag.py
	PATH="$(CURDIR)/.tools/bin:$$PATH" $(BIN)/python benchmarks/run.py --skip-latency
	$(BIN)/python benchmarks/fleet.py $(FLEET_ARGS)
	$(BIN)/python benchmarks/sharded.py $(SHARDED_ARGS)

# On demand, not in CI: each bug of scripts/mutants.py planted alone in a copy of HEAD, then make test there (~10 min a bug); e.g. MUTANTS_ARGS='--only 1,4 --command "python -m pytest -q tests/test_x.py"'.
mutants: $(STAMP) tools
	$(BIN)/python scripts/mutants.py $(MUTANTS_ARGS)

fixtures: $(STAMP)
	$(BIN)/python fixtures/build_scenarios.py

clean:
	rm -rf $(VENV) .tools .pytest_cache .hypothesis
