"""Every scenario replayed through the real promtool: each rule fires on its fault, in time, on the
right GPU, and nothing fires on normal load."""

import pytest

from conftest import ROOT, promtool_jobs, replay_fixture, run_cli, selected
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.scenarios import load_scenarios
from test_render import DESIGN_FAILURE_MODES

SCENARIOS = sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml"))


def scenario_models():
    catalog = load_catalog(bundled_catalog_dir())
    return load_scenarios(SCENARIOS, [fm.id for fm in catalog.failure_modes])


def test_every_failure_mode_has_a_positive_scenario():
    expected = {e.failure_mode for s in scenario_models() for e in s.expect}
    assert DESIGN_FAILURE_MODES - expected == set()


def test_at_least_six_normal_load_scenarios():
    normal = [s.name for s in scenario_models() if s.is_normal]
    assert len(normal) >= 6, normal


@replay_fixture
def promtool_results(request):
    """promtool on the selected scenarios' rendered tests, one process per file (conftest's pool)."""
    rendered, promtool = request.getfixturevalue("rendered"), request.getfixturevalue("promtool")
    chosen = selected(request.config, __name__, "test_scenario_passes_in_promtool")
    return promtool_jobs(promtool, [rendered / "tests" / "promtool" / f"{name}.yaml" for name in sorted(chosen)])


@pytest.mark.parametrize("scenario", [p.stem for p in SCENARIOS])
def test_scenario_passes_in_promtool(promtool_results, scenario):
    rc, output = promtool_results[scenario]
    assert rc == 0, f"promtool test rules tests/promtool/{scenario}.yaml failed " \
                    f"(run `rulesgen replay fixtures/scenarios/{scenario}.yaml` for details):\n{output}"


@pytest.mark.engines
def test_replay_reports_first_firing_and_exits_zero():
    result = run_cli("replay", "fixtures/scenarios/ecc-uncorrectable-preexisting.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("PASS ecc-uncorrectable-preexisting:")
    assert any("GPUECCUncorrectable" in line and "gpu=6" in line and "[expected]" in line for line in lines)
    assert lines[-1] == "1/1 scenarios match their expectations"


@pytest.mark.engines
def test_replay_exits_nonzero_on_a_mismatch(tmp_path):
    src = (ROOT / "fixtures" / "scenarios" / "ecc-uncorrectable-preexisting.yaml").read_text()
    wrong = tmp_path / "wrong-gpu.yaml"
    wrong.write_text(src.replace("name: ecc-uncorrectable-preexisting", "name: wrong-gpu")
                        .replace("gpu: '6'", "gpu: '5'", 1))
    result = run_cli("replay", str(wrong))
    assert result.returncode == 1
    assert "FAIL wrong-gpu" in result.stdout
    assert "MISSING: ecc_uncorrectable {'Hostname'" in result.stdout
    assert "[FALSE ALERT]" in result.stdout
