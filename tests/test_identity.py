"""Alert identity (README "Alert identity"): hardware alerts carry their subject's identity only, the
job is named in the annotations, `continuous:` expectations, and lint's alert-identity check."""
from __future__ import annotations

import functools
import itertools
import re
import subprocess
import time

import pytest
import yaml

from conftest import BINARIES, engine_param, errors_of, run_cli
from servers import Prometheus, blocks_from_openmetrics
from treeasserts import aggregations, canonical, functions, joins, reads, subexpressions, subqueries
from rulesgen.promql import labels as label_flow
from rulesgen.promql import tree as promql_tree
from rulesgen.builders.promtool_tests import continuous_expr
from rulesgen.checks import lint_files
from rulesgen.checks.alert_identity import NOT_IDENTITY
from rulesgen.model.catalog import IDENTITY_GROUPS
from rulesgen.engines.replay import Fired, judge
from rulesgen.load.scenarios import Expectation, load_scenario

HEALTH_GROUP = "rulesgen-health-alerts"


def _records(rendered):
    rules = [r for f in sorted((rendered / "alerts" / "prometheus").glob("*.yaml"))
             for g in yaml.safe_load(f.read_text())["groups"] for r in g["rules"]]
    return rules, label_flow.record_labels([(r["record"], r["expr"]) for r in rules if "record" in r])


def test_hardware_alerts_carry_their_subject_only(rendered):
    """No workload, scrape or driver label can reach a health, baselines or fleet alert; efficiency and
    job alerts keep the pod they are about."""
    rules, records = _records(rendered)
    by_file = {}
    for f in sorted((rendered / "alerts" / "prometheus").glob("*.yaml")):
        for g in yaml.safe_load(f.read_text())["groups"]:
            for r in g["rules"]:
                if "alert" in r:
                    by_file[r["alert"]] = f.stem
    for r in rules:
        if "alert" not in r:
            continue
        carried = label_flow.output_labels(r["expr"], records)
        assert not carried.open, r["alert"]
        if by_file[r["alert"]] in IDENTITY_GROUPS:
            allowed = {"instance"} if r["labels"]["failure_mode"] in ("exporter_down", "telemetry_blind_spot") else set()
            assert not (set(NOT_IDENTITY) - allowed) & carried.known, (r["alert"], sorted(carried.known))
        elif by_file[r["alert"]] in ("efficiency", "jobs"):
            assert {"namespace", "pod"} <= carried.known, r["alert"]


def test_hardware_alerts_hold_while_what_silences_them_fires(rendered):
    """A firing hardware alert stays firing while its GPU's gpu_lost or its node's exporter_down (which
    Alertmanager lets silence it) is pending or firing, reading its own ALERTS series back: resolving
    muted, its RESOLVED would never be sent. Efficiency and job alerts are not held; a silencer is not
    held by itself. (fixtures/scenarios/ecc-uncorrectable-node-dark.yaml proves it on the engines.)"""
    rules, _ = _records(rendered)
    alerts = {r["alert"]: r for r in rules if "alert" in r}

    def held_by(name):
        expr = alerts[name]["expr"]
        own = canonical(f'ALERTS{{alertname="{name}", alertstate="firing"}}')
        scope = {"gpu_lost": ("cluster", "Hostname", "gpu", "UUID"), "exporter_down": ("cluster", "Hostname")}
        return {mode for mode, on in scope.items() for j in joins(expr)
                if j.op == "and" and j.on == on and own in subexpressions(j.lhs)
                and j.rhs == canonical(f'ALERTS{{alertstate=~"pending|firing", failure_mode="{mode}"}}')}

    assert held_by("GPUECCUncorrectable") == {"gpu_lost", "exporter_down"}
    assert held_by("GPUBaselineDeviation") == {"gpu_lost", "exporter_down"}
    assert held_by("GPULost") == {"exporter_down"}
    assert held_by("GPUExporterDown") == set()
    assert not reads(alerts["GPUDataloaderStarvation"]["expr"], "ALERTS")
    assert all(alerts[n].get("keep_firing_for") == "5m" for n in ("GPUECCUncorrectable", "GPULost", "GPUExporterDown"))


def test_keep_firing_for_is_a_setting_with_a_range(tmp_path):
    (tmp_path / "ok.yaml").write_text("keep_firing_for: 4m30s\n")
    out = tmp_path / "out"
    assert run_cli("render", "--no-scenario-tests", "--config", str(tmp_path / "ok.yaml"), "--out", str(out)).returncode == 0
    health = yaml.safe_load((out / "alerts" / "prometheus" / "health.yaml").read_text())
    assert {r.get("keep_firing_for") for g in health["groups"] for r in g["rules"] if "alert" in r} == {"4m30s"}
    (tmp_path / "bad.yaml").write_text("keep_firing_for: 2h\n")
    result = run_cli("render", "--config", str(tmp_path / "bad.yaml"), "--out", str(tmp_path / "out2"))
    assert result.returncode == 1 and "bad.yaml:1:" in result.stderr and "error[out-of-range]" in result.stderr, result.stderr
    assert not (tmp_path / "out2").exists()
    # shorter than gpu_lost's stale_seconds (2m) + two evaluations: a lost GPU's alerts would resolve first
    (tmp_path / "short.yaml").write_text("keep_firing_for: 2m\n")
    result = run_cli("render", "--config", str(tmp_path / "short.yaml"), "--out", str(tmp_path / "out3"))
    assert result.returncode == 1 and "short.yaml:1:" in result.stderr and "stale_seconds" in result.stderr, result.stderr


def test_label_flow_follows_matching_and_aggregation():
    records = {"gpu:x:info": label_flow.LabelSet(frozenset({"gpu", "pod"}))}
    carried = lambda e: sorted(label_flow.output_labels(e, records).known)  # noqa: E731
    assert carried('max by (gpu, UUID) (DCGM_FI_DEV_GPU_TEMP{job="x"})') == ["UUID", "gpu"]
    assert carried("a:b:c * on (gpu) group_left (pod) gpu:x:info") == ["pod"]  # a:b:c: no rule, raw
    assert label_flow.output_labels("a:b:c * on (gpu) group_left (pod) gpu:x:info", records).open
    assert carried("max by (gpu) (up) > on (gpu) gpu:x:info") == ["gpu"]  # one-to-one on (): the on labels
    assert carried('label_replace(max by (gpu) (up), "xid", "$1", "e", "(.*)") or gpu:x:info') == ["gpu", "pod", "xid"]
    assert carried("max by (gpu) (up) unless on (gpu) gpu:x:info") == ["gpu"]
    assert carried("topk by (gpu) (1, last_over_time(gpu:x:info[1h])) * 0 + time()") == ["gpu", "pod"]
    # absent() is one series with its selector's equality matchers (what `{{ $labels.job }}` of such an alert reads)
    assert carried('absent(up{job="x", instance=~"y"})') == ["job"] == carried('absent_over_time(gpu:x:info{job="x"}[5m])')
    assert not label_flow.output_labels('absent(up{job="x"})', records).open and carried("absent(sum(up))") == []
    # group_left/right copy a listed label from the one side only where it has it (else Prometheus sets it empty)
    assert carried("max by (gpu) (up) * on (gpu) group_left (pod, xid) gpu:x:info") == ["gpu", "pod"]
    assert carried("gpu:x:info - on (gpu) group_right (pod) max by (gpu, pod) (up)") == ["gpu", "pod"]
    assert carried("max by (gpu) (up) - on (gpu) group_right (pod) gpu:x:info") == ["gpu"]


def test_lint_flags_a_hardware_alert_that_names_the_pod(tmp_path):
    planted = tmp_path / "planted.yaml"
    body = """\
  - alert: {name}
    expr: |
      (gpu:dcgm_ecc_dbe_volatile:max > 0)
      * on (cluster, Hostname, gpu, UUID) group_left (namespace, pod) gpu:dcgm_workload:info
    for: 1m
    labels: {{action: drain, failure_mode: ecc_uncorrectable, severity: critical}}
    annotations: {{summary: s, description: d, runbook_url: r, dashboard_url: u}}
"""
    planted.write_text(f"""\
groups:
- name: rulesgen-gpu-signals
  rules:
  - record: gpu:dcgm_ecc_dbe_volatile:max
    expr: max by (cluster, Hostname, gpu, UUID, modelName) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL)
  - record: gpu:dcgm_workload:info
    expr: group by (cluster, Hostname, gpu, UUID, namespace, pod) (DCGM_FI_DEV_GPU_TEMP)
- name: {HEALTH_GROUP}
  rules:
{body.format(name="GPUECCUncorrectable")}
  - alert: GPURawTemp
    expr: DCGM_FI_DEV_GPU_TEMP > 90
    for: 1m
    labels: {{action: investigate, failure_mode: thermal_throttling, severity: warning}}
    annotations: {{summary: s, description: d, runbook_url: r, dashboard_url: u}}
- name: rulesgen-efficiency-alerts
  rules:
{body.format(name="GPUJobAlert")}
""")
    found = [(f.line, f.code, f.message.split(":")[0]) for f in lint_files([planted])]
    assert found == [(10, "alert-identity", "GPUECCUncorrectable"), (18, "alert-identity", "GPURawTemp")]
    messages = [f.message for f in lint_files([planted])]
    assert "can carry pod, namespace" in messages[0] and "unaggregated" in messages[1]
    result = run_cli("lint", str(planted))
    assert result.returncode == 1 and "alert-identity" in result.stdout


def _scenario(tmp_path, expect: str):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ndescription: d\ninterval: 1m\nduration: 1h\n"
                    "series:\n  - series: 'up{job=\"dcgm-exporter\"}'\n    values: '1x60'\n"
                    f"expect:\n  - failure_mode: gpu_lost\n    after: 10m\n    within: 5m\n{expect}")
    return path


def test_continuous_is_parsed_and_checked(tmp_path):
    s = load_scenario(_scenario(tmp_path, "    continuous: true\n"), ["gpu_lost"])
    assert s.expect[0].continuous
    path = _scenario(tmp_path, "    continuous: 'yes'\n")
    assert errors_of(load_scenario, path, ["gpu_lost"]) == [
        f"{path}:12:5: error[bad-type]: expect.continuous must be true or false, got 'yes'"]
    late = tmp_path / "late.yaml"
    late.write_text(_scenario(tmp_path, "    continuous: true\n").read_text().replace("after: 10m", "after: 58m"))
    assert "error[bad-value]: expect.continuous: after + within (3780s) must be before the end" in \
        errors_of(load_scenario, late, ["gpu_lost"])[0]
    # from after + within (15m) to the end: 45m, and one second so the step at 15m is inside
    expr = continuous_expr(s, s.expect[0])
    assert subqueries(expr) == [(45 * 60 + 1, 60)] and "count" in aggregations(expr) and "max_over_time" in functions(expr)


def test_replay_names_a_resolve_and_a_relabelled_twin(tmp_path):
    s = load_scenario(_scenario(tmp_path, "    continuous: true\n"), ["gpu_lost"])
    a = (("failure_mode", "gpu_lost"), ("gpu", "3"), ("pod", "train-3"))
    b = (("failure_mode", "gpu_lost"), ("gpu", "3"))
    twin = judge(s, [Fired(a, 660), Fired(b, 1500)], [
        {**dict(a), "continuous_index": "0", "last_firing": "1200"}, {**dict(b), "continuous_index": "0", "last_firing": "3600"},
        {**dict(a), "continuous_index": "0", "steps": "6"}, {**dict(b), "continuous_index": "0", "steps": "36"}])
    assert not twin.ok and "RELABELLED TWIN" in twin.missing[0] and "pod='train-3'" in twin.missing[0]
    resolved = judge(s, [Fired(b, 660)], [{**dict(b), "continuous_index": "0", "last_firing": "3000"},
                                          {**dict(b), "continuous_index": "0", "steps": "36"}])
    assert "RESOLVED at 0h51m00s" in resolved.missing[0]
    steady = judge(s, [Fired(b, 660)], [{**dict(b), "continuous_index": "0", "last_firing": "3600"},
                                        {**dict(b), "continuous_index": "0", "steps": "46"}])
    assert steady.ok
    assert Expectation("gpu_lost", (), 0, 0).continuous is False


@pytest.mark.parametrize("fixture", [engine_param("promtool"), engine_param("promtool_2_42"), engine_param("vmalert_tool")])
def test_annotation_names_the_job_on_the_gpu(rendered, tmp_path, fixture, request):
    """The description of a hardware alert queries the GPU's workload (here GPULost's: the last 3 hours),
    on every engine the rules promise."""
    health = yaml.safe_load((rendered / "alerts" / "prometheus" / "health.yaml").read_text())
    rule = next(r for g in health["groups"] for r in g["rules"] if r.get("alert") == "GPULost")
    rule["expr"] = "gpu:dcgm_ecc_dbe_volatile:max > 0"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [rule]}]}))
    gpu = 'cluster="c1", Hostname="n1", gpu="3", UUID="GPU-x"'
    labels = {"cluster": "c1", "Hostname": "n1", "gpu": "3", "UUID": "GPU-x", "modelName": "H100", "severity": "critical",
              "failure_mode": "gpu_lost", "action": "drain"}
    test = {"interval": "1m", "input_series": [
        {"series": f'gpu:dcgm_ecc_dbe_volatile:max{{{gpu}, modelName="H100"}}', "values": "1x20"},
        {"series": f'gpu:dcgm_workload:info{{{gpu}, namespace="ml", pod="train-3"}}', "values": "1x5"}],
        "alert_rule_test": [{"eval_time": "10m", "alertname": "GPULost", "groupname": "g", "exp_alerts": [
            {"exp_labels": labels, "exp_annotations": {**rule["annotations"], "description": "GPU 3 (GPU-x, H100) on n1 "
             "stopped reporting while the node's dcgm-exporter still answers, or reported XID 79 (fallen off the bus). "
             "Job ml/train-3 has crashed or is hanging. Drain the node and reset or reseat the GPU.",
             "summary": "GPU 3 on n1 is lost",
             "dashboard_url": rule["annotations"]["dashboard_url"].replace("{{ $labels.cluster }}", "c1")
                                                                  .replace("{{ $labels.Hostname }}", "n1")
                                                                  .replace("{{ $labels.gpu }}", "3")}}]}]}
    engine, binary = BINARIES[fixture][0], request.getfixturevalue(fixture)
    if engine != "vmalert-tool":
        del test["alert_rule_test"][0]["groupname"]
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
                                                        "tests": [test]}))
    args = [binary, "unittest", "--files", "test.yaml"] if engine == "vmalert-tool" else \
        [binary, "test", "rules", "test.yaml"]
    proc = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_hardware_annotations_read_the_job_from_the_query(rendered):
    """A hardware alert has no namespace/pod label: its templates read them from $job, never $labels."""
    for f in IDENTITY_GROUPS:
        path = rendered / "alerts" / "prometheus" / f"{f}.yaml"
        for g in yaml.safe_load(path.read_text())["groups"]:
            for r in g["rules"]:
                text = " ".join(r.get("annotations", {}).values())
                assert "$labels.pod" not in text and "$labels.namespace" not in text, r.get("alert") or r["record"]
                if "$job." in text:
                    assert "{{ with query (printf `" in text, r["alert"]


def test_alertmanager_groups_and_inhibits_by_identity(rendered):
    config = yaml.safe_load((rendered / "alertmanager" / "rulesgen.yaml").read_text())
    routes = [config["route"], *config["route"].get("routes", [])]
    used = {label for r in routes for label in r.get("group_by", [])}
    used |= {label for rule in config.get("inhibit_rules", []) for label in rule.get("equal", [])}
    assert used and not used & set(NOT_IDENTITY), sorted(used)


# --- the job an identity alert names, on a real Prometheus ---------------------------------------------------

JOB_GPUS = ({"gpu": "0", "UUID": "GPU-a", "pod": "train-a"}, {"gpu": "1", "UUID": "GPU-b", "pod": "train-b"})
JOB_NODE = {"cluster": "c1", "Hostname": "n1", "modelName": "NVIDIA H100 80GB HBM3"}


def _job_naming_alerts(rendered) -> list[dict]:
    """Every rendered alert whose text names the job on its GPU by a query of its workload_from."""
    rules, _ = _records(rendered)
    return [r for r in rules if "alert" in r
            and any("with query (printf" in r["annotations"][k] and "$job" in r["annotations"][k] for k in ("summary", "description"))]


def _workload_series(alerts: list[dict], start: int, end: int) -> str:
    """OpenMetrics of every series the alerts' job queries select, for each GPU of JOB_GPUS with its own pod (the
    values their matchers ask for, e.g. an XID of the drain class), a sample a minute from start to end."""
    wanted: dict[str, set] = {}  # name: the label values each of its selectors asks for
    for r in alerts:
        for text in (r["annotations"]["summary"], r["annotations"]["description"]):
            for q in re.findall(r"printf `([^`]*)`", text):
                for s in promql_tree.selectors(q.replace("%q", '"x"').replace("%%", "%")):
                    wanted.setdefault(s.name, set()).add(tuple(
                        (label, value.split("|")[0]) for label, op, value in s.matchers
                        if op == "=~" and re.fullmatch(r"[\w.:-]+(\|[\w.:-]+)*", value)))
    lines = []
    for name, asked in sorted(wanted.items()):
        lines.append(f"# TYPE {name} gauge")
        for g, fixed in itertools.product(JOB_GPUS, sorted(map(dict, asked), key=sorted)):
            labels = {**fixed, **JOB_NODE, "gpu": g["gpu"], "UUID": g["UUID"], "namespace": "ml", "pod": g["pod"]}
            text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            lines += [f"{name}{{{text}}} 1 {t}" for t in range(start, end + 1, 60)]
    return "\n".join(lines) + "\n# EOF\n"


def test_every_identity_alert_names_the_job_of_its_own_gpu(rendered, promtool, prometheus_bin, tmp_path):
    """Each alert that names its GPU's job in its text (README "Alert identity": the job in the annotations,
    never the labels), firing on two GPUs of one node with a job each, names each GPU's own job: Prometheus
    expands the text's query of the mode's workload_from at each evaluation. A label dropped from a
    workload_from's aggregation, or a query no longer narrowed to the alert's GPU, names another job or none."""
    alerts = _job_naming_alerts(rendered)
    assert len(alerts) >= 8, [r["alert"] for r in alerts]
    now = int(time.time())
    data = blocks_from_openmetrics(promtool, _workload_series(alerts, now - 40 * 60, now - 30), tmp_path / "data")
    firing = " or ".join(  # each GPU's identity on a constant: the alert fires at once, on both GPUs
        functools.reduce(lambda e, kv: f'label_replace({e}, "{kv[0]}", "{kv[1]}", "", "")',
                         sorted({**JOB_NODE, "gpu": g["gpu"], "UUID": g["UUID"]}.items()), "vector(1)")
        for g in JOB_GPUS)
    rules = [{"alert": r["alert"], "expr": firing, "labels": r.get("labels", {}), "annotations": r["annotations"]}
             for r in alerts]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "jobs", "interval": "1s", "rules": rules}]}))
    config = "global: {evaluation_interval: 1s}\nrule_files: [rules.yaml]\n"
    with Prometheus(prometheus_bin, data, config) as prom:
        deadline, active = time.monotonic() + 60, []
        while time.monotonic() < deadline and len(active) < 2 * len(alerts):
            time.sleep(1)
            active = [a for a in prom.get_json("/api/v1/alerts")["data"]["alerts"] if a["state"] == "firing"]
    assert len(active) == 2 * len(alerts), f"{len(active)} of {2 * len(alerts)} firing"
    for a in active:
        own = next(g["pod"] for g in JOB_GPUS if g["gpu"] == a["labels"]["gpu"])
        other = next(g["pod"] for g in JOB_GPUS if g["gpu"] != a["labels"]["gpu"])
        text = a["annotations"]["summary"] + " " + a["annotations"]["description"]
        assert f"ml/{own}" in text and other not in text, (a["labels"]["alertname"], a["labels"]["gpu"], text)
