"""The replay selections (RULESGEN_*: what `make test` and CI's *-all targets replay) are what pytest
collects, and name known scenarios: an unselected case is not a test at all, never one that skips, so a
broken selection cannot pass as a row of skips."""
import os
import subprocess
import sys

import pytest

import test_dialects
import test_engines
import test_scenarios
import test_sharding
import test_victoriametrics
from conftest import ROOT
from rulesgen.load.dialects import parse_dialect

SCENARIOS = sorted(p.stem for p in (ROOT / "fixtures" / "scenarios").glob("*.yaml"))
VARIABLES = ("RULESGEN_VM_SCENARIOS", "RULESGEN_SCENARIOS", "RULESGEN_DIALECT_CELLS", "RULESGEN_242_SCENARIOS",
             "RULESGEN_SHARDING")
VM = "tests/test_victoriametrics.py::test_scenario_passes_vmalert_tool"
PROMTOOL = "tests/test_scenarios.py::test_scenario_passes_in_promtool"
DIALECTS = "tests/test_dialects.py::test_scenario_passes_in_dialect"
ON_2_42 = "tests/test_engines.py::test_scenario_passes_on_promtool_2_42"
SHARDING = "tests/test_sharding.py::test_two_shards_and_the_global_tier_alert_as_one_server"
CELLS = [f"{s}@{d}" for s, d in test_dialects.ALL_CELLS]
QUICK_CELLS = [f"{s}@{d}" for s, d in test_dialects.QUICK]


def rest(every, quick) -> list:
    return [case for case in every if case not in quick]


# (the variables as a make target sets them, the ids each replay test must collect then)
MAKE_TEST = ({}, {VM: test_victoriametrics.SUBSET, PROMTOOL: test_scenarios.QUICK, DIALECTS: QUICK_CELLS,
                  ON_2_42: test_engines.QUICK_ON_2_42, SHARDING: test_sharding.MULTI_NODE})
CI_REST = ({"RULESGEN_VM_SCENARIOS": "rest", "RULESGEN_SCENARIOS": "rest-not-sharded", "RULESGEN_DIALECT_CELLS": "rest",
            "RULESGEN_242_SCENARIOS": "rest", "RULESGEN_SHARDING": "modes"},
           {VM: rest(SCENARIOS, test_victoriametrics.SUBSET),
            PROMTOOL: rest(SCENARIOS, set(test_scenarios.QUICK) | set(test_sharding.SELECTIONS["modes"])),
            DIALECTS: rest(CELLS, QUICK_CELLS), ON_2_42: rest(test_engines.ALL_ON_2_42, test_engines.QUICK_ON_2_42),
            SHARDING: test_sharding.SELECTIONS["modes"]})


@pytest.mark.parametrize("variables,expected", [MAKE_TEST, CI_REST], ids=["make-test", "ci-rest"])
def test_pytest_collects_exactly_the_selected_replays(variables, expected):
    env = {**{k: v for k, v in os.environ.items() if k not in VARIABLES}, **variables}
    files = sorted({test.split("::")[0] for test in expected})
    proc = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
                           "--collect-only", *files], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    collected: dict[str, list] = {test: [] for test in expected}
    for line in proc.stdout.splitlines():
        test, _, param = line.partition("[")
        if test in collected:
            collected[test].append(param.removesuffix("]"))
    assert {t: sorted(ids) for t, ids in collected.items()} == {t: sorted(ids) for t, ids in expected.items()}
    for ids in collected.values():
        assert ids and {i.split("@")[0] for i in ids} <= set(SCENARIOS)
    assert all(parse_dialect(i.split("@")[1]) for i in collected[DIALECTS])
