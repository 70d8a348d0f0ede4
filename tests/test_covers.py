"""One alert per fault: a failure mode's `covers` (catalog) silences the symptoms of the same fault
on the same GPU, in the rules and in the Alertmanager inhibit rules. The scenarios prove it in
promtool: memory-overheat-hbm, pcie-errors-replay, ecc-correctable-rate and power-anomaly-hw-brake no
longer allow the baseline alert that used to co-fire."""
from dataclasses import replace

import yaml

from conftest import run_cli
from treeasserts import Join, canonical, has, joins
from rulesgen import artifacts as arts
from rulesgen.catalog import bundled_catalog_dir, load_catalog


def _plan():
    return arts.plan(bundled_catalog_dir(), None, None)


def test_catalog_states_the_hierarchy():
    modes = {m.id: m for m in load_catalog(bundled_catalog_dir()).failure_modes}
    assert ("baseline_deviation", "memory_temp") in modes["memory_overheat"].covers
    assert ("baseline_deviation", "pcie_replay_rate") in modes["pcie_errors"].covers
    assert ("straggler", "") in modes["thermal_throttling"].covers


def test_covered_alerts_are_silenced_in_the_rules():
    rules = {r.alert: r for r in _plan().rules.rules if r.alert}
    baseline = rules["GPUBaselineDeviation"].expr
    assert has(baseline, 'label_replace(ALERTS{alertstate=~"pending|firing", failure_mode=~"memory_overheat"}, '
                         '"signal", "memory_temp", "", "")')
    assert any(j.op == "unless" and j.on == ("cluster", "Hostname", "gpu", "UUID", "signal") for j in joins(baseline))
    covered = Join("unless", ("cluster", "Hostname", "gpu", "UUID"), None, "",
                   canonical('ALERTS{alertstate=~"pending|firing", failure_mode=~"power_anomaly|thermal_throttling"}'))
    assert covered in [replace(j, lhs="") for j in joins(rules["GPUStraggler"].expr)]
    # nothing covers it (it is only held: test_identity)
    assert "unless" not in [j.op for j in joins(rules["GPUMemoryOverheat"].expr)]


def test_covered_alerts_are_inhibited_in_alertmanager():
    text = next(a.text for a in _plan().artifacts if a.path == "alertmanager/rulesgen.yaml")
    inhibit = yaml.safe_load(text)["inhibit_rules"]
    assert {"source_matchers": ['failure_mode="memory_overheat"'],
            "target_matchers": ['failure_mode="baseline_deviation"', 'signal="memory_temp"'],
            "equal": ["cluster", "Hostname", "gpu", "UUID"]} in inhibit
    assert any(r["source_matchers"] == ['failure_mode="thermal_throttling"']
               and r["target_matchers"] == ['failure_mode="straggler"'] for r in inhibit)


def test_covers_naming_an_unknown_failure_mode_is_an_error(minimal_catalog, tmp_path):
    fm = minimal_catalog / "failure_modes.yaml"
    fm.write_text(fm.read_text().replace("    alerts:\n", "    covers:\n      - {failure_mode: hot_gpus}\n    alerts:\n", 1))
    result = run_cli("render", "--catalog", str(minimal_catalog), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "failure_modes.yaml:" in result.stderr and "error[unknown-failure-mode]" in result.stderr
    assert "hot_gpus" in result.stderr


# --- DCGM's health verdict (catalog/dcgm_health.yaml) and severity-aware covers ---------------------------

from rulesgen.builders import covers as cov  # noqa: E402
from rulesgen.load.resolved import SEVERITY_RANK, resolve  # noqa: E402
from rulesgen.load.settings import Settings  # noqa: E402


def test_health_table_states_who_sees_each_dcgm_code():
    catalog = load_catalog(bundled_catalog_dir())
    modes = {m.id: m for m in catalog.failure_modes}
    assert catalog.health.failure_mode == "dcgm_health" and modes["dcgm_health"].cover_label == "health_error_code"
    assert ("dcgm_health", "DCGM_FR_VOLATILE_DBE_DETECTED") in modes["ecc_uncorrectable"].covers
    assert ("dcgm_health", "DCGM_FR_NVLINK_ERROR_THRESHOLD") in modes["nvlink_errors"].covers
    # old go-dcgm names the exporter prints are covered like the new ones
    assert ("dcgm_health", "DCGM_FR_CLOCK_THROTTLE_THERMAL") in modes["thermal_throttling"].covers
    codes = {c.code: c for c in catalog.health.codes}
    assert codes["DCGM_FR_SRAM_THRESHOLD"].health_class == "drain" and not codes["DCGM_FR_SRAM_THRESHOLD"].failure_modes
    assert codes["DCGM_FR_NVLINK_ERROR_THRESHOLD"].health_class == "investigate"  # DCGM ISOLATE, NVSentinel IGNORE


def test_dcgm_verdict_is_covered_per_code_and_never_by_a_weaker_alert():
    rules = {r.alert: r for r in _plan().rules.rules if r.alert}
    critical, warning = rules["GPUDcgmHealthCritical"].expr, rules["GPUDcgmHealthWarning"].expr
    assert "DCGM_FR_SRAM_THRESHOLD" in critical.split("unless")[0]  # a drain code: critical on FAIL
    assert "unless on (cluster, Hostname, gpu, UUID, health_error_code)" in critical
    # memory_remap also warns (pending remap): only its critical alert may silence DCGM's critical verdict
    assert ('label_replace(ALERTS{alertstate=~"pending|firing", failure_mode=~"memory_remap", severity=~"critical"}, '
            '"health_error_code", "DCGM_FR_ROW_REMAP_FAILURE", "", "")') in critical
    assert ('label_replace(ALERTS{alertstate=~"pending|firing", failure_mode=~"nvlink_errors"}, '
            '"health_error_code", "DCGM_FR_NVLINK_ERROR_THRESHOLD", "", "")') in warning
    # nvlink_errors only warns: it cannot silence a critical verdict
    assert 'failure_mode=~"nvlink_errors"' not in critical
    # xid_repeated (critical) covers every xid_error alert of the GPU
    assert 'unless on (cluster, Hostname, gpu, UUID) ALERTS{alertstate=~"pending|firing", failure_mode=~"xid_repeated"}' \
        in rules["GPUXIDErrorInfo"].expr


def test_no_inhibit_rule_lets_a_weaker_alert_silence_a_stronger_one():
    catalog = load_catalog(bundled_catalog_dir())
    settings = Settings()
    resolved = resolve(catalog, settings)
    found = cov.inhibits(catalog, resolved)
    assert found
    for rule in found:
        sources = rule.source_severities or resolved.mode(rule.source).severities()
        targets = (rule.target_severity,) if rule.target_severity else resolved.mode(rule.target).severities()
        assert max(SEVERITY_RANK[s] for s in sources) <= min(SEVERITY_RANK[t] for t in targets), rule


def test_dcgm_covers_are_inhibited_in_alertmanager():
    text = next(a.text for a in _plan().artifacts if a.path == "alertmanager/rulesgen.yaml")
    inhibit = yaml.safe_load(text)["inhibit_rules"]
    remap = [r for r in inhibit if r["source_matchers"][0] == 'failure_mode="memory_remap"'
             and r["target_matchers"][0] == 'failure_mode="dcgm_health"']
    assert [r["source_matchers"] for r in remap] == [['failure_mode="memory_remap"', 'severity="critical"'],
                                                     ['failure_mode="memory_remap"']]
    assert remap[0]["target_matchers"][1] == 'severity="critical"' and remap[1]["target_matchers"][1] == 'severity="warning"'
    assert remap[0]["target_matchers"][2].startswith('health_error_code=~"DCGM_FR_PENDING_PAGE_RETIREMENTS|')
    assert {"source_matchers": ['failure_mode="xid_repeated"'], "target_matchers": ['failure_mode="xid_error"'],
            "equal": ["cluster", "Hostname", "gpu", "UUID"]} in inhibit


def test_health_table_naming_an_unknown_failure_mode_is_an_error(minimal_catalog, tmp_path):
    (minimal_catalog / "dcgm_health.yaml").write_text("""\
failure_mode: hot_gpu
label: health_error_code
watches:
  - {name: MEM, meaning: memory}
codes:
  - code: DCGM_FR_VOLATILE_DBE_DETECTED
    number: 4
    dcgm_severity: ISOLATE
    category: HARDWARE_MEMORY
    class: drain
    failure_modes: [ecc_uncorrectible]
    source: test
""")
    result = run_cli("render", "--catalog", str(minimal_catalog), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "dcgm_health.yaml:11:" in result.stderr and "error[unknown-failure-mode]" in result.stderr
    assert "ecc_uncorrectible" in result.stderr
