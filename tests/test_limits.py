"""Limits from the GPU itself (issue 22 item 3) and the history rules that count what the contract says
(item 5): the rules' shape, and the limit chain evaluated by the real promtool on a few series."""
import subprocess
from pathlib import Path

import yaml

from conftest import run_cli
from treeasserts import Join, canonical, joins, numbers, reads
from rulesgen.artifacts import load_inputs
from rulesgen.builders.rules import build_rules
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.promql import tree


def _rules(config: Path | None = None):
    catalog, settings = load_inputs(bundled_catalog_dir(), config)
    return {(r.record or r.alert): r for r in build_rules(catalog, settings).rules}


def test_thermal_hbm_and_power_read_each_gpus_own_limit_first():
    rules = _rules()
    own = rules["gpu:dcgm_limit_gpu_max_operating_temp_c:value"].expr
    first = joins(own)[0]  # the GPU's own field (sane values only), else its model's entry
    assert first.op == "or" and ("by", ("cluster", "Hostname", "gpu", "UUID", "modelName")) == tree.grouping(first.lhs)[0]
    assert reads(first.lhs, "DCGM_FI_DEV_GPU_MAX_OP_TEMP") and {200.0, 0.0} <= numbers(first.lhs)
    assert Join("+", ("cluster", "modelName"), (), canonical("gpu:dcgm_reporting:timestamp * 0"),
                "model:dcgm_limit_gpu_max_operating_temp_c:value") in joins(own)
    # the model record still ends with the unknown-GPU default: the last `or` branch has no model matcher
    model = rules["model:dcgm_limit_gpu_max_operating_temp_c:value"].expr
    assert joins(model)[0].rhs == canonical("model:dcgm_gpus:count * 0 + 83")
    # power: no default (a placeholder 400 W would page every 1 kW GPU the table does not list)
    power = rules["gpu:dcgm_limit_tdp_watts:value"].expr
    assert reads(power, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT")
    assert [s.matchers for s in tree.selectors(power) if s.name == "gpu:dcgm_reporting:timestamp"][0][0][:2] == ("modelName", "=~")
    gpu = ("cluster", "Hostname", "gpu", "UUID")
    for alert, limit in (("GPUThermalThrottling", "gpu:dcgm_limit_gpu_max_operating_temp_c:value"),
                         ("GPUMemoryOverheat", "gpu:dcgm_limit_memory_max_temp_c:value"),
                         ("GPUPowerAnomaly", "1.05 * gpu:dcgm_limit_tdp_watts:value")):
        assert any(j.op == ">=" and j.on == gpu and j.group_left == () and j.rhs == canonical(limit)
                   for j in joins(rules[alert].expr)), alert


def test_the_limit_chain_in_promtool(tmp_path, promtool):
    """Own field, else table, else default: 0 and DCGM's blank sentinel count as not reported; a GPU
    missing from the table without the field has no power limit."""
    rules = _rules()
    names = ["gpu:dcgm_reporting:timestamp", "model:dcgm_gpus:count",
             "model:dcgm_limit_gpu_max_operating_temp_c:value", "model:dcgm_limit_tdp_watts:value",
             "gpu:dcgm_limit_gpu_max_operating_temp_c:value", "gpu:dcgm_limit_tdp_watts:value"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(
        {"groups": [{"name": "limits", "rules": [{"record": n, "expr": rules[n].expr} for n in names]}]}))

    def gpu(host, model, index):
        return f'job="dcgm-exporter", Hostname="{host}", gpu="{index}", UUID="GPU-{host}-{index}", modelName="{model}"'
    b200, h100, h200 = (gpu("b1", "NVIDIA B200", 0), gpu("h1", "NVIDIA H100 80GB HBM3", 0),
                        gpu("h2", "NVIDIA H200", 1))
    series = [
        {"series": f"DCGM_FI_DEV_GPU_TEMP{{{b200}}}", "values": "70x5"},
        {"series": f"DCGM_FI_DEV_GPU_TEMP{{{h100}}}", "values": "70x5"},
        {"series": f"DCGM_FI_DEV_GPU_TEMP{{{h200}}}", "values": "70x5"},
        {"series": f"DCGM_FI_DEV_GPU_MAX_OP_TEMP{{{b200}}}", "values": "90x5"},           # its own
        {"series": f"DCGM_FI_DEV_GPU_MAX_OP_TEMP{{{h100}}}", "values": "0x5"},            # unsupported: table
        {"series": f"DCGM_FI_DEV_GPU_MAX_OP_TEMP{{{h200}}}", "values": "9223372036854775794x5"},  # sentinel
        {"series": f"DCGM_FI_DEV_ENFORCED_POWER_LIMIT{{{h100}}}", "values": "350x5"},     # a lowered cap
    ]
    expect = lambda name, *rows: {"expr": name, "eval_time": "4m", "exp_samples": [  # noqa: E731
        {"labels": f'{name}{{Hostname="{h}", UUID="GPU-{h}-{i}", gpu="{i}", modelName="{m}"}}', "value": v}
        for h, i, m, v in rows]}
    test = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series, "promql_expr_test": [
            expect("gpu:dcgm_limit_gpu_max_operating_temp_c:value", ("b1", 0, "NVIDIA B200", 90),
                   ("h1", 0, "NVIDIA H100 80GB HBM3", 87), ("h2", 1, "NVIDIA H200", 87)),
            expect("gpu:dcgm_limit_tdp_watts:value", ("h1", 0, "NVIDIA H100 80GB HBM3", 350),
                   ("h2", 1, "NVIDIA H200", 700)),   # the B200 reports none and the table has none: absent
        ]}]}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test))
    result = subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_list_marks_the_limit_fields_opt_in_and_explain_names_the_source():
    listed = run_cli("list")
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.strip().startswith("memory_overheat "))
    assert "some signals need opt-in counters" in line
    explained = run_cli("explain", "power_anomaly")
    assert "LIMITS" in explained.stdout and "DCGM_FI_DEV_ENFORCED_POWER_LIMIT" in explained.stdout
    assert "none for a model the table does not list" in explained.stdout
    runbook = (Path(__file__).parent.parent / "runbooks" / "thermal-throttling.md").read_text()
    assert "### Limits and their source" in runbook and "the default 83" in runbook


def test_power_capping_codes_never_alert():
    warning = _rules()["GPUDcgmHealthWarning"].expr
    assert 'gpu:dcgm_health:status{health_error_code!~"DCGM_FR_CLOCKS_EVENT_POWER|DCGM_FR_CLOCK_THROTTLE_POWER"}' in warning
    assert "DCGM_FR_POWER_UNREADABLE" not in warning  # a power fault still warns


def test_the_loss_median_needs_a_share_of_its_window(tmp_path):
    assert ("count_over_time(job:training_loss_new_steps:median[15m]) >= 5"
            in _rules()["job:training_loss:median_15m"].expr)  # 15 one-minute evaluations, a third
    config = tmp_path / "rulesgen.yaml"
    config.write_text("scrape_interval: 15s\nevaluation_interval: 30s\n")
    assert ("count_over_time(job:training_loss_new_steps:median[15m]) >= 10"
            in _rules(config)["job:training_loss:median_15m"].expr)


def test_ghost_loss_compares_the_episode_holding_now():
    rules = _rules()
    since = rules["job:training_loss_problem:since"].expr
    assert "last_over_time(job:training_loss_problem:since[15m] offset 1s)" in since
    ghost = rules["gpu:ghost_loss:minutes"].expr
    assert "job:training_loss_problem:since" in ghost and "min_over_time(job:training_loss_problem:timestamp" not in ghost
