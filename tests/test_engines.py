"""The engines `make tools` fetches, and the rules on the oldest one they promise.

Prometheus 3.5's promtool is the primary engine (tests/test_scenarios.py replays every scenario on it);
VictoriaMetrics 1.145 the second; Debian stable's Prometheus 2.42 the oldest: every rendered rule file
must load in both promtools, and a representative subset of the scenario tests (hardware, threshold,
efficiency, normal load) must pass on 2.42 too."""
from __future__ import annotations

import re
import subprocess

import pytest

import batches
from conftest import BINARIES, engine_param, replay_cases, replay_env, replay_fixture
from rulesgen.engines.tools import tool_version

pytestmark = pytest.mark.engines

# (fixture of conftest.BINARIES, version pattern)
ENGINES = [
    ("promtool", r"3\."),
    ("prometheus_bin", r"3\."),
    ("promtool_2_42", r"2\.42\."),
    ("prometheus_2_42", r"2\.42\."),
    ("victoria_metrics", r"1\.1\d\d\."),
    ("vmalert", r"1\.1\d\d\."),
    ("vmalert_tool", r"1\.1\d\d\."),
]

# hardware level, threshold, efficiency, normal load. `make test` replays QUICK (the hardware scenario) to
# stay within its budget; the others are marked slow (CI: make test-2.42-all).
ALL_ON_2_42 = [
    "ecc-uncorrectable-dbe",
    "thermal-throttling-cooling-failure",
    "gpu-lost-xid79",
    "dataloader-starvation",
    "normal-steady-training",
    "normal-node-leaves-fleet",
]
QUICK_ON_2_42 = ["ecc-uncorrectable-dbe"]
SUBSET_ON_2_42 = replay_cases(ALL_ON_2_42, QUICK_ON_2_42)


@pytest.mark.parametrize("fixture,pattern", [pytest.param(f, p, marks=engine_param(f).marks, id=BINARIES[f][0])
                                             for f, p in ENGINES])
def test_engine_version(fixture, pattern, capsys, request):
    path, name = request.getfixturevalue(fixture), BINARIES[fixture][0]
    version = tool_version(name)
    with capsys.disabled():
        print(f"\n{name}: {version} ({path})", end="")
    assert re.match(pattern, version), f"{name} is {version}, expected {pattern}"


def test_vmalert_tool_runs(vmalert_tool):
    proc = subprocess.run([vmalert_tool, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "unittest" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("fixture", [engine_param("promtool_2_42"), engine_param("promtool")])
def test_rendered_rules_load(rendered, fixture, request):
    files = sorted((rendered / "alerts" / "prometheus").glob("*.yaml"))
    assert files
    promtool_name = BINARIES[fixture][0]
    proc = subprocess.run([request.getfixturevalue(fixture), "check", "rules", *map(str, files)],
                          capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{promtool_name} check rules failed:\n{output}"
    assert output.count("SUCCESS") == len(files), output


@replay_fixture
def results_on_2_42(request):
    """promtool-2.42 test rules on the subset, in batches (tests/batches.py; run from the tests' directory: 2.42
    resolves rule_files against the working directory)."""
    promtool = request.getfixturevalue("promtool_2_42")
    tests = request.getfixturevalue("rendered") / "tests" / "promtool"

    def job(path):
        proc = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True,
                              timeout=900, cwd=tests, env=replay_env())
        return proc.returncode, proc.stdout + proc.stderr

    return lambda names: batches.jobs([tests / f"{name}.yaml" for name in names], job)


@pytest.mark.parametrize("scenario", SUBSET_ON_2_42)
def test_scenario_passes_on_promtool_2_42(results_on_2_42, scenario):
    rc, output = results_on_2_42[scenario]
    assert rc == 0, f"promtool-2.42 test rules tests/promtool/{scenario}.yaml failed:\n{output[-4000:]}"
