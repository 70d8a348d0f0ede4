"""rulesgen/cli/lineage.py on plans of conftest's one-mode catalog (hot_gpu reads gpu:dcgm_gpu_temp:max,
which reads DCGM_FI_DEV_GPU_TEMP), built in-process: the path `explain` prints, line by line, with and
without the Kubernetes wrappers and a scenario expecting the alert; and catalog paths as shown."""
from pathlib import Path

import pytest

from conftest import HOT_GPU_SCENARIO
from rulesgen.artifacts import plan
from rulesgen.cli.lineage import alert_path, shown_path

WRAPPERS = "outputs:\n  prometheus_rule: {enabled: true}\n  vmrule: {enabled: true}\n"


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_path_from_catalog_line_to_runbook(minimal_catalog, here):
    (here / "rulesgen.yaml").write_text("outputs:\n  scenario_tests: false\n")
    lines = alert_path(plan(minimal_catalog, Path("rulesgen.yaml"), None), "hot_gpu")
    assert lines[0].startswith("  catalog/failure_modes.yaml:") and lines[0].endswith("  alert (warning)")
    assert lines[1] == "    -> GPUHotGPU  group rulesgen-health-alerts in alerts/prometheus/health.yaml"
    assert lines[2:5] == [
        "       reads:",
        "          gpu:dcgm_gpu_temp:max  group rulesgen-gpu-signals in alerts/prometheus/recording.yaml; "
        "from catalog/signals.yaml:13",
        "            exporter series: DCGM_FI_DEV_GPU_TEMP"]
    assert lines[5].startswith("  dashboard: dashboards/gpu-health.json panel 101 ")
    assert lines[6:] == ["  runbook: runbooks/hot-gpu.md (the alerts' runbook_url)",
                         "  tests expecting it: not among the outputs (outputs.scenario_tests: false; "
                         "--scenario-tests lists them)"]


def test_wrappers_the_vmalert_copy_and_the_tests_expecting_it(minimal_catalog, here):
    (here / "scenarios").mkdir()
    (here / "scenarios" / "hot-gpu-one.yaml").write_text(HOT_GPU_SCENARIO)
    (here / "rulesgen.yaml").write_text(WRAPPERS)
    lines = alert_path(plan(minimal_catalog, Path("rulesgen.yaml"), Path("scenarios"), scenario_tests=True), "hot_gpu")
    [also] = [line for line in lines if line.startswith("       also in ")]
    assert also.removeprefix("       also in ").split(", ") == [
        "deploy/prometheus-operator/rulesgen-health.yaml", "deploy/victoriametrics-operator/rulesgen-health.yaml",
        "tests/vmalert/rules/levels.yaml (group rulesgen-level2)"]
    assert lines[-1] == "  tests expecting it: tests/promtool/hot-gpu-one.yaml, tests/vmalert/hot-gpu-one.yaml"


def test_a_disabled_mode_has_only_its_runbook(minimal_catalog, here):
    (here / "rulesgen.yaml").write_text("failure_modes:\n  hot_gpu:\n    enabled: false\n")
    assert alert_path(plan(minimal_catalog, Path("rulesgen.yaml"), None), "hot_gpu") == [
        "  runbook: runbooks/hot-gpu.md (the alerts' runbook_url)"]


def test_shown_path_is_never_absolute(here):
    (here / "catalog").mkdir()
    assert shown_path(str(here / "catalog" / "metrics.yaml")) == "catalog/metrics.yaml"
    assert shown_path("metrics.yaml") == "metrics.yaml"
    assert shown_path(str(here / "metrics.yaml")) == "metrics.yaml"
    elsewhere = here.parent / "site-packages" / "rulesgen" / "_catalog" / "failure_modes.yaml"
    assert shown_path(str(elsewhere)) == "catalog/failure_modes.yaml"
    assert shown_path(str(here.parent / "team-catalog" / "xid.yaml")) == "team-catalog/xid.yaml"
