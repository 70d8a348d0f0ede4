"""Fleet SLOs (catalog/slos.yaml, rulesgen.yaml `slos:`, builders/slos.py): the config's checks at their lines,
the burn factors from the period, and the rendered rules replayed by promtool and vmalert-tool over
synthetic fleets whose arithmetic is worked out below: a node lost for an hour pages a 32-GPU fleet, one GPU
in 104 drained for days tickets and never pages, exporter restarts spend nothing, a cluster whose inventory
vanishes says so."""
from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import jsonschema
import pytest
import shard_equality as se
import yaml
from conftest import ROOT, engine_param, run_cli

from rulesgen.artifacts import load_inputs
from rulesgen.builders.slos import build_slo_file
from rulesgen.builders.vmalert_tests import vmalert_rule_file
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.load.scenarios import Scenario
from rulesgen.load.settings import load_settings
from rulesgen.render.prometheus import render_rule_file

SLO_CONFIG = """\
slos:
  gpu_capacity:
    objective: 99.5
    period: 30d
  training_time:
    objective: 95
  job_success:
    objective: 99
"""
MODEL = "NVIDIA H100 80GB HBM3"
STEP = 300  # the synthetic fleets' sample and evaluation interval (5m)


def _render(tmp_path, config: str):
    (tmp_path / "rulesgen.yaml").write_text(config)
    result = run_cli("render", "--config", str(tmp_path / "rulesgen.yaml"), "--out", str(tmp_path / "out"), "--no-scenario-tests")
    return result, tmp_path / "out"


@pytest.fixture(scope="module")
def slo_render(tmp_path_factory):
    result, out = _render(tmp_path_factory.mktemp("slo"), SLO_CONFIG)
    assert result.returncode == 0, result.stderr
    return out


def _groups(out):
    return yaml.safe_load((out / "alerts/prometheus/slos.yaml").read_text())["groups"]


def _rules(out) -> dict:
    return {r.get("record") or r.get("alert"): r for g in _groups(out) for r in g["rules"]}


# --- configuration --------------------------------------------------------------------------------

@pytest.mark.parametrize("body, line, expected", [
    ("objective: 100", 3, "slos.gpu_capacity.objective must be within [50, 99.999], got 100"),
    ("objective: 99.5\n    period: 14d", 4, "slos.gpu_capacity.period: 14d is not a supported period"),
    ("tiers: {fast: pager}", 3, "slos.gpu_capacity.tiers.fast"),
    ("tiers: {fastest: page}", 3, "unknown burn tier 'fastest'"),
    ("group_by: [Hostname]", 2, "group_by must keep 'cluster'"),
    ("group_by: [cluster, namespace]", 2, "namespace is not a label of what the SLO counts (a GPU: cluster, Hostname"),
])
def test_a_bad_slo_setting_is_named_at_its_line(tmp_path, body, line, expected):
    result, _ = _render(tmp_path, f"slos:\n  gpu_capacity:\n    {body}\n")
    assert result.returncode == 1 and expected in result.stderr, result.stderr
    assert f"rulesgen.yaml:{line}:" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("config, line, expected", [
    ("slos:\n  training_time:\n    group_by: [cluster, Hostname]\n", 2,
     "Hostname is not a label of what the SLO counts (a job: cluster, namespace, workload)"),
    ("job_metrics:\n  enabled: false\nslos:\n  training_time: {}\n", 4, "job_metrics.enabled: false turns off"),
    ("job_metrics:\n  step: training_loss\nslos:\n  training_time: {}\n", 2,
     "loss and step are both 'training_loss'"),
    ("slos:\n  job_success:\n    group_by: [cluster, workload]\n", 2,
     "workload is not a label of what the SLO counts (a Kubernetes Job: cluster, namespace)"),
])
def test_a_bad_training_time_setting_is_named_at_its_line(tmp_path, config, line, expected):
    result, _ = _render(tmp_path, config)
    assert result.returncode == 1 and expected in result.stderr and f"rulesgen.yaml:{line}:" in result.stderr, result.stderr


def test_training_time_tickets_at_every_tier_and_groups_by_tenant(tmp_path):
    """Lost training time is lost productivity, not a hardware failure: its own tier defaults are tickets
    (catalog/slos.yaml), which rulesgen.yaml may still move; a tenant's (namespace's) SLO keeps its label."""
    result, out = _render(tmp_path, "slos:\n  training_time:\n    group_by: [cluster, namespace]\n")
    assert result.returncode == 0, result.stderr
    rules = _rules(out)
    assert "TrainingTimeSLOBurnPage" not in rules
    ticket = rules["TrainingTimeSLOBurnTicket"]
    assert [f"ratio_{w} /" in ticket["expr"] for w in ("1h", "6h", "1d", "3d")] == [True] * 4
    assert rules["slo:training_time_total:count"]["expr"] == "sum by (cluster, namespace) (job:slo_training_time_total:count)"
    assert "{{ $labels.namespace }}" in ticket["annotations"]["summary"]
    assert "slo:training_time_bad_by_reason:count" in ticket["annotations"]["description"]
    assert "of training GPU-minutes" in ticket["annotations"]["description"]
    result, out = _render(tmp_path, "slos:\n  training_time:\n    tiers: {fast: page}\n")
    assert result.returncode == 0 and "ratio_1h /" in _rules(out)["TrainingTimeSLOBurnPage"]["expr"], result.stderr


def test_unknown_slo_id(tmp_path):
    result, _ = _render(tmp_path, "slos:\n  gpu_capacty:\n    objective: 99\n")
    assert result.returncode == 1 and "unknown SLO 'gpu_capacty'" in result.stderr and "gpu_capacity" in result.stderr


def test_settings_keep_what_the_user_set(tmp_path):
    path = tmp_path / "rulesgen.yaml"
    path.write_text("slos:\n  gpu_capacity:\n    objective: 99.9\n    period: 7d\n    tiers: {background: off, slow: page}\n")
    (slo,) = load_settings(path).slos
    assert (slo.objective, slo.period, dict(slo.tiers)) == (99.9, 7 * 86400, {"background": "off", "slow": "page"})


def test_no_slos_section_renders_no_slo(rendered_outputs):
    assert not (rendered_outputs / "alerts/prometheus/slos.yaml").exists()
    assert not (rendered_outputs / "runbooks/slo-burn.md").exists()
    assert not (rendered_outputs / "slos").exists()


# --- the rules ------------------------------------------------------------------------------------

@pytest.mark.parametrize("period, factors", [
    ("30d", {"1h": "14.4", "6h": "6", "1d": "3", "3d": "1"}),
    ("28d", {"1h": "13.44", "6h": "5.6", "1d": "2.8", "3d": "0.933333"}),
    ("7d", {"1h": "3.36", "6h": "1.4", "1d": "0.7", "3d": "0.233333"}),
])
def test_burn_factors_come_from_the_period_and_the_budget_share(tmp_path, period, factors):
    result, out = _render(tmp_path, f"slos:\n  gpu_capacity:\n    objective: 99\n    period: {period}\n")
    assert result.returncode == 0, result.stderr
    rules = _rules(out)
    text = rules["GPUCapacitySLOBurnPage"]["expr"] + rules["GPUCapacitySLOBurnTicket"]["expr"]
    for window, factor in factors.items():
        assert f"slo:gpu_capacity:ratio_{window} / 0.01 > {factor}\n" in text, (window, text)
    assert rules["slo:gpu_capacity_error_budget:remaining"]["expr"] == f"1 - slo:gpu_capacity:ratio_{period} / 0.01"


def test_burn_alerts_carry_the_contract_labels_and_a_tier_can_move_or_go(tmp_path):
    result, out = _render(tmp_path, "slos:\n  gpu_capacity:\n    tiers: {medium: ticket, background: off}\n")
    assert result.returncode == 0, result.stderr
    rules = _rules(out)
    page, ticket = rules["GPUCapacitySLOBurnPage"], rules["GPUCapacitySLOBurnTicket"]
    assert page["labels"] == {"action": "investigate", "burn_tier": "page", "failure_mode": "slo_burn",
                              "severity": "critical", "slo": "gpu_capacity"}
    assert ticket["labels"]["burn_tier"] == "ticket" and ticket["labels"]["severity"] == "warning"
    assert "ratio_6h" in ticket["expr"] and "ratio_6h" not in page["expr"]
    assert "ratio_3d" not in ticket["expr"] and "slo:gpu_capacity:ratio_3d" not in rules
    for alert in (page, ticket):
        assert alert["annotations"]["runbook_url"].endswith("/runbooks/slo-burn.md")
        assert "{{ $labels.cluster }}" in alert["annotations"]["summary"]
        assert "slo:gpu_capacity_bad_by_failure_mode:count" in alert["annotations"]["description"]
    assert "burn_tier" not in rules["GPUCapacitySLOInputAbsent"]["labels"]
    # the catalog's budget policy, tightest step first: only the step the budget left is under applies
    text = page["annotations"]["description"]
    assert (text.index("{{ if lt (. | first | value) 0.0 }}Budget policy (budget spent): The budget is spent.")
            < text.index("{{ else if lt (. | first | value) 0.25 }}Budget policy (under 25% left): Freeze driver"))


def test_an_slo_alerts_dashboard_link_selects_its_cluster_whatever_label_carries_it(tmp_path):
    result, out = _render(tmp_path, "labels:\n  cluster: region\nslos:\n  gpu_capacity: {}\n")
    assert result.returncode == 0, result.stderr
    rules = _rules(out)
    for name in ("GPUCapacitySLOBurnPage", "GPUCapacitySLOBurnTicket", "GPUCapacitySLOInputAbsent"):
        url = rules[name]["annotations"]["dashboard_url"]
        assert "/gpu-fleet-overview?" in url and url.endswith("var-cluster={{ $labels.region }}"), (name, url)


def test_long_windows_read_hourly_sums_and_the_hourly_group_runs_hourly(slo_render):
    groups = {g["name"]: g for g in _groups(slo_render)}
    hourly = groups["rulesgen-slo-gpu-capacity-hourly"]
    assert hourly["interval"] == "1h"
    assert {r["record"] for r in hourly["rules"]} == {"slo:gpu_capacity_bad:sum_1h", "slo:gpu_capacity_total:sum_1h",
                                                      "slo:gpu_capacity_bad_by_failure_mode:sum_1h",
                                                      "node:slo_gpu_capacity_bad:sum_1h", "model:slo_gpu_capacity_bad:sum_1h",
                                                      "slo:gpu_capacity_bad_by_driver:sum_1h",
                                                      "model:slo_gpu_capacity_interruptions:sum_1h", "model:slo_gpu_capacity_total:sum_1h"}
    assert all(r["expr"].startswith("sum_over_time(") and r["expr"].endswith("[1h])") for r in hourly["rules"])
    rules = _rules(slo_render)
    for window in ("1d", "3d", "30d"):
        assert f"sum_1h[{window}]" in rules[f"slo:gpu_capacity:ratio_{window}"]["expr"]
    for window in ("5m", "30m", "1h", "2h", "6h"):
        assert f"_bad:count[{window}]" in rules[f"slo:gpu_capacity:ratio_{window}"]["expr"]
    assert all(len(g["rules"]) <= 20 for g in _groups(slo_render))


def test_a_burn_pages_only_while_its_short_window_burns_too(slo_render, promtool, tmp_path):
    """The multiwindow rule (Google SRE workbook, "Alerting on SLOs"): the 1h window above 14.4x pages only while the
    5m window is too, so a burn that stopped resolves in minutes, not when the hour forgets it. The page alert alone,
    over its ratio records: both windows at 20 times the budget for 10 minutes, then the 5m window back to 0."""
    page = _rules(slo_render)["GPUCapacitySLOBurnPage"]
    rules = tmp_path / "page.yaml"
    rules.write_text(yaml.safe_dump({"groups": [{"name": "page", "interval": "1m", "rules": [page]}]}))
    ratio = 'slo:gpu_capacity:ratio_{}{{cluster="c1"}}'
    series = [{"series": ratio.format("1h"), "values": "0.1x20"}, {"series": ratio.format("5m"), "values": "0.1x9 0x10"},
              {"series": ratio.format("6h"), "values": "0x20"}, {"series": ratio.format("30m"), "values": "0x20"}]
    firing = _labels({"alertname": "GPUCapacitySLOBurnPage", "alertstate": "firing", "cluster": "c1", **page["labels"]})
    checks = [{"expr": 'ALERTS{alertname="GPUCapacitySLOBurnPage", alertstate="firing"} * 1', "eval_time": f"{m}m",
               "exp_samples": [{"labels": firing, "value": 1}] if m < 10 else []} for m in (2, 8, 11, 15)]
    test = tmp_path / "test.yaml"
    test.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m",
                                    "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": checks}]}))
    result = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_page_inhibits_ticket_of_the_same_slo_and_cluster(slo_render):
    inhibit = yaml.safe_load(next((slo_render / "alertmanager").glob("*.yaml")).read_text())["inhibit_rules"]
    assert {"source_matchers": ['failure_mode="slo_burn"', 'slo="gpu_capacity"', 'burn_tier="page"'],
            "target_matchers": ['failure_mode="slo_burn"', 'slo="gpu_capacity"', 'burn_tier="ticket"'],
            "equal": ["cluster"]} in inhibit


def test_the_slo_rules_lint_clean(slo_render):
    result = run_cli("lint", cwd=slo_render)
    assert result.returncode == 0 and " 0 finding(s)" in result.stderr, result.stdout + result.stderr


def test_an_scenario_expecting_slo_burn_needs_a_config_naming_an_slo(tmp_path):
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "s.yaml").write_text(
        "name: s\ndescription: d\ninterval: 1m\nduration: 10m\nseries:\n"
        "  - series: 'DCGM_FI_DEV_GPU_TEMP{job=\"dcgm-exporter\", Hostname=\"n\", gpu=\"0\", UUID=\"U\", modelName=\"m\"}'\n"
        "    values: '40x10'\nexpect:\n  - failure_mode: slo_burn\n    labels: {slo: gpu_capacity}\n    after: 1m\n    within: 5m\n")
    (tmp_path / "rulesgen.yaml").write_text("urls: {}\n")
    result = run_cli("render", "--config", str(tmp_path / "rulesgen.yaml"), "--scenarios", str(scenarios),
                     "--scenario-tests", "--out", str(tmp_path / "out"))
    assert result.returncode == 1 and "expects slo_burn" in result.stderr and "s.yaml:" in result.stderr, result.stderr


# --- replays of synthetic fleets ----------------------------------------------------------------------

def _gpu(cluster, host, gpu):
    return (f'cluster="{cluster}", Hostname="{host}", gpu="{gpu}", UUID="GPU-{host}-{gpu}", '
            f'modelName="{MODEL}"')


def _values(steps: int, gaps=()) -> str:
    """1 at every step of [0, steps], `_` inside each (start, end) gap, a stale marker at its start."""
    out = []
    for i in range(steps + 1):
        inside = [(a, b) for a, b in gaps if a <= i < b]
        out.append(("stale" if inside[0][0] == i else "_") if inside else "1")
    return " ".join(out)


def _alert(labels: str, steps: int, pending: tuple[int, int] | None, firing: tuple[int, int] | None):
    """ALERTS series of one alert: pending over [a, b), firing over [a, b) (steps)."""
    series = []
    for state, span in (("pending", pending), ("firing", firing)):
        if span:
            values = " ".join("1" if span[0] <= i < span[1] else "_" for i in range(steps + 1))
            series.append({"series": f'ALERTS{{alertstate="{state}", {labels}}}', "values": values})
    return series


def _h(hours: float) -> int:
    return int(hours * 3600 / STEP)


def _node_lost_fleet(healthy: bool = False):
    """32 GPUs (4 nodes of 8) for 3 days; node n4's exporter dies at 66h for an hour: exporter_down pending 5
    minutes, firing 66h05m-67h05m. Its 8 GPUs are 25% of the fleet: the 1h window passes 14.4x (7.2%) after 4
    bad evaluations (8.3%), ~66h25m. The 6h window passes 6x (3%) after 9 (66h45m): 13 evaluations x 8 GPUs
    spend 520 GPU-minutes, more than 5% of the month's 6,912, so the page holds until the 30m window has no bad
    evaluation left (67h35m). With 66h of healthy history the 1d and 3d windows stay under their factors (3d:
    65 bad minutes x 8 / (4,320 x 32) = 0.38% < 0.5%): no ticket. Node n2's exporter restarts every 6 hours:
    5 minutes without GPUs, exporter_down pending, never firing: nothing spent. healthy: its twin, n4 never lost:
    no SLO alert at any time."""
    steps = _h(72)
    lost, back = (steps + 1, steps + 1) if healthy else (_h(66), _h(67) + 1)
    restarts = [(_h(h), _h(h) + 1) for h in range(6, 72, 6)]
    series = []
    for n in range(1, 5):
        gaps = [(lost, back)] if n == 4 else restarts if n == 2 else []
        driver = "560.35.03" if n == 4 else "550.90.07"  # n4 runs the new driver: the budget split names it
        for g in range(8):
            series.append({"series": f"gpu:dcgm_reporting:timestamp{{{_gpu('c1', f'n{n}', g)}}}",
                           "values": _values(steps, gaps)})
            series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{job="dcgm-exporter", {_gpu("c1", f"n{n}", g)}, '
                                     f'DCGM_FI_DRIVER_VERSION="{driver}"}}', "values": _values(steps, gaps)})
    node = 'alertname="DCGMExporterDown", cluster="c1", Hostname="{}", failure_mode="exporter_down", severity="warning", action="investigate"'
    if not healthy:
        series += _alert(node.format("n4"), steps, (lost, lost + 1), (lost + 1, back + 1))
    for a, _ in restarts:
        series += _alert(node.format("n2"), steps, (a, a + 1), None)
    if not healthy:  # a second cause: GPU 3 of n1 drained for an hour on day 2 (no tier: 1 GPU of 32 is 6.25x for 1h)
        series += _alert(f'alertname="GPUEccUncorrectable", {_gpu("c1", "n1", 3)}, failure_mode="ecc_uncorrectable", '
                         'severity="critical", action="drain"', steps, None, (_h(30), _h(31)))
    if healthy:
        return steps, series, _quiet(steps, ("GPUCapacitySLOBurnPage", "GPUCapacitySLOBurnTicket")), [
            (steps, "sum_over_time(slo:gpu_capacity_bad:count[3d])", [({"cluster": "c1"}, 0)])]
    page = {"burn_tier": "page", "failure_mode": "slo_burn", "slo": "gpu_capacity", "cluster": "c1",
            "severity": "critical", "action": "investigate"}
    checks = [(_h(66) + 3, "GPUCapacitySLOBurnPage", []), (_h(66) + 5, "GPUCapacitySLOBurnPage", [page]),
              (_h(67), "GPUCapacitySLOBurnPage", [page]), (_h(67) + 3, "GPUCapacitySLOBurnPage", [page]),
              (_h(67) + 7, "GPUCapacitySLOBurnPage", []),
              (_h(67), "GPUCapacitySLOBurnTicket", []), (_h(71), "GPUCapacitySLOBurnTicket", []),
              (_h(36), "GPUCapacitySLOBurnPage", []), (_h(36) + 1, "GPUCapacitySLOInputAbsent", [])]
    # The budget split: two causes (exporter_down on n4, whose driver is remembered while its GPUs are gone, and the
    # drained GPU of n1) spend all that is spent, split by cause, node and driver, one model; n2 nothing.
    whole = "round(sum by (cluster) ({}) + on (cluster) group_left () slo:gpu_capacity_error_budget:remaining, 0.001)"
    spenders = "count by (cluster) (slo:gpu_capacity_error_budget:spent_by_{} > 0)"
    values = [(_h(72), whole.format(f"slo:gpu_capacity_error_budget:spent_by_{dim}"), [({"cluster": "c1"}, 1)])
              for dim in ("failure_mode", "node", "model", "driver")]
    values += [(_h(72), spenders.format(dim), [({"cluster": "c1"}, n)]) for dim, n in
               (("failure_mode", 2), ("node", 2), ("model", 1), ("driver", 2))]
    # the exporter's hour spends 13 evaluations of 8 GPUs, the drained GPU 12 of 1
    values.append((_h(72), 'round(slo:gpu_capacity_error_budget:spent_by_failure_mode{failure_mode="exporter_down"}'
                           ' / on (cluster) slo:gpu_capacity_error_budget:spent_by_failure_mode{failure_mode="ecc_uncorrectable"}, 0.01)',
                   [({"cluster": "c1"}, round(13 * 8 / 12, 2))]))
    # a node's exporter down interrupts no GPU: its hardware may be fine; the drain does (report only: interruptions
    # per 1,000 GPU-days)
    values.append((steps, "sum_over_time(model:slo_gpu_capacity_interruptions:count[3d])", [({"cluster": "c1", "modelName": MODEL}, 1)]))
    return steps, series, checks, values


def _one_in_a_hundred_fleet():
    """104 GPUs (13 nodes of 8) for 3 days; GPU 3 of n7 has a firing drain alert (ecc_uncorrectable) from 24h
    to the end: 1/104 = 0.96% of the GPU-minutes, under the page factors (7.2%, 3%) and the 1d tier's 1.5%,
    over the background tier's 0.5% once the bad hours are 52% of the 3d window's: ~50h (hourly sums: the
    ratio lags up to an hour). The ticket then holds to the end (at 72h: 0.64% over 3 days, 0.96% over 6h)."""
    steps = _h(72)
    series = [{"series": f"gpu:dcgm_reporting:timestamp{{{_gpu('c1', f'n{n}', g)}}}", "values": _values(steps)}
              for n in range(1, 14) for g in range(8)]
    series += _alert(f'alertname="GPUEccUncorrectable", {_gpu("c1", "n7", 3)}, failure_mode="ecc_uncorrectable", '
                     'severity="critical", action="drain"', steps, None, (_h(24), steps + 1))
    ticket = {"burn_tier": "ticket", "failure_mode": "slo_burn", "slo": "gpu_capacity", "cluster": "c1",
              "severity": "warning", "action": "investigate"}
    checks = [(_h(48), "GPUCapacitySLOBurnTicket", []), (_h(52), "GPUCapacitySLOBurnTicket", [ticket]),
              (_h(72), "GPUCapacitySLOBurnTicket", [ticket])]
    checks += [(_h(h), "GPUCapacitySLOBurnPage", []) for h in (25, 30, 52, 72)]
    # Report only: one interruption (the drain alert's start), per 1,000 GPU-days. The rules take each evaluation
    # for a minute (rulesgen.yaml's interval): 865 evaluations of 104 GPUs are 62.5 GPU-days, so 16 per 1,000.
    model = {"cluster": "c1", "modelName": MODEL}
    values = [(_h(24) + 1, "sum_over_time(model:slo_gpu_capacity_interruptions:count[10m])", [(model, 1)]),
              (steps, "sum_over_time(model:slo_gpu_capacity_interruptions:count[3d])", [(model, 1)]),
              (steps, "round(model:slo_gpu_capacity_interruptions:per_1000_gpu_days * 1)", [(model, 16)])]
    return steps, series, checks, values


def _cluster_vanishes_fleet():
    """Two clusters of 8 GPUs; c2's exporters are removed from service discovery at 3h (no alert: its GPUs just
    stop): the input-absent alert names c2 15 minutes later and stays until the day has passed; c1 counts on."""
    steps = _h(6)
    gone = _h(3)
    series = [{"series": f"gpu:dcgm_reporting:timestamp{{{_gpu(c, 'n1', g)}}}",
               "values": _values(steps, [(gone, steps + 1)] if c == "c2" else [])}
              for c in ("c1", "c2") for g in range(8)]
    absent = {"failure_mode": "slo_burn", "slo": "gpu_capacity", "cluster": "c2", "severity": "warning",
              "action": "investigate"}
    checks = [(gone + 2, "GPUCapacitySLOInputAbsent", []), (gone + 4, "GPUCapacitySLOInputAbsent", [absent]),
              (_h(6), "GPUCapacitySLOInputAbsent", [absent]), (_h(6), "GPUCapacitySLOBurnPage", [])]
    return steps, series, checks, []


def _span(steps: int, value, start: int, end: int) -> str:
    """value(i) at every minute i of [start, end), a stale marker at end, nothing else."""
    return " ".join(str(value(i)) if start <= i < end else "stale" if i == end else "_" for i in range(steps + 1))


def _quiet(steps: int, alerts: tuple[str, ...]) -> list:
    """Checks that none of the alerts fires at any of 12 times spread over the run, its end included."""
    return [(steps * k // 12, name, []) for k in range(1, 13) for name in alerts]


def _training_restart_fleet(healthy: bool = False):
    """Two 8-GPU training jobs for 12 hours, one sample and evaluation a minute, each job's rank 0 exporting its
    step (one a minute) and its last checkpoint step (every 2 hours). llm-b never restarts; it pauses 3 minutes
    at each checkpoint (under the 5-minute stall window: productive). llm-a crashes at 6h: its pod is gone for 20
    minutes, then comes back on another node under a new pod IP (its scrape target), resumes from the checkpoint
    of 4h (step 240) and re-does 120 steps, passing its high-water (360) at 8h21m; at 10h it hangs for 30 minutes (no new step), stalled from 10h05m to 10h30m.

    Bad GPU-minutes of llm-a: 19 missed evaluations (6h01m-6h19m) x 8, added when it comes back, 121 re-done
    evaluations (6h20m-8h20m) x 8, and 26 stalled ones x 8: 1,328 of the 16 GPUs' 960 an hour. The windows
    against a 95% objective (5% budget, factors 14.4, 6, 3, 1): the 1h window peaks at 50% (< 72%) and the 6h
    window at 23% (< 30%): no fast or medium tier. The 2h window passes 15% but the 1d window (hourly sums, all
    12 hours of history) stays under 13% (< 15%): no slow tier. The 3d window reads the hourly sums: 480 / 6,720
    = 7.1% once the hour to 7h is summed, over 5%, while the 6h window holds 8.3%: the background tier tickets
    within the hour after 7h (the hourly sums lag up to an hour; promtool, which evaluates every group at the
    test's interval, passes 5% at about 7h15m) and holds to the end (3d: 11.5%, 6h: 23% at 12h). llm-b spends
    nothing: a job that never restarts is productive throughout. healthy: its twin, llm-a never crashes nor hangs:
    no bad minute, no SLO alert."""
    steps = 12 * 60
    crash, back, hang = 6 * 60 + 1, 6 * 60 + 20, (10 * 60 + 1, 10 * 60 + 31)
    if healthy:
        crash, back, hang = steps + 1, steps + 1, (steps + 1, steps + 1)
    step_a, step_b, ckpt_a, ckpt_b = [], [], [], []
    for i in range(steps + 1):
        a = i if i < crash else 240 + (i - back) - (min(i, hang[1]) - hang[0] if i >= hang[0] else 0)
        step_a.append(a)
        ckpt_a.append(120 * (a // 120) if i < crash else max(240, 120 * (a // 120)))
        b = step_b[-1] + (0 if i >= 120 and i % 120 in (1, 2, 3) else 1) if step_b else 0
        step_b.append(b)
        ckpt_b.append(120 * (b // 120))

    series = []
    # (job, node, pod IP, the minutes [start, end) it runs there, its step and checkpoint): llm-a comes back on
    # another node under a new pod IP (its scrape target), as a rescheduled pod does.
    runs = [("llm-a", "n1", "10.0.0.1", (0, crash), step_a, ckpt_a), ("llm-a", "n3", "10.0.0.2", (back, steps + 1), step_a, ckpt_a),
            ("llm-b", "n2", "10.0.0.3", (0, steps + 1), step_b, ckpt_b)]
    if healthy:
        runs = [runs[0], runs[2]]
    for job, node, ip, (start, end), step, ckpt in runs:
        pod = f'cluster="c1", namespace="ml", pod="{job}-worker-0"'
        target = f'{pod}, instance="{ip}:8000", rank="0"'
        tensor = 0.42 if job == "llm-b" else 0.3  # each GPU's tensor-pipe activity: the program goodput proxy
        for name, value in (("training_step", step.__getitem__), ("training_checkpoint_step", ckpt.__getitem__),
                            *((f'gpu:dcgm_workload:info{{{_gpu("c1", node, g)}, namespace="ml", pod="{job}-worker-0", '
                               f'workload="{job}"}}', lambda i: 1) for g in range(8)),
                            *((f'gpu:dcgm_tensor_active:ratio{{{_gpu("c1", node, g)}}}', lambda i, t=tensor: t)
                              for g in range(8))):
            labels = name if "{" in name else f"{name}{{{target}}}"
            series.append({"series": labels, "values": _span(steps, value, start, end)})
    if healthy:
        return steps, series, _quiet(steps, ("TrainingTimeSLOBurnTicket", "TrainingTimeSLOInputAbsent")), [
            (steps, "sum_over_time(slo:training_time_bad:count[12h])", [({"cluster": "c1"}, 0)]),
            (steps, "sum_over_time(slo:training_time_total:count[12h])", [({"cluster": "c1"}, 16 * steps)])]  # (0, 12h]
    # a ghost-loss alert on llm-a from 9h for 30 minutes (report only: the GPU-minutes trained on suspect state)
    ghost = (9 * 60, 9 * 60 + 30)
    series.append({"series": f'ALERTS{{alertname="GPUGhostLoss", alertstate="firing", {_gpu("c1", "n3", 2)}, namespace="ml", '
                             'pod="llm-a-worker-0", workload="llm-a", failure_mode="ghost_loss", severity="warning", '
                             'action="investigate", hardware_failure_mode="ecc_uncorrectable", symptom="plateau"}',
                   "values": _span(steps, lambda i: 1, *ghost)})
    ticket = {"burn_tier": "ticket", "failure_mode": "slo_burn", "slo": "training_time", "cluster": "c1",
              "severity": "warning", "action": "investigate"}
    checks = [(6 * 60 + 55, "TrainingTimeSLOBurnTicket", []), (7 * 60 + 45, "TrainingTimeSLOBurnTicket", [ticket]),
              (steps, "TrainingTimeSLOBurnTicket", [ticket]), (6 * 60 + 40, "TrainingTimeSLOInputAbsent", [])]
    job_a = {"cluster": "c1", "namespace": "ml", "workload": "llm-a"}
    job_b = {**job_a, "workload": "llm-b"}
    whole = "round({} + on (cluster) group_left () slo:training_time_error_budget:remaining, 0.001)"
    def rec(minute, name, *expected, match=""):
        """The record's samples at `minute`: (labels, value) each, the record's name added as promtool reports it."""
        return minute, name + match, [({"__name__": name, **labels}, value) for labels, value in expected]

    cluster = {"cluster": "c1"}
    values = [
        rec(5 * 60, "slo:training_time_total:count", (cluster, 16)),
        rec(5 * 60, "slo:training_time:ratio_1h", (cluster, 0)),
        rec(5 * 60, "job:training_progress_at_risk:steps", (job_a, 60), (job_b, 54)),  # llm-b: 6 steps lost to pauses
        rec(6 * 60 + 10, "slo:training_time_total:count", (cluster, 8)),  # llm-a gone: not counted until it returns
        rec(back, "job:slo_training_time:missed_evaluations", (job_a, 19)),
        rec(back, "job:slo_training_time_total:count", (job_a, 160), (job_b, 8)),
        rec(7 * 60, "job:training_redo:steps", (job_a, 80)),
        rec(7 * 60, "job:slo_training_time:productive", (job_a, 0), (job_b, 1)),
        rec(7 * 60, "slo:training_time_bad_by_reason:count", ({**cluster, "reason": "redo"}, 8)),
        rec(7 * 60, "slo:training_time:ratio_1h", (cluster, 0.5)),
        rec(9 * 60, "job:slo_training_time:productive", (job_a, 1), (job_b, 1)),
        rec(8 * 60 + 2, "job:slo_training_time:productive", (job_a, 0), (job_b, 1)),  # llm-b's checkpoint pause
        rec(10 * 60 + 20, "job:slo_training_time:productive", (job_a, 0), (job_b, 1)),  # llm-a hangs
        rec(10 * 60 + 20, "slo:training_time_bad_by_reason:count", ({**cluster, "reason": "stalled"}, 8)),
        rec(10 * 60 + 3, "slo:training_time_bad:count", (cluster, 0)),  # a hang's first 5 minutes are tolerated
        rec(steps, "slo:training_time_error_budget:spent_by_job", (job_b, 0), match='{workload="llm-b"}'),
        (steps, whole.format('slo:training_time_error_budget:spent_by_job{workload="llm-a"}'), [(job_a, 1)]),
        (steps, whole.format("sum by (cluster) (slo:training_time_error_budget:spent_by_reason)"), [(cluster, 1)]),
        # report only: the tensor-pipe activity per job; the ghost-loss GPU-minutes (8 x 30 = 240, 2.1% of the
        # 11,520: promtool's hourly sums, which slide every minute, weigh the last hour less and read 2.2%)
        rec(7 * 60, "job:training_tensor_active:avg", (job_a, 0.3), (job_b, 0.42)),
        rec(9 * 60 + 10, "slo:training_time_ghost_loss:count", (cluster, 8)),
        rec(8 * 60, "slo:training_time_ghost_loss:count", (cluster, 0)),
        (steps, "sum_over_time(slo:training_time_ghost_loss:count[12h])", [(cluster, 240)]),
        (steps, "round(slo:training_time_ghost_loss:ratio_30d * 100)", [(cluster, 2)]),
    ]
    return steps, series, checks, values


def _job_success_fleet():
    """Kubernetes Jobs for 7 hours, as kube-state-metrics exports them (one sample a minute): GPU Jobs j1 (team-a,
    runs 0-2h, completes), j2 (team-a, 1h-3h, fails), j3 (team-b, 0-4h, completes) and j4 (team-b, 5h10m-6h,
    fails); a Job `old` that had completed before the rules ran, and a CPU-only Job that fails at 1h: neither is
    counted. kube-state-metrics restarts at 5h (a new instance after 2 minutes without series): nothing is
    counted again. The Kubeflow training operator counts its own jobs (PyTorchJobs: no Kubernetes Job): 3 failed in
    team-b before the rules ran (not counted), a fourth fails at 4h; team-a's first success appears at 2h30m (a new
    counter series of an operator already scraped: counted). So 6 jobs finish, 3 fail: 1 in team-a, 2 in team-b.

    Against a 99% objective (1% budget) every tier's factor is passed by one failure among few Jobs: j2's failure
    at 3h is the only Job in the 1h and 5m windows (100% > 14.4%), and one of two in the 6h window: the ticket
    fires at 3h and holds while the slower tiers' windows hold it (the 2h window, 3% with the 1d window's hourly
    sums); before 3h nothing failed, and nothing fires."""
    steps = 7 * 60
    restart, back = 5 * 60, 5 * 60 + 2

    def ksm(metric: str, labels: str, value) -> list[dict]:
        """The series before and after the restart (instance ksm-a, then ksm-b); value(i) None: no sample."""
        out = []
        for instance, span in (("ksm-a", (0, restart)), ("ksm-b", (back, steps + 1))):
            values = []
            for i in range(steps + 1):
                v = value(i) if span[0] <= i < span[1] else None
                values.append("stale" if i == restart and instance == "ksm-a" else "_" if v is None else str(v))
            out.append({"series": f'{metric}{{cluster="c1", instance="{instance}", job="kube-state-metrics", {labels}}}',
                        "values": " ".join(values)})
        return out

    series = []
    jobs = {"j1": ("team-a", 0, 120, "complete", 8), "j2": ("team-a", 60, 180, "failed", 8),
            "j3": ("team-b", 0, 240, "complete", 4), "j4": ("team-b", 310, 360, "failed", 8),
            "old": ("team-b", None, 0, "complete", 8), "cpu": ("team-b", 0, 60, "failed", 0)}
    for name, (ns, start, end, outcome, gpus) in jobs.items():
        job = f'namespace="{ns}", job_name="{name}"'
        pod = f'namespace="{ns}", pod="{name}-x1"'
        exists = (lambda i, start=start: start is None or i >= start)
        series += ksm("kube_job_status_active", job, lambda i, s=start, e=end: (1 if s is not None and s <= i < e else 0) if exists(i) else None)
        for condition, kind in (("kube_job_complete", "complete"), ("kube_job_failed", "failed")):
            series += ksm(condition, job + ', condition="true"',
                          lambda i, e=end, k=kind, o=outcome: (1 if k == o and i >= e else 0) if exists(i) else None)
        if gpus:
            series += ksm("kube_pod_container_resource_requests", pod + ', container="main", resource="nvidia_com_gpu", unit="integer"',
                          lambda i, g=gpus: g if exists(i) else None)
        series += ksm("kube_pod_owner", pod + f', owner_kind="Job", owner_name="{name}", owner_is_controller="true"',
                      lambda i: 1 if exists(i) else None)
    # The GPU queue (report only): Job j5's pod (team-b, 8 GPUs) is created at 4h30m and stays Pending to the end.
    queued, pod = 270, 'namespace="team-b", pod="j5-x1"'
    for phase in ("Pending", "Running"):
        series += ksm("kube_pod_status_phase", pod + f', phase="{phase}"',
                      lambda i, p=phase: (1 if p == "Pending" else 0) if i >= queued else None)
    series += ksm("kube_pod_created", pod, lambda i: queued * 60 if i >= queued else None)
    series += ksm("kube_pod_container_resource_requests", pod + ', container="main", resource="nvidia_com_gpu", unit="integer"',
                  lambda i: 8 if i >= queued else None)
    operator = 'cluster="c1", instance="10.0.9.9:8080", job="training-operator", framework="pytorch"'
    for counter, ns, value in (("created", "team-a", lambda i: 2), ("successful", "team-a", lambda i: 1 if i >= 150 else None),
                               ("failed", "team-b", lambda i: 3 if i < 240 else 4)):
        series.append({"series": f'training_operator_jobs_{counter}_total{{{operator}, job_namespace="{ns}"}}',
                       "values": " ".join("_" if value(i) is None else str(value(i)) for i in range(steps + 1))})
    ticket = {"burn_tier": "ticket", "failure_mode": "slo_burn", "slo": "job_success", "cluster": "c1",
              "severity": "warning", "action": "investigate"}
    checks = [(2 * 60 + 30, "GPUJobSuccessSLOBurnTicket", []), (3 * 60 + 1, "GPUJobSuccessSLOBurnTicket", [ticket]),
              (back + 1, "GPUJobSuccessSLOInputAbsent", [])]
    cluster = {"cluster": "c1"}
    values = [
        (2 * 60, "job:slo_job_success:finished", [({"__name__": "job:slo_job_success:finished", **cluster, "namespace": "team-a",
                                                    "job_name": "j1", "outcome": "succeeded"}, 1)]),
        (steps, "sum_over_time(slo:job_success_total:count[7h])", [(cluster, 6)]),
        (steps, "sum_over_time(slo:job_success_bad:count[7h])", [(cluster, 3)]),
        (steps, "sum_over_time(slo:job_success_bad_by_namespace:count[7h])",
         [({**cluster, "namespace": "team-a"}, 1), ({**cluster, "namespace": "team-b"}, 2)]),
        (steps, "sum_over_time(namespace:training_operator_jobs_finished:count[7h])",
         [({**cluster, "namespace": "team-a", "outcome": "succeeded"}, 1), ({**cluster, "namespace": "team-b", "outcome": "failed"}, 1)]),
        (steps, "slo:job_success:ratio_6h", [({"__name__": "slo:job_success:ratio_6h", **cluster}, 0.5)]),
        (4 * 60 + 50, "namespace:kube_pending_gpus:sum", [({"__name__": "namespace:kube_pending_gpus:sum", **cluster,
                                                            "namespace": "team-b"}, 8)]),
        (4 * 60 + 50, "namespace:kube_pending_gpu_pod:oldest_seconds",
         [({"__name__": "namespace:kube_pending_gpu_pod:oldest_seconds", **cluster, "namespace": "team-b"}, 1200)]),
        (5 * 60 + 5, "namespace:kube_pending_gpu_pod:oldest_seconds",  # after kube-state-metrics' restart
         [({"__name__": "namespace:kube_pending_gpu_pod:oldest_seconds", **cluster, "namespace": "team-b"}, 2100)]),
        (steps, "namespace:kube_pending_gpus:gpu_hours_30d > bool 0", [({**cluster, "namespace": "team-b"}, 1)]),
    ]
    return steps, series, checks, values


FLEETS = {"node-lost-hour-pages": _node_lost_fleet, "one-in-a-hundred-tickets": _one_in_a_hundred_fleet,
          "cluster-vanishes": _cluster_vanishes_fleet, "training-restart-from-old-checkpoint": _training_restart_fleet,
          "job-success-one-failure-in-few": _job_success_fleet,
          # the healthy twins of the two Done-means fleets: the same fleet over the same time without the fault
          "node-lost-healthy-twin": lambda: _node_lost_fleet(healthy=True),
          "training-healthy-twin": lambda: _training_restart_fleet(healthy=True)}
FLEET_STEP = {"training-restart-from-old-checkpoint": 60, "job-success-one-failure-in-few": 60,
              "training-healthy-twin": 60}  # seconds between samples; the others STEP


def _test_document(rule_file: str, fleet, engine: str, every: int = STEP) -> dict:
    """The fleet as a unit test of `engine`: each check an expression test of the alert's firing ALERTS series
    (labels only, without the group vmalert adds as `alertgroup`: the annotations query other records)."""
    steps, series, checks, values = fleet()
    step = f"{every // 60}m"
    key = "promql_expr_test" if engine == "promtool" else "metricsql_expr_test"
    tests = [{"expr": f'max without (alertgroup) (ALERTS{{alertname="{name}", alertstate="firing"}})',
              "eval_time": f"{t * every // 60}m",
              "exp_samples": [{"labels": _labels({"alertname": name, "alertstate": "firing", **labels}), "value": 1}
                              for labels in expected]}
             for t, name, expected in checks]
    tests += [{"expr": expr, "eval_time": f"{t * every // 60}m",
               "exp_samples": [{"labels": _labels(labels), "value": value} for labels, value in expected]}
              for t, expr, expected in values]
    doc = {"rule_files": [rule_file], "evaluation_interval": step,
           "tests": [{"interval": step, "input_series": series, key: tests}]}
    if engine == "promtool":  # the file's order is the chain's (engine_fit); promtool's own is a map's
        doc["group_eval_order"] = [g["name"] for g in yaml.safe_load(open(rule_file))["groups"]]
    return doc


def _labels(labels: dict) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _vmalert_copy(out, tmp_path) -> str:
    """The SLO rules as tests/vmalert/ reads the replayed rules: one group per dependency level (vmalert-tool
    flushes its storage after each group only, builders/vmalert_tests.py)."""
    catalog, settings = load_inputs(bundled_catalog_dir(), out.parent / "rulesgen.yaml")
    path = tmp_path / "slos-vmalert.yaml"
    path.write_text(render_rule_file(vmalert_rule_file([build_slo_file(catalog, settings)], str(path))))
    return str(path)


# make test replays the fleets on promtool but the three longest (72 hours of 32 and 104 GPUs), which the two-shard
# proof replays (its one server's replay is the fleet's own test: CI's make test-sharding), and the smallest
# on vmalert-tool; CI's make test-vm-all the others (marker slow: 20-45 s each).
PROVEN_ON_SHARDS = ("node-lost-hour-pages", "node-lost-healthy-twin", "one-in-a-hundred-tickets")
REPLAYS = [pytest.param(*engine_param(engine).values, fleet, id=f"{fleet}-{engine_param(engine).id}",
                        marks=(*engine_param(engine).marks, *((pytest.mark.slow,) if engine == "vmalert_tool"
                                                               and fleet != "cluster-vanishes" else ())))
           for engine in ("promtool", "vmalert_tool") for fleet in sorted(FLEETS)
           if engine == "vmalert_tool" or fleet not in PROVEN_ON_SHARDS]


@pytest.mark.parametrize("engine, fleet", REPLAYS)
def test_slo_rules_replayed_over_a_synthetic_fleet(slo_render, tmp_path, request, engine, fleet):
    binary = request.getfixturevalue(engine)
    rules = str(slo_render / "alerts/prometheus/slos.yaml") if engine == "promtool" else _vmalert_copy(slo_render, tmp_path)
    doc = _test_document(rules, FLEETS[fleet], engine, FLEET_STEP.get(fleet, STEP))
    path = tmp_path / f"{fleet}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cmd = [binary, "test", "rules", str(path)] if engine == "promtool" else [binary, "unittest", f"--files={path}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # vmalert expands every firing alert's annotations (promtool only those a test names): none may fail
    assert "templating error" not in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-4000:]


def test_a_non_finite_step_costs_its_evaluation_not_the_window(slo_render, promtool, tmp_path):
    """The training fleet's healthy twin, llm-b's rank exporting +Inf at 2h30m, NaN at 5h and -Inf at 6h40m (a
    framework's float step gone wrong): each sample costs its one evaluation (the job unseen then, counted as a
    restart when seen again: 3 x 8 GPU-minutes), and nothing fires. Read as a step, the +Inf would be every later
    step's high-water for 6 hours: 360 evaluations of 8 GPUs re-doing steps, a ticket."""
    steps, series, checks, _ = _training_restart_fleet(healthy=True)
    for s in series:
        if s["series"].startswith("training_step{") and 'pod="llm-b-worker-0"' in s["series"]:
            values = s["values"].split()
            for minute, bad in ((150, "+Inf"), (300, "NaN"), (400, "-Inf")):
                values[minute] = bad
            s["values"] = " ".join(values)
    values = [(steps, "sum_over_time(slo:training_time_bad:count[12h])", [({"cluster": "c1"}, 24)]),
              (steps, 'sum_over_time(slo:training_time_bad_by_reason:count{reason="restart"}[12h])',
               [({"cluster": "c1", "reason": "restart"}, 24)])]
    doc = _test_document(str(slo_render / "alerts/prometheus/slos.yaml"), lambda: (steps, series, checks, values),
                         "promtool", 60)
    path = tmp_path / "non-finite.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


# Prometheus 2.42 (the oldest promised) reads ranges and the 5-minute lookback with their left end ([t - 30m, t]):
# an input alert stays one evaluation longer and a window holds one more, so a tier passed by its last bad
# evaluation holds two steps longer at these 5-minute steps. The fleets' alert checks hold there, that one moved;
# their exact counts (one sample more per window) are promtool 3.5's to check.
ON_2_42 = ("node-lost-hour-pages", "training-restart-from-old-checkpoint", "job-success-one-failure-in-few", "cluster-vanishes")
LATER_ON_2_42 = {("node-lost-hour-pages", _h(67) + 7): _h(67) + 9}  # the page clears when 30m holds no bad one


def test_slo_rules_load_on_promtool_2_42(slo_render, promtool_2_42):
    proc = subprocess.run([promtool_2_42, "check", "rules", str(slo_render / "alerts/prometheus/slos.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("fleet", ON_2_42)
def test_slo_alerts_on_promtool_2_42(slo_render, promtool_2_42, tmp_path, fleet):
    steps, series, checks, _ = FLEETS[fleet]()
    checks = [(LATER_ON_2_42.get((fleet, t), t), name, expected) for t, name, expected in checks]
    doc = _test_document(str((slo_render / "alerts/prometheus/slos.yaml").resolve()), lambda: (steps, series, checks, []),
                         "promtool", FLEET_STEP.get(fleet, STEP))
    path = tmp_path / f"{fleet}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = subprocess.run([promtool_2_42, "test", "rules", str(path)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


# --- two shards and a global tier ---------------------------------------------------------------------------

SHARDED = SLO_CONFIG + """\
topology: sharded
sharding:
  write_url: http://global-tsdb.example:8428/api/v1/write
  source: static
  values: [shard-0, shard-1]
"""
# The records whose values the global tier must write as one server does: every count, ratio and budget, per
# SLO, job, node, model and driver, and the report-only indicators (not the per-GPU inventory: the alerts and
# these follow from it).
SLO_RECORDS = r"slo:.*|job:(slo|training)_.*|(node|model):slo_.*|namespace:(kube|training_operator)_.*"


@pytest.fixture(scope="module")
def slo_sharded_render(tmp_path_factory):
    result, out = _render(tmp_path_factory.mktemp("slo-sharded"), SHARDED)
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.equality
@pytest.mark.parametrize("fleet", sorted(FLEETS))
def test_two_shards_and_the_global_tier_count_the_slos_as_one_server(slo_sharded_render, promtool, tmp_path, fleet):
    """Each fleet split by node across two shards (the training jobs' targets by pod IP: llm-a comes back on the
    other shard), the SLO rules of each tier replayed on its part (tests/shard_equality.py): the global tier
    writes every SLO count, ratio and budget record, value for value, and the same alerts, as one server at
    every evaluation. The one server's replay is the fleet's own test, so it holds the fleet's expectations too."""
    topology = se.rendered_topology(slo_sharded_render)
    only = lambda files: tuple(p for p in files if p.stem == "slos")  # noqa: E731 - the fleets feed the SLO inputs
    topology = replace(topology, single=only(topology.single), shard=only(topology.shard), global_=only(topology.global_))
    every = FLEET_STEP.get(fleet, STEP)
    doc = _test_document(str(topology.single[0].resolve()), FLEETS[fleet], "promtool", every)
    (case,) = doc["tests"]
    scenario = Scenario(name=fleet, path="", description="", interval=every, evaluation_interval=every,
                        duration=FLEETS[fleet]()[0] * every, expect=(), also_allowed=(),
                        series=tuple((s["series"], s["values"]) for s in case["input_series"]))
    verdict = se.compare(promtool, scenario, topology, tmp_path, reference_test=doc, records=SLO_RECORDS)
    assert not verdict.expectations, "\n".join(verdict.expectations)[-3000:]
    assert verdict.equal, verdict.describe()
    assert verdict.forwarded_series > 0 and verdict.records_compared > 0
    # a healthy twin's proof is its counts, equal, and its own checks that no SLO alert fires
    assert verdict.reference_alerts > 0 or fleet.endswith("-healthy-twin")


# --- a real scenario, end to end ------------------------------------------------------------------------------

def _with_slo_expectation(tmp_path):
    """fixtures/scenarios/gpu-lost-every-gpu (a 17-GPU fleet: one GPU lost at 20m, a whole 8-GPU node at 30m, to the
    end), expecting the capacity SLO's page from the DCGM series through gpu_lost: 9 of 17 GPUs bad pass the 30m
    window's 6x (3%) at once and the 6h window's (over the half hour of history there is) within minutes."""
    doc = yaml.safe_load((ROOT / "fixtures/scenarios/gpu-lost-every-gpu.yaml").read_text())
    doc["expect"].append({"failure_mode": "slo_burn", "labels": {"slo": "gpu_capacity", "burn_tier": "page"},
                          "after": "30m", "within": "10m", "continuous": True})
    doc["also_allowed"].append("slo_burn")  # the ticket tier: an hour of history is all of its day
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "gpu-lost-every-gpu.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (tmp_path / "rulesgen.yaml").write_text(SLO_CONFIG)
    result = run_cli("render", "--config", str(tmp_path / "rulesgen.yaml"), "--scenarios", str(scenarios),
                     "--scenario-tests", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    return tmp_path / "out"


@pytest.mark.parametrize("engine", [engine_param("promtool"),
                                    pytest.param(*engine_param("vmalert_tool").values, id="vmalert-tool",
                                                 marks=(*engine_param("vmalert_tool").marks, pytest.mark.slow))])
def test_a_lost_node_pages_the_capacity_slo_from_the_dcgm_series(tmp_path, request, engine):
    binary = request.getfixturevalue(engine)
    out = _with_slo_expectation(tmp_path)
    folder = "promtool" if engine == "promtool" else "vmalert"
    test = out / "tests" / folder / "gpu-lost-every-gpu.yaml"
    cmd = [binary, "test", "rules", str(test)] if engine == "promtool" else [binary, "unittest", f"--files={test}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=test.parent)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


# --- OpenSLO ------------------------------------------------------------------------------------------

OPENSLO_SCHEMA = json.loads((ROOT / "tests/schemas/openslo-v1.schema.json").read_text())


def test_the_slos_are_exported_as_openslo_v1_documents(slo_render):
    """slos/openslo.yaml: a Service and one SLO per rendered SLO, each valid against the v1 specification (no
    OpenSLO tool runs here; tests/schemas/openslo-v1.schema.json says where it comes from), their queries the
    per-evaluation counts the rules record, their objectives and burn tiers those of the alerts."""
    docs = list(yaml.safe_load_all((slo_render / "slos/openslo.yaml").read_text()))
    for doc in docs:
        jsonschema.validate(doc, OPENSLO_SCHEMA)
    slos = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "SLO"}
    assert sorted(slos) == ["gpu-capacity", "job-success", "training-time"]
    records = _rules(slo_render)
    for spec in slos.values():
        ratio = spec["indicator"]["spec"]["ratioMetric"]
        for key in ("bad", "total"):
            assert ratio[key]["metricSource"]["spec"]["query"] in records
    capacity = slos["gpu-capacity"]
    assert capacity["objectives"][0]["target"] == 0.995 and capacity["timeWindow"] == [{"duration": "30d", "isRolling": True}]
    fast = capacity["alertPolicies"][0]["spec"]["conditions"][0]["spec"]
    assert fast == {"severity": "critical", "condition": {"kind": "burnrate", "op": "gte", "threshold": 14.4,
                                                          "lookbackWindow": "1h", "alertAfter": "5m"}}
    bad = dict(docs[1], metadata={"name": "gpu_capacity"})  # the schema can fail: an underscore is no DNS-1123 name
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, OPENSLO_SCHEMA)


# --- rulesgen explain slo --------------------------------------------------------------------------------

def test_explain_traces_a_rendered_slo_and_says_when_one_is_not(slo_render, tmp_path):
    result = run_cli("explain", "slo", "training_time", "--config", str(slo_render.parent / "rulesgen.yaml"), "--format", "json")
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["rendered"] and facts["objective"] == 95 and facts["period"] == "30d"
    assert [(t["name"], t["class"], t["factor"]) for t in facts["tiers"]] == [
        ("fast", "ticket", 14.4), ("medium", "ticket", 6), ("slow", "ticket", 3), ("background", "ticket", 1)]
    assert {t["alert"] for t in facts["tiers"]} == {"TrainingTimeSLOBurnTicket"}
    assert "job:slo_training_time:productive" in facts["records"] and "slos/openslo.yaml" in facts["files"]
    assert set(facts["records"]) <= set(_rules(slo_render))
    (tmp_path / "rulesgen.yaml").write_text("urls: {}\n")
    result = run_cli("explain", "gpu_capacity", "--config", str(tmp_path / "rulesgen.yaml"))
    assert result.returncode == 0 and "not rendered: rulesgen.yaml names no slos.gpu_capacity" in result.stdout, result.stderr
    assert "GPUCapacitySLOBurnPage" in result.stdout and "under 25% left: Freeze driver" in result.stdout
    result = run_cli("explain", "slo", "gpu_capacty", "--config", str(tmp_path / "rulesgen.yaml"))
    assert result.returncode == 2 and "unknown SLO 'gpu_capacty'" in result.stderr and "gpu_capacity" in result.stderr
