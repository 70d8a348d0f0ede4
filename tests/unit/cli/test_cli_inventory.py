"""rulesgen/cli/inventory.py (list, explain) in-process with click's CliRunner on conftest's one-mode
catalog (hot_gpu: gpu:dcgm_gpu_temp:max > 85 C), in an empty folder: what each command says about it."""
import json

import pytest
from click.testing import CliRunner

from rulesgen.cli.inventory import explain, list_cmd
from rulesgen.promql.tree import comparisons, names_read, number


@pytest.fixture
def catalog(minimal_catalog, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return str(minimal_catalog)


def run(command, *args):
    result = CliRunner().invoke(command, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_list_shows_the_mode_active_and_each_metrics_counter_default(catalog):
    result = run(list_cmd, "--catalog", catalog)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[:2] == ["FAILURE MODES", f"  {'hot_gpu':<26} {'health':<10} {'warning':<24} active"]
    metrics = [line.split() for line in lines[lines.index("METRICS") + 1:]]
    assert metrics == [["DCGM_FI_DEV_GPU_TEMP", "gauge", "C", "default"],
                       ["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "count", "opt-in"]]


def test_list_with_a_counters_file_that_leaves_the_mode_blind(catalog, tmp_path):
    (tmp_path / "counters.csv").write_text("# mine\nDCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, dbe\n")
    result = run(list_cmd, "--catalog", catalog, "--counters", "counters.csv")
    assert result.exit_code == 0
    assert "counters.csv: 1 failure mode(s) blind: hot_gpu" in result.stdout.splitlines()
    doc = json.loads(run(list_cmd, "--catalog", catalog, "--counters", "counters.csv", "--format", "json").stdout)
    [mode] = doc["failure_modes"]
    assert (mode["id"], mode["active"], mode["state"], mode["opt_in_counters"]) == ("hot_gpu", True, "blind", "none")
    assert "DCGM_FI_DEV_GPU_TEMP" in mode["reason"]


def test_explain_text_shows_threshold_alert_and_runbook(catalog):
    result = run(explain, "hot_gpu", "--catalog", catalog)
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("hot_gpu: Hot GPU (health, scope gpu)\n")
    assert "THRESHOLDS\n  celsius = 85 C\n  source: test\n" in out
    alerts = out.split("\nALERTS\n", 1)[1].splitlines()
    assert alerts[0] == "  GPUHotGPU  severity=warning action=investigate for=300s tier=local"
    [cmp] = comparisons(alerts[1].strip())
    assert (names_read(cmp.lhs), cmp.op, number(cmp.rhs)) == (("gpu:dcgm_gpu_temp:max",), ">", 85)
    assert "RUNBOOK\n  Check:\n   - look\n  Do:\n   - fix\n" in out


def test_explain_marks_a_threshold_from_the_config(catalog, tmp_path):
    (tmp_path / "rulesgen.yaml").write_text("failure_modes:\n  hot_gpu:\n    thresholds: {celsius: 90}\n")
    out = run(explain, "hot_gpu", "--catalog", catalog).stdout
    assert "  celsius = 90 C (from rulesgen.yaml)\n" in out
    [cmp] = comparisons(out.split("\nALERTS\n", 1)[1].splitlines()[1].strip())
    assert number(cmp.rhs) == 90


def test_explain_json_of_the_mode(catalog):
    doc = json.loads(run(explain, "hot_gpu", "--catalog", catalog, "--format", "json").stdout)
    assert [(a["alert"], a["severity"], a["for_seconds"], a["tier"]) for a in doc["alerts"]] == [
        ("GPUHotGPU", "warning", 300, "local")]
    assert doc["thresholds"] == [{"name": "celsius", "value": 85, "unit": "C", "source": "test", "from_config": False}]
    assert doc["runbook"] == {"check": ["look"], "act": ["fix"]} and doc["inactive"] is None


def test_explain_an_unknown_name_suggests_the_mode(catalog):
    result = run(explain, "hot_gpus", "--catalog", catalog)
    assert result.exit_code == 2
    assert "unknown failure mode 'hot_gpus'" in result.stderr and "hot_gpu" in result.stderr.split("'hot_gpus'", 1)[1]


def test_explain_a_record_gives_its_tier(catalog):
    text = run(explain, "gpu:dcgm_gpu_temp:max", "--catalog", catalog).stdout
    assert text.startswith("gpu:dcgm_gpu_temp:max: record in group rulesgen-gpu-signals (alerts/prometheus/recording.yaml)")
    doc = json.loads(run(explain, "gpu:dcgm_gpu_temp:max", "--catalog", catalog, "--format", "json").stdout)
    assert (doc["kind"], doc["tier"], doc["file"]) == ("record", "local", "alerts/prometheus/recording.yaml")
    assert "sharded_file" not in doc
