"""Bad input: every problem reported as path:line:col: error[code]: message, exit 1, nothing written."""
import shutil
import subprocess

import pytest

from conftest import edit, errors_of, run_cli
from treeasserts import joins, numbers
from rulesgen.model import conventions
from rulesgen.builders.rules import build_rules
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.load.settings import Settings, load_settings
from rulesgen.promql.text import grouping_problem



def no_scenarios(tmp_path) -> str:
    """An empty scenarios folder (a missing one is a usage error: it would remove the generated tests)."""
    d = tmp_path / "no-scenarios"
    d.mkdir(exist_ok=True)
    return str(d)

def test_minimal_catalog_loads(minimal_catalog):
    catalog = load_catalog(minimal_catalog)
    assert [fm.id for fm in catalog.failure_modes] == ["hot_gpu"]
    assert catalog.metric("DCGM_FI_DEV_GPU_TEMP").field_id == 150


def test_unknown_metric_in_signal_expression(minimal_catalog):
    sig = minimal_catalog / "signals.yaml"
    edit(sig, "[[ v.DCGM_FI_DEV_GPU_TEMP ]]", "[[ v.DCGM_FI_DEV_GPU_TEMPP ]]")
    assert errors_of(load_catalog, minimal_catalog) == [
        f"{sig}:13:5: error[unknown-metric]: signal gpu:dcgm_gpu_temp:max: expression names unknown metric"
        " 'DCGM_FI_DEV_GPU_TEMPP' (did you mean 'DCGM_FI_DEV_GPU_TEMP'?)",
    ]


def test_duplicate_key_and_unknown_key_with_did_you_mean(minimal_catalog):
    m = minimal_catalog / "metrics.yaml"
    edit(m, "    help: GPU temperature (in C).\n", "    help: GPU temperature (in C).\n    help: again\n")
    fm = minimal_catalog / "failure_modes.yaml"
    edit(fm, "      - severity: warning", "      - severty: warning")
    p, f = str(m), str(fm)
    assert errors_of(load_catalog, minimal_catalog) == [
        f"{f}:17:9: error[missing-key]: failure mode hot_gpu alert: missing required key 'severity'",
        f"{f}:17:9: error[unknown-key]: failure mode hot_gpu alert: unknown key 'severty' (did you mean 'severity'?)",
        f"{p}:8:5: error[duplicate-key]: duplicate key 'help' (first defined on line 7)",
    ]


def test_duplicate_ids_unknown_metric_bad_duration(minimal_catalog):
    fm = minimal_catalog / "failure_modes.yaml"
    text = fm.read_text()
    second = text.split("\n", 1)[1]
    fm.write_text(text + second)
    edit(fm, "metrics: [DCGM_FI_DEV_GPU_TEMP]", "metrics: [DCGM_FI_DEV_GPU_TMP]")
    edit(fm, "for: 5m", "for: 5 minutes")
    f = str(fm)
    assert errors_of(load_catalog, minimal_catalog) == [
        f"{f}:9:15: error[unknown-metric]: failure mode hot_gpu: unknown metric 'DCGM_FI_DEV_GPU_TMP' (did you mean 'DCGM_FI_DEV_GPU_TEMP'?)",
        f"{f}:19:9: error[bad-duration]: failure mode hot_gpu alert.for: '5 minutes' is not a duration like 30s, 5m, 1h30m",
        f"{f}:26:5: error[duplicate-id]: failure mode 'hot_gpu' already defined on line 2",
    ]


def test_malformed_yaml_names_the_line(minimal_catalog):
    x = minimal_catalog / "xid.yaml"
    edit(x, "    class: reboot\n", "    class: [reboot\n")
    assert errors_of(load_catalog, minimal_catalog) == [
        f"{x}:5:16: error[yaml-syntax]: did not find expected ',' or ']'",
    ]


def test_unbalanced_promql_and_unknown_template_reference(minimal_catalog, tmp_path):
    fm = minimal_catalog / "failure_modes.yaml"
    edit(fm, "expr: gpu:dcgm_gpu_temp:max > [[ t.celsius ]]", "expr: (gpu:dcgm_gpu_temp:max > [[ t.celsius ]]")
    sig = minimal_catalog / "signals.yaml"
    edit(sig, "max by ([[ gpu ]]) ([[ v.DCGM_FI_DEV_GPU_TEMP ]])", "max by ([[ gpu ]]) ([[ v.DCGM_FI_DEV_GPU_TEMP ]] > [[ t.x ]])")
    out = tmp_path / "out"
    result = run_cli("render", "--catalog", str(minimal_catalog), "--scenarios", no_scenarios(tmp_path), "--out", str(out))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{fm}:20:9: error[promql-syntax]: failure mode hot_gpu (warning): unclosed '('",
        f"{sig}:13:5: error[unknown-reference]: signal gpu:dcgm_gpu_temp:max: 't' is undefined",
        "2 error(s); nothing written.",
    ]
    assert not out.exists()


def test_unknown_recording_rule_reference(minimal_catalog):
    from rulesgen.builders.rules import build_rules
    from rulesgen.load.settings import Settings
    fm = minimal_catalog / "failure_modes.yaml"
    edit(fm, "expr: gpu:dcgm_gpu_temp:max >", "expr: gpu:dcgm_gpu_tmp:max >")
    catalog = load_catalog(minimal_catalog)
    assert errors_of(build_rules, catalog, Settings()) == [
        f"{fm}:20:9: error[unknown-signal]: failure mode hot_gpu (warning): unknown recording rule"
        " 'gpu:dcgm_gpu_tmp:max' (did you mean 'gpu:dcgm_gpu_temp:max'?)",
    ]


@pytest.mark.parametrize("written, found", [
    ("> [[ t.celsius ]]1e400", "threshold celsius is written against other characters (__threshold__hot_gpu__celsius__1e400)"),
    ("> 1[[ t.celsius ]]", "a threshold ([[ t.NAME ]]) is written against a number or a name")])
def test_a_threshold_written_against_a_number_is_an_error_on_its_line(minimal_catalog, written, found):
    """The rule would read one number (901e400, 190); the tree the dashboards and covers read thresholds from
    would not see the threshold."""
    fm = minimal_catalog / "failure_modes.yaml"
    edit(fm, "> [[ t.celsius ]]", written)
    assert errors_of(build_rules, load_catalog(minimal_catalog), Settings()) == [
        f"{fm}:20:9: error[threshold-placement]: failure mode hot_gpu (warning): {found}: put a space or an operator beside it"]


@pytest.mark.parametrize("text, said", [("", []), ("- code: 79\n", ["must be a mapping of its keys, got a list"]),
                                        ("|-\n  xids: []\n", ["must be a mapping of its keys, got str"])])
def test_a_catalog_file_that_is_not_a_mapping_is_named_with_its_missing_keys(minimal_catalog, text, said):
    xid = minimal_catalog / "xid.yaml"
    xid.write_text(text)
    assert errors_of(load_catalog, minimal_catalog) == (
        [f"{xid}:1:1: error[bad-type]: xid.yaml {s}" for s in said]
        + [f"{xid}:1:1: error[missing-key]: xid.yaml: missing required key 'xids'"])


def test_config_errors(tmp_path, minimal_catalog):
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text("selectr: 'job=\"x\"'\nlabels:\n  host: hostname\n  clustr: k8s\nevaluation_interval: soon\n"
                   "failure_modes:\n  hot_gpu:\n    thresholds: {celsius: hot}\n    severity: {warning: urgent}\n")
    c = str(cfg)
    assert errors_of(load_settings, cfg) == [
        f"{c}:1:1: error[unknown-key]: rulesgen.yaml: unknown key 'selectr' (did you mean 'selector'?)",
        f"{c}:4:3: error[unknown-key]: labels: unknown key 'clustr' (did you mean 'cluster'?)",
        f"{c}:5:1: error[bad-duration]: rulesgen.yaml.evaluation_interval: 'soon' is not a duration like 30s, 5m, 1h30m",
        f"{c}:8:18: error[bad-type]: failure_modes.hot_gpu.thresholds.celsius must be a number, got 'hot'",
        f"{c}:9:16: error[bad-value]: failure_modes.hot_gpu.severity.warning must be one of critical, info, warning, got 'urgent'",
    ]


def test_label_names_prometheus_reads_as_a_number_or_keyword_are_config_errors(tmp_path):
    """`by (INF)` comes out of a config whose host label is INF, and promtool refuses the rule; the config's
    line says so first (promql-parser would take it)."""
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text("labels:\n  host: INF\n  cluster: nan\n  pod: pod\n  host_sources: [Hostname, Without]\n"
                   "job_metrics:\n  labels: {rank: inf}\n")
    c = str(cfg)
    assert errors_of(load_settings, cfg) == [
        f"{c}:2:3: error[bad-value]: labels.host: 'INF' cannot be a label of a rule's grouping: Prometheus reads it as a number in by (...)",
        f"{c}:3:3: error[bad-value]: labels.cluster: 'nan' cannot be a label of a rule's grouping: Prometheus reads it as a number in by (...)",
        f"{c}:5:3: error[bad-value]: labels.host_sources[1]: 'Without' cannot be a label of a rule's grouping: Prometheus reads it as a keyword in by (...)",
        f"{c}:7:12: error[bad-value]: job_metrics.labels.rank: 'inf' cannot be a label of a rule's grouping: Prometheus reads it as a number in by (...)",
    ]


@pytest.mark.parametrize("label, parses", [("INF", False), ("nan", False), ("Without", False), ("infra", True), ("on", True)])
def test_promtool_refuses_a_grouping_by_the_names_the_config_refuses(tmp_path, promtool, label, parses):
    (tmp_path / "r.yaml").write_text(f"groups:\n- name: g\n  rules:\n  - record: a:b:c\n    expr: max by ({label}) (up)\n")
    result = subprocess.run([promtool, "check", "rules", str(tmp_path / "r.yaml")], capture_output=True, text=True)
    assert (result.returncode == 0) == parses == (grouping_problem(label) is None), result.stdout + result.stderr


def test_baseline_settings_errors(tmp_path):
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text("baselines:\n  window: 3d\n  min_history: 20d\n  seasonality: daily\n  interval: 10m\n  windw: 7d\n")
    c = str(cfg)
    assert errors_of(load_settings, cfg) == [
        f"{c}:2:3: error[bad-value]: baselines.window must be whole days from 7d to 28d (14d by default): the history each GPU is compared with",
        f"{c}:3:3: error[bad-value]: baselines.min_history must be whole days from 1d up to the window (14d)",
        f"{c}:4:3: error[bad-value]: baselines.seasonality must be one of none, weekly, got 'daily'",
        f"{c}:5:3: error[bad-value]: baselines.interval must be 1m to 5m in whole minutes (long-window groups run at interval <= 5m)",
        f"{c}:6:3: error[unknown-key]: baselines: unknown key 'windw' (did you mean 'window'?)",
    ]


def test_config_names_unknown_failure_mode_and_threshold(tmp_path, minimal_catalog):
    from rulesgen.artifacts import load_inputs
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text("failure_modes:\n  hot_gpus:\n    for: 1m\n  hot_gpu:\n    thresholds: {celsiu: 90}\n")
    c = str(cfg)
    assert errors_of(load_inputs, minimal_catalog, cfg) == [
        f"{c}:2:3: error[unknown-failure-mode]: failure_modes: unknown failure mode 'hot_gpus' (did you mean 'hot_gpu'?)",
        f"{c}:5:18: error[unknown-threshold]: failure_modes.hot_gpu.thresholds: unknown threshold 'celsiu'"
        " (did you mean 'celsius'?) (known: celsius)",
    ]


def test_failed_render_changes_nothing(tmp_path, minimal_catalog):
    out = tmp_path / "out"
    ok = run_cli("render", "--catalog", str(minimal_catalog), "--scenarios", no_scenarios(tmp_path), "--out", str(out))
    assert ok.returncode == 0, ok.stderr
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert before
    edit(minimal_catalog / "failure_modes.yaml", "for: 5m", "for: 5x")
    bad = run_cli("render", "--catalog", str(minimal_catalog), "--scenarios", no_scenarios(tmp_path), "--out", str(out))
    assert bad.returncode == 1
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_usage_error_exits_2():
    result = run_cli("explain", "no_such_mode")
    assert result.returncode == 2
    assert "unknown failure mode 'no_such_mode'" in result.stderr


def test_promql_that_does_not_parse_names_the_catalog_line(minimal_catalog, tmp_path, promtool):
    """Balanced but invalid PromQL is caught at render by the PromQL parser and mapped back to the catalog
    line, with the rendered expression quoted (promtool, the final judge, runs after on what parses)."""
    fm = minimal_catalog / "failure_modes.yaml"
    edit(fm, "expr: gpu:dcgm_gpu_temp:max > [[ t.celsius ]]", "expr: gpu:dcgm_gpu_temp:max > > [[ t.celsius ]]")
    out = tmp_path / "out"
    result = run_cli("render", "--catalog", str(minimal_catalog), "--scenarios", no_scenarios(tmp_path), "--out", str(out))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{fm}:20:9: error[promql-syntax]: failure mode hot_gpu (warning): does not parse as PromQL "
        "(invalid promql query): gpu:dcgm_gpu_temp:max > > 85",
        "1 error(s); nothing written.",
    ]
    assert not out.exists()


def test_alertmanager_catalog_names_failure_modes_that_exist(minimal_catalog):
    """catalog/alertmanager.yaml holds the routing; a silence naming a renamed failure mode is an error
    at load (not an inhibit rule that silently never matches), and every severity needs a route."""
    am = minimal_catalog / "alertmanager.yaml"
    am.write_text("""\
route:
  group_wait: {value: 30s, source: default}
  group_interval: {value: 5m, source: default}
  repeat_interval: {value: 4h, source: default}
severities:
  - {severity: critical, receiver: page, repeat_interval: 1h, source: s}
  - {severity: warning, receiver: ticket, source: s}
silences:
  - {failure_mode: hot_gpus, scope: gpu, source: s}
""")
    assert errors_of(load_catalog, minimal_catalog) == [
        f"{am}:5:1: error[missing-key]: alertmanager.yaml: no route for severity info",
        f"{am}:9:6: error[unknown-failure-mode]: alertmanager.yaml: silence names failure mode 'hot_gpus': "
        "not in failure_modes.yaml (did you mean 'hot_gpu'?)",
    ]
    edit(am, "hot_gpus", "hot_gpu")
    edit(am, "  - {severity: warning", "  - {severity: info, receiver: none, source: s}\n  - {severity: warning")
    routing = load_catalog(minimal_catalog).routing
    assert [(r.severity, r.receiver, r.repeat_interval) for r in routing.severities] == [
        ("critical", "page", 3600), ("info", "none", None), ("warning", "ticket", None)]
    assert [(s.failure_mode, s.scope) for s in routing.silences] == [("hot_gpu", "gpu")]


def test_baseline_statistics_come_from_the_catalog_with_their_sources(tmp_path):
    """The constants of the baseline arithmetic live in catalog/baselines.yaml `statistics:`, each with a
    source; a missing source or an impossible value is an error naming the line, and the value given is
    the one the rules use."""
    catalog = tmp_path / "catalog"
    shutil.copytree(bundled_catalog_dir(), catalog)
    path = catalog / "baselines.yaml"
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "value: 1.4826" in text)
    edit(path, "    value: 1.4826\n", "    value: 0.5\n")
    edit(path, "  min_history_points:\n    value: 24\n    source: >-\n", "  min_history_points:\n    value: 48\n    sources: >-\n")
    found = errors_of(load_catalog, catalog)
    assert found[0] == (f"{path}:{line}:5: error[bad-value]: statistics mad_to_sigma.value must be at least 1.0, got 0.5")
    assert any(f"{path}:" in e and "error[missing-key]" in e and "source" in e for e in found[1:]), found
    assert any("error[unknown-key]" in e and "sources" in e for e in found[1:]), found
    edit(path, "    value: 0.5\n", "    value: 1.5\n")
    edit(path, "    sources: >-\n", "    source: >-\n")
    stats = load_catalog(catalog).baseline_statistics
    assert (stats.mad_to_sigma.value, stats.min_history_points.value) == (1.5, 48)
    rules = build_rules(load_catalog(catalog), Settings())
    # the z of every baseline is recorded once (gpu:dcgm_baseline_deviation:z); the alert reads that record
    z = next(r for r in rules.rules if r.record == conventions.BASELINE_DEVIATION_Z)
    assert any(j.op == "*" and j.lhs == "1.5" and j.rhs.startswith("last_over_time(node:dcgm_baseline_peers:mad")
               for j in joins(z.expr))
    assert 1.4826 not in numbers(z.expr)
    mean = next(r for r in rules.rules if r.record == conventions.BASELINE_HISTORY_MEAN)
    assert any(j.op == ">=" and j.rhs == "48" for j in joins(mean.expr))


def test_a_baseline_release_threshold_above_its_entry_threshold_is_an_error(tmp_path):
    """z_release holds a pending or firing baseline alert while the z stays above it: above z it would be no hold."""
    catalog = tmp_path / "catalog"
    shutil.copytree(bundled_catalog_dir(), catalog)
    path = catalog / "failure_modes.yaml"
    edit(path, "      - name: z_release\n        value: 2.5\n", "      - name: z_release\n        value: 3.2\n")
    [found] = errors_of(build_rules, load_catalog(catalog), Settings())
    assert "error[bad-value]" in found and "z_release (3.2) is above z (3)" in found, found
