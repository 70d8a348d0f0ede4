"""Issue 37 item 1, three audiences: an executive overview (capacity, GPU_UTIL's gauge beside SM and tensor activity,
cost per team and per job from price_per_gpu_hour, the GPU jobs' success rate from kube-state-metrics, inventory by
model and driver), an on-call view (what is firing now and on which job, nodes by health, exporters down, GPUs
lost, pending GPU pods, top failing jobs), and the failure-mode dashboards as the debug views; every row says whom
it serves.

No Grafana runs here: the rows and panels are read from the rendered JSON, the links resolved against the rendered
set, and the queries that carry arithmetic (the firing table's job join, cost, success rate, pending GPUs) are
evaluated by promtool on planted series.
"""
import copy
import re
import subprocess
from urllib.parse import parse_qsl, urlsplit

import pytest
import yaml

from dashboard_views import (
    assert_vmalert_tool_answers,
    AUDIENCE_IDS, DASHBOARD_IDS, all_panels, bundled_plan, dashboards_of, data_panels, variable_names)
from rulesgen.artifacts import plan
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.model import conventions

EXECUTIVE, ON_CALL = "dashboards/gpu-executive.json", "dashboards/gpu-on-call.json"
SEPARATOR = " · for "  # "<row title> · for <whom it serves>"
# kube-state-metrics v2 (docs/metrics/workload/pod-metrics.md, job-metrics.md), spelled out: the contract.
REQUESTS, POD_PHASE, POD_OWNER = "kube_pod_container_resource_requests", "kube_pod_status_phase", "kube_pod_owner"
JOB_COMPLETE, JOB_FAILED, JOB_FAILED_PODS = "kube_job_complete", "kube_job_failed", "kube_job_status_failed"
GPU_RESOURCE = "nvidia_com_gpu"


@pytest.fixture(scope="module")
def dashboards():
    return dashboards_of(bundled_plan())


def rows(dashboard) -> list[str]:
    return [p["title"] for p in dashboard["panels"] if p["type"] == "row"]


def chapter(dashboard, title: str) -> list[dict]:
    """The panels of the open row titled `title` (before its audience)."""
    panels, inside = [], False
    for p in dashboard["panels"]:
        if p["type"] == "row":
            inside = p["title"].split(SEPARATOR)[0] == title
        elif inside:
            panels.append(p)
    return panels


def panel(dashboard, title: str) -> dict:
    (found,) = [p for p in data_panels(dashboard) if p["title"] == title]
    return found


def audience_problems(dashboard) -> list[str]:
    """Rows whose title does not say, after " · for ", whom the row serves."""
    return [f"row {p['id']} {p['title']!r} says not whom it serves" for p in all_panels(dashboard)
            if p["type"] == "row" and not re.fullmatch(rf".+{re.escape(SEPARATOR)}\w.{{4,}}", p["title"])]


def evaluate(promtool, tmp_path, expr: str, series: list[dict], expected: list[dict], eval_time: str = "1h") -> None:
    """promtool evaluates expr (variables at All, Grafana's range one hour) over the planted series."""
    expr = re.sub(r'=~"\$\w+"', '=~".*"', expr).replace("$__range_s", "3600").replace("$__range", "1h")
    test = tmp_path / "query.yaml"
    test.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": expr, "eval_time": eval_time, "exp_samples": expected}]}]}))
    proc = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------------------------

def test_executive_and_on_call_dashboards_have_their_chapters(dashboards):
    """The executive and on-call dashboards exist, open rows only, in this order."""
    assert [r.split(SEPARATOR)[0] for r in rows(dashboards[EXECUTIVE])] == [
        "Capacity", "Utilisation", "Utilisation over time", "Cost", "Jobs", "Inventory"]
    assert [r.split(SEPARATOR)[0] for r in rows(dashboards[ON_CALL])] == ["Firing now", "Nodes", "Workloads"]
    assert set(AUDIENCE_IDS) < set(DASHBOARD_IDS)
    for path in (EXECUTIVE, ON_CALL):
        assert dashboards[path]["uid"] == conventions.stable_uid(path.split("/")[1].removesuffix(".json"))


@pytest.mark.parametrize("dashboard_id", DASHBOARD_IDS)
def test_every_row_says_whom_it_serves(dashboards, dashboard_id):
    d = dashboards[f"dashboards/{dashboard_id}.json"]
    assert rows(d) and audience_problems(d) == []


def test_the_audience_check_catches_a_row_that_does_not_say(dashboards):
    bad = copy.deepcopy(dashboards["dashboards/gpu-health.json"])
    bad["panels"][0]["title"] = "Overview"
    bad["panels"][-1]["title"] = "Hot GPU · for "
    assert len(audience_problems(bad)) == 2


def test_utilisation_gauges_put_sm_and_tensor_activity_beside_gpu_util(dashboards):
    catalog = bundled_plan().catalog
    gauges = chapter(dashboards[EXECUTIVE], "Utilisation")
    assert [p["type"] for p in gauges] == ["gauge"] * 3
    assert [p["gridPos"]["y"] for p in gauges] == [gauges[0]["gridPos"]["y"]] * 3  # one line, side by side
    reads = [re.findall(r"[\w:]+(?=\{)", p["targets"][0]["expr"])[0] for p in gauges]
    assert reads == [catalog.named("util_per_gpu"), catalog.named("sm_active_per_gpu"),
                     catalog.named("tensor_active_per_gpu")]
    assert all(p["fieldConfig"]["defaults"]["unit"] == "percentunit" and p["fieldConfig"]["defaults"]["max"] == 1
               for p in gauges)


def test_cost_per_team_and_job_take_the_configs_prices(tmp_path):
    config = tmp_path / "rulesgen.yaml"
    config.write_text("dashboards:\n  price_per_gpu_hour:\n    default: 1.75\n    models:\n      '.*H100.*': 4.5\n")
    d = dashboards_of(plan(bundled_catalog_dir(), config, None))[EXECUTIVE]
    team, job = panel(d, "Cost per team (namespace) in range"), panel(d, "Cost per job in range (top 10)")
    for p, by in ((team, "cluster, namespace"), (job, "cluster, namespace, workload")):
        expr = p["targets"][0]["expr"]
        assert f"sum by ({by}) (sum_over_time(" in expr and ") * 4.5)" in expr and ") * 1.75)" in expr, expr
        assert 'modelName=~".*H100.*"' in expr
    assert [link["url"].split("?")[0] for link in job["fieldConfig"]["defaults"]["links"]] == [
        f"/d/{conventions.stable_uid('gpu-jobs')}/gpu-jobs"]


GPU = 'cluster="c", Hostname="n1", UUID="GPU-{n}", gpu="{n}"'


def test_promtool_prices_the_gpu_hours_each_job_held(promtool, dashboards, tmp_path):
    """Job x holds GPUs 0 and 1 for the hour, job y GPU 2 for its last 29 minutes, which the 5-minute steps count as
    half an hour (the cost is exact to a step): at the default price of 2 per GPU-hour, 4 and 1."""
    expr = panel(dashboards[EXECUTIVE], "Cost per job in range (top 10)")["targets"][0]["expr"]
    assert bundled_plan().settings.dashboards.price_default == 2 and not bundled_plan().settings.dashboards.prices
    series = [{"series": f'gpu:dcgm_reporting:timestamp{{{GPU.format(n=n)}, modelName="A100"}}', "values": "1x90"}
              for n in range(3)]
    series += [{"series": f'gpu:dcgm_workload:info{{{GPU.format(n=n)}, namespace="team", pod="x-{n}", workload="x"}}',
                "values": "1x90"} for n in range(2)]
    series += [{"series": f'gpu:dcgm_workload:info{{{GPU.format(n=2)}, namespace="team", pod="y-0", workload="y"}}',
                "values": "_x61 1x29"}]
    evaluate(promtool, tmp_path, expr, series, [
        {"labels": '{cluster="c", namespace="team", workload="x"}', "value": 4},
        {"labels": '{cluster="c", namespace="team", workload="y"}', "value": 1}], eval_time="90m")


def ksm_job(name: str, condition: str, gpus: int) -> list[dict]:
    """A finished Kubernetes Job (kube-state-metrics) with one pod requesting `gpus` GPUs (none: CPU only)."""
    pod = f'namespace="team", pod="{name}-abc"'
    out = [{"series": f'{POD_OWNER}{{{pod}, owner_kind="Job", owner_name="{name}"}}', "values": "1x70"},
           {"series": f'{JOB_COMPLETE}{{namespace="team", job_name="{name}", condition="true"}}',
            "values": f"{int(condition == 'complete')}x70"},
           {"series": f'{JOB_FAILED}{{namespace="team", job_name="{name}", condition="true"}}',
            "values": f"{int(condition == 'failed')}x70"}]
    if gpus:
        out.append({"series": f'{REQUESTS}{{{pod}, container="main", resource="{GPU_RESOURCE}", '
                              f'unit="integer"}}', "values": f"{gpus}x70"})
    return out


def test_promtool_reads_the_gpu_jobs_success_rate_from_kube_state_metrics(promtool, dashboards, tmp_path):
    """Two GPU jobs completed, one failed; a CPU-only job that failed is not a GPU job: 2/3."""
    expr = panel(dashboards[EXECUTIVE], "GPU job success rate")["targets"][0]["expr"]
    series = [*ksm_job("a", "complete", 8), *ksm_job("b", "complete", 1), *ksm_job("c", "failed", 4),
              *ksm_job("cpu", "failed", 0)]
    evaluate(promtool, tmp_path, expr, series, [{"labels": "{}", "value": 2 / 3}])


def test_promtool_counts_the_gpus_pending_pods_request(promtool, dashboards, tmp_path):
    expr = panel(dashboards[ON_CALL], "GPUs requested by pending pods")["targets"][0]["expr"]
    gpu = f'container="main", resource="{GPU_RESOURCE}", unit="integer"'
    series = [{"series": f'{REQUESTS}{{namespace="a", pod="waits", {gpu}}}', "values": "2x70"},
              {"series": f'{REQUESTS}{{namespace="a", pod="runs", {gpu}}}', "values": "4x70"},
              {"series": f'{POD_PHASE}{{namespace="a", pod="waits", phase="Pending"}}', "values": "1x70"},
              {"series": f'{POD_PHASE}{{namespace="a", pod="runs", phase="Pending"}}', "values": "0x70"},
              {"series": f'{POD_PHASE}{{namespace="a", pod="runs", phase="Running"}}', "values": "1x70"}]
    evaluate(promtool, tmp_path, expr, series, [{"labels": '{namespace="a"}', "value": 2}])


def test_inventory_counts_gpus_by_model_and_driver_under_both_field_names(dashboards):
    expr = panel(dashboards[EXECUTIVE], "Inventory by GPU model and driver")["targets"][0]["expr"]
    assert expr.startswith("count by (cluster, modelName, driver) (")
    assert '"driver", "$1", "DCGM_FI_DRIVER_VERSION"' in expr and '"driver", "$1", "DCGM_FI_SYSTEM_DRIVER_VERSION"' in expr


def test_on_call_shows_nodes_exporters_gpus_lost_pending_pods_and_failing_jobs(dashboards):
    d = dashboards[ON_CALL]
    reads = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in data_panels(d)}
    assert 'failure_mode="exporter_down"' in reads["dcgm-exporter targets"] and "up{" in reads["dcgm-exporter targets"]
    assert 'failure_mode="gpu_lost"' in reads["GPUs lost"]
    assert POD_PHASE in reads["GPUs requested by pending pods"]
    assert JOB_FAILED_PODS in reads["Top failing GPU jobs"]
    assert "severity=\"critical\"" in reads["Nodes by health"]
    assert [p["title"] for p in chapter(d, "Firing now")] == ["Alerts firing now", "Firing alerts by failure mode"]


def test_from_the_on_call_table_the_gpu_runbook_and_job_are_one_click_away(dashboards):
    """A click on a row opens its links (Grafana's data links): the runbook, the GPU's view, the job's GPUs; each
    target is a rendered dashboard that declares every variable the link sets."""
    by_uid = {d["uid"]: d for d in dashboards.values()}
    table = panel(dashboards[ON_CALL], "Alerts firing now")
    links = {link["title"].split(" ")[0]: link["url"] for link in table["fieldConfig"]["defaults"]["links"]}
    assert links["Runbook:"].startswith(bundled_plan().settings.runbook_base_url)
    for kind, target, variables in (("GPU", "gpu-health", {"Hostname", "gpu"}), ("Job", "gpu-jobs", {"namespace", "workload"})):
        url = urlsplit(links[kind])
        dashboard = by_uid[url.path.split("/")[2]]
        assert dashboard["uid"] == conventions.stable_uid(target)
        params = {k[4:] for k, _ in parse_qsl(url.query) if k.startswith("var-")}
        assert variables <= params <= set(variable_names(dashboard)), (kind, params)
    fields = set(table["transformations"][1]["options"]["indexByName"])
    assert {"namespace", "workload", "pod", "gpu", "Hostname"} <= fields


def planted_firing(dashboards) -> tuple[str, list, list]:
    """The on-call table's query, and four firing alerts: a drain alert (DBE) names the job its fault hit (the
    drain onset's), though a notebook runs on the GPU now; a warning on the same GPU names the notebook, the
    GPU's pod now; a node alert stays as it is; an efficiency alert that already names its pod is one row, not
    two."""
    expr = panel(dashboards[ON_CALL], "Alerts firing now")["targets"][0]["expr"]
    expr = re.sub(r'=~"\$\w+"', '=~".*"', expr)
    gpu = ('alertname="GPUECCUncorrectable", failure_mode="ecc_uncorrectable", severity="critical", action="drain", '
           + GPU.format(n=0))
    hot = ('alertname="GPUThermalThrottling", failure_mode="thermal_throttling", severity="warning", '
           'action="investigate", ' + GPU.format(n=0))
    idle = ('alertname="GPUIdleAllocated", failure_mode="gpu_idle_allocated", severity="info", namespace="team", '
            'pod="x-1", ' + GPU.format(n=1))
    node = 'alertname="GPUExporterDown", failure_mode="exporter_down", severity="warning", cluster="c", Hostname="n2"'
    series = [s for labels, since in ((gpu, 120), (hot, 180), (idle, 60), (node, 300)) for s in (
        {"series": f"ALERTS_FOR_STATE{{{labels}}}", "values": f"{since}x70"},
        {"series": f'ALERTS{{{labels}, alertstate="firing"}}', "values": "1x70"})]
    series += [{"series": f'gpu:dcgm_workload:info{{{GPU.format(n=1)}, namespace="team", pod="x-1", workload="x"}}',
                "values": "1x70"},
               # GPU 0: the job's pod until 2m, a notebook from 3m; the drain episode started at 2m under the job
               # (read at 10m: the job's pod is past both engines' 5m lookback, as a replaced pod's series is)
               {"series": f'gpu:dcgm_workload:info{{{GPU.format(n=0)}, namespace="team", pod="x-0", workload="x"}}',
                "values": "1x2"},
               {"series": f'gpu:dcgm_workload:info{{{GPU.format(n=0)}, namespace="lab", pod="nb-0", workload="nb"}}',
                "values": "_x2 1x67"},
               {"series": f'gpu:dcgm_drain_alert:onset{{{GPU.format(n=0)}, namespace="team", pod="x-0", workload="x"}}',
                "values": "_ _ 120"}]
    expected = [
        {"labels": f'{{{gpu}, namespace="team", workload="x", pod="x-0", runbook="ecc-uncorrectable", priority="1"}}',
         "value": 120000},
        {"labels": f'{{{hot}, namespace="lab", workload="nb", pod="nb-0", runbook="thermal-throttling", priority="2"}}',
         "value": 180000},
        {"labels": f'{{{idle}, workload="x", runbook="gpu-idle-allocated", priority="3"}}', "value": 60000},
        {"labels": f'{{{node}, runbook="exporter-down", priority="2"}}', "value": 300000}]
    return expr, series, expected


def test_promtool_names_the_job_on_each_firing_gpu(promtool, dashboards, tmp_path):
    evaluate(promtool, tmp_path, *planted_firing(dashboards), eval_time="10m")


def test_vmalert_tool_names_the_job_alike(vmalert_tool, dashboards, tmp_path):
    """MetricsQL (vmalert-tool) reads the job join as promtool does."""
    expr, series, expected = planted_firing(dashboards)
    assert_vmalert_tool_answers(vmalert_tool, tmp_path, expr, series, expected, eval_time="10m")
