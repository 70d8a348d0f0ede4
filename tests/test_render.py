"""The rendered rules: deterministic, accepted by promtool and vmalert, carrying the contract."""
import os
import re
import shutil
import subprocess

import yaml

from rulesgen.model import conventions
from rulesgen.promql import printer as promql_print, tree as promql_tree

from conftest import ROOT, replay_fixture, run_cli, run_cli_process
from treeasserts import joins
from rulesgen.artifacts import plan
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.model.catalog import IDENTITY_GROUPS

DESIGN_FAILURE_MODES = {
    "gpu_lost", "ecc_uncorrectable", "ecc_correctable_rate", "memory_remap", "xid_error", "thermal_throttling",
    "memory_overheat", "power_anomaly", "pcie_errors", "nvlink_errors", "exporter_down", "dataloader_starvation",
    "memory_bandwidth_bound", "tensor_cores_idle", "low_occupancy", "misleading_utilization", "gpu_idle_allocated",
    "fb_memory_pressure", "pcie_bound", "straggler", "baseline_deviation", "fleet_capacity_degraded",
}


def rule_files(root):
    return sorted((root / "alerts" / "prometheus").glob("*.yaml"))


def alerts(root):
    for f in rule_files(root):
        for g in yaml.safe_load(f.read_text())["groups"]:
            for r in g["rules"]:
                if "alert" in r:
                    yield r


@replay_fixture
def rendered_elsewhere(request):
    """`rendered`'s render again, by a process of its own under another string hash seed: nothing it does can
    come from this process's memos, and any order that follows set or dict hashing of strings would differ."""
    again = request.getfixturevalue("tmp_path_factory").mktemp("render-elsewhere") / "again"
    env = {**os.environ, "PYTHONHASHSEED": "4242"}

    def job():
        return run_cli_process("render", "--scenario-tests", "--out", str(again), env=env), again
    return {"again": job}


def test_render_is_byte_identical_twice(rendered, rendered_elsewhere):
    result, again = rendered_elsewhere["again"]
    assert result.returncode == 0, result.stderr
    first = {p.relative_to(rendered): p.read_bytes() for p in rendered.rglob("*") if p.is_file()}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert first == second and first


def test_promtool_check_rules_accepts_every_file(rendered, promtool):
    files = rule_files(rendered)
    assert len(files) >= 4
    proc = subprocess.run([promtool, "check", "rules", *map(str, files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_vmalert_dry_run_accepts_every_file(rendered, vmalert):
    proc = subprocess.run([vmalert, "-dryRun", *[f"-rule={f}" for f in rule_files(rendered)]],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # vmalert parses every expression with its MetricsQL parser; a bad one is logged as an error.
    assert "cannot parse" not in proc.stdout + proc.stderr


def test_every_design_failure_mode_alerts(rendered):
    fired_modes = {a["labels"]["failure_mode"] for a in alerts(rendered)}
    assert DESIGN_FAILURE_MODES <= fired_modes


def test_every_alert_carries_the_contract(rendered):
    catalog = load_catalog(bundled_catalog_dir())
    ids = {fm.id for fm in catalog.failure_modes}
    for a in alerts(rendered):
        labels, ann = a["labels"], a["annotations"]
        assert labels["severity"] in {"critical", "warning", "info"}, a["alert"]
        assert labels["action"] in {"drain", "investigate", "optimize"}, a["alert"]
        assert labels["failure_mode"] in ids, a["alert"]
        assert {"summary", "description", "runbook_url", "dashboard_url"} <= set(ann), a["alert"]
        assert a["alert"].startswith("GPU") and a["for"], a["alert"]
        assert "$value" not in "".join(labels.values()), a["alert"]
        fm = catalog.failure_mode(labels["failure_mode"])
        if fm.scope == "gpu" and fm.group in IDENTITY_GROUPS:
            # About the GPU: its identity only (the job is named in the annotations), held through gaps.
            assert ("namespace", "pod") not in [j.group_left for j in joins(a["expr"])], a["alert"]
            assert a["keep_firing_for"] == "5m", a["alert"]
            assert "{{ $labels.gpu }}" in ann["summary"] + ann["description"], a["alert"]
        elif fm.scope == "gpu":
            # About a job: the pod on the GPU is joined into every GPU-scope efficiency and job alert.
            assert ("namespace", "pod") in [j.group_left for j in joins(a["expr"])], a["alert"]
            assert "keep_firing_for" not in a, a["alert"]
            assert "{{ $labels.gpu }}" in ann["summary"] + ann["description"], a["alert"]


def test_drain_only_for_certain_hardware_failures(rendered):
    drain = {a["labels"]["failure_mode"] for a in alerts(rendered) if a["labels"]["action"] == "drain"}
    # xid_repeated: NVIDIA's reset-class XIDs again and again; dcgm_health: DCGM and NVSentinel both say isolate;
    # nvlink_fabric: Fabric Manager failed or never registered the GPU (DCGM's health watch fails it, CUDA refuses
    # it on NVSwitch systems) or a route of its fabric is unhealthy.
    assert drain == {"gpu_lost", "ecc_uncorrectable", "memory_remap", "xid_error", "xid_repeated", "dcgm_health",
                     "nvlink_fabric"}
    for a in alerts(rendered):
        assert (a["labels"]["severity"] == "critical") == (a["labels"]["action"] == "drain"), a["alert"]


def test_no_range_function_reads_a_long_window_of_raw_samples(rendered):
    """Long windows (>= 1h) only over recorded series: raw DCGM series are scraped every 15-30 s."""
    for f in rule_files(rendered):
        for g in yaml.safe_load(f.read_text())["groups"]:
            for r in g["rules"]:
                for s in promql_tree.selectors(r["expr"]):
                    if s.range is None or s.range < 3600:
                        continue
                    what = f"{r.get('record') or r.get('alert')}: {promql_print.selector_text(s)}"
                    assert s.names and all(promql_tree.is_record(n) for n in s.names), what
                    if s.range >= 86400:  # days: only the daily sums (1 point a day) or event series (1 per event)
                        assert all(conventions.is_sparse(n) for n in s.names), what


def test_committed_outputs_are_fresh():
    p = plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", ROOT / "fixtures" / "scenarios")
    from rulesgen.artifacts import differences
    assert differences(ROOT, p.artifacts) == []


def test_check_fails_on_stale_output(rendered_outputs, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(rendered_outputs, out)
    target = out / "alerts" / "prometheus" / "health.yaml"
    target.write_text(target.read_text().replace("for: 1m", "for: 2m", 1))
    result = run_cli("check", "--out", str(out))
    assert result.returncode == 1
    assert "alerts/prometheus/health.yaml: differs from a fresh render" in result.stderr


def test_model_patterns_are_mutually_exclusive():
    """Limits merge models that share a value into one selector, which is right only if no
    modelName matches two patterns."""
    import re
    catalog = load_catalog(bundled_catalog_dir())
    names = ["NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-40GB",
             "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA L40S", "NVIDIA L4",
             "NVIDIA A10", "NVIDIA A30", "Tesla V100-SXM2-32GB"]
    for name in names:
        hits = [m.id for m in catalog.gpu_models if re.fullmatch(m.match, name)]
        assert len(hits) == 1, (name, hits)


def test_explain_traces_each_alert_from_the_catalog_to_its_files():
    """`rulesgen explain` names the path: catalog file:line, alert and group, the records it reads
    (transitively, with their catalog lines), the rule files, dashboard panel, runbook and tests."""
    result = run_cli("explain", "thermal_throttling", "--scenario-tests")
    assert result.returncode == 0, result.stderr
    path = result.stdout.split("\nPATH (catalog -> rules -> files)\n", 1)[1]
    lines = [x.strip() for x in path.splitlines()]
    assert lines[0].startswith("catalog/failure_modes.yaml:") and lines[0].endswith("alert (warning)")
    # the group a split leaves it in (README "Engine fit"): rulesgen-health-alerts[-reads-alerts][-N]
    assert re.fullmatch(r"-> GPUThermalThrottling  group rulesgen-health-alerts(-reads-alerts)?(-\d+)? in "
                        r"alerts/prometheus/health\.yaml", lines[1]), lines[1]
    # topology: sharded: the shard tier's file and objects carry it, and (this repository's
    # sharding.single_server_objects) the single server's object
    assert "alerts/sharded/shard/health.yaml" in lines[2] and "tests/vmalert/rules/levels.yaml" in lines[2]
    assert "deploy/prometheus-operator-sharded/rulesgen-shard-health.yaml" in lines[2]
    assert "deploy/prometheus-operator/rulesgen-health.yaml" in lines[2]
    assert any(re.match(r"gpu:dcgm_gpu_temp:max  group rulesgen-gpu-signals-\d+ in alerts/prometheus/recording\.yaml; "
                        r"from catalog/signals\.yaml:", x) for x in lines)
    # transitively: the model limit reads the GPU count, which reads the reporting timestamp
    assert any(x.startswith("gpu:dcgm_reporting:timestamp  group") for x in lines)
    assert any(x.startswith("exporter series: DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_GPU_TEMP_CELSIUS") for x in lines)
    read_back = next(x for x in lines if x.startswith("read back (ALERTS) by "))
    assert {"GPUBaselineDeviation", "GPUStraggler"} <= set(read_back.removeprefix("read back (ALERTS) by ").split(", "))
    assert any(x.startswith('dashboard: dashboards/gpu-health.json panel ') for x in lines)
    assert "runbook: runbooks/thermal-throttling.md (the alerts' runbook_url)" in lines
    tests = next(x for x in lines if x.startswith("tests expecting it: "))
    assert "tests/promtool/thermal-throttling-cooling-failure.yaml" in tests.removeprefix("tests expecting it: ").split(", ")
    # this repository's config does not render them (outputs.scenario_tests: false): explain says so
    plain = run_cli("explain", "thermal_throttling")
    assert "  tests expecting it: not among the outputs (outputs.scenario_tests: false; --scenario-tests lists them)" \
        in plain.stdout.splitlines(), plain.stdout
