"""Issue 37 item 2, what is firing now: on GPU Health (on call) and the fleet overview, a table of the firing
alerts from ALERTS_FOR_STATE (the time each became active, which Prometheus and vmalert both write: vmalert for
alerts with a `for:`, every rulesgen alert), one row per alert and GPU, node or cluster, the most severe first,
each row linking to its runbook (the catalog's runbook path: ALERTS has no annotations) and to its GPU's or
node's view from before the alert became active.

No Grafana runs here: the table's shape is checked against what Grafana's table reads (instant table queries,
merge and organize transformations, data links over the row's fields), and its query is evaluated by promtool
and vmalert-tool on planted ALERTS and ALERTS_FOR_STATE series.
"""
import re
import subprocess

import pytest
import yaml

from dashboard_views import assert_vmalert_tool_answers, bundled_plan, dashboards_of, data_panels
from rulesgen.builders.dashboards.firing import LEAD_SECONDS, slug_passes
from rulesgen.model import conventions
from rulesgen.model.catalog import SEVERITIES
from rulesgen.promql import tree as promql_tree

TABLES = {"dashboards/gpu-health.json": "Alerts firing now", "dashboards/gpu-fleet-overview.json": "Alerts firing now"}


@pytest.fixture(scope="module")
def dashboards():
    return dashboards_of(bundled_plan())


def firing_table(dashboards, path):
    (table,) = [p for p in data_panels(dashboards[path]) if p["type"] == "table" and p["title"] == TABLES[path]]
    return table


def label_replace(labels: dict, dst: str, replacement: str, src: str, regex: str) -> dict:
    """Prometheus' label_replace on one label set: the anchored regex on src's value, $n expanded."""
    m = re.fullmatch(regex, labels.get(src, ""))
    if not m:
        return labels
    value = re.sub(r"\$(\d+)", lambda g: m.group(int(g.group(1))), replacement)
    return {**{k: v for k, v in labels.items() if k != dst}, **({dst: value} if value else {})}


def apply_label_replaces(expr: str, labels: dict) -> dict:
    """The label_replace calls wrapped around the table's query, applied innermost first (their arguments come in that
    order in the text)."""
    for call in re.findall(r'"(\w+)", "([^"]*)", "(\w+)", "([^"]*)"\)', expr):
        labels = label_replace(labels, *call)
    return labels


@pytest.mark.parametrize("path", sorted(TABLES))
def test_the_table_reads_the_firing_alerts_with_the_time_they_became_active(dashboards, path):
    table = firing_table(dashboards, path)
    a, b = table["targets"]
    assert [(t["refId"], t["instant"], t["format"]) for t in (a, b)] == [("A", True, "table"), ("B", True, "table")]
    for t in (a, b):
        tree = promql_tree.parse(re.sub(r"\$(\w+)", r"\1", t["expr"]))
        assert set(promql_tree.names_read(tree)) == {"ALERTS_FOR_STATE", "ALERTS"}
        assert promql_tree.grouping(tree) == () or all(kind != "by" for kind, _ in promql_tree.grouping(tree))
        assert 'and ignoring (alertstate) ALERTS{alertstate="firing"}' in t["expr"]
    inner = a["expr"].removeprefix("(").removesuffix(") * 1000")
    assert b["expr"] == f"({inner} - {LEAD_SECONDS}) * 1000"  # where a row's link opens the time range
    organize = next(x for x in table["transformations"] if x["id"] == "organize")["options"]
    assert [x["id"] for x in table["transformations"]] == ["merge", "organize"]
    assert organize["renameByName"]["Value #A"] == "Active since" and organize["renameByName"]["priority"] == "Severity"
    assert table["options"]["sortBy"] == [{"desc": False, "displayName": "Severity"}]
    modes = bundled_plan().catalog.failure_modes
    ids = re.search(r'failure_mode=~"([^"]*)"', a["expr"]).group(1).split("|")
    groups = {"dashboards/gpu-health.json": ("health",), "dashboards/gpu-fleet-overview.json": tuple(m.group for m in modes)}
    assert ids == [m.id for m in modes if m.group in groups[path]]


def test_rows_are_sorted_by_severity_and_name_it(dashboards):
    """priority 1 is the most severe of SEVERITIES; the table sorts by it ascending and draws its name."""
    expr = firing_table(dashboards, "dashboards/gpu-health.json")["targets"][0]["expr"]
    ranks = [apply_label_replaces(expr, {"severity": s, "failure_mode": "gpu_lost"})["priority"] for s in SEVERITIES]
    assert ranks == sorted(ranks) == ["1", "2", "3"]
    override = next(o for o in firing_table(dashboards, "dashboards/gpu-health.json")["fieldConfig"]["overrides"]
                    if o["matcher"]["options"] == "Severity")
    names = override["properties"][0]["value"][0]["options"]
    assert [names[r]["text"] for r in ranks] == list(SEVERITIES)


def test_every_failure_modes_runbook_is_reached_from_its_label(dashboards):
    """The runbook link reads the `runbook` label the query makes from failure_mode: for every catalog failure
    mode it is the path the alerts' runbook_url names, and that page is rendered."""
    p = bundled_plan()
    table = firing_table(dashboards, "dashboards/gpu-fleet-overview.json")
    expr = table["targets"][0]["expr"]
    link = next(x for x in table["fieldConfig"]["defaults"]["links"] if x["title"].startswith("Runbook"))
    pages = {a.path for a in p.artifacts}
    for fm in p.catalog.failure_modes:
        slug = apply_label_replaces(expr, {"failure_mode": fm.id, "severity": "info"})["runbook"]
        assert link["url"].replace("${__data.fields.runbook}", slug) == conventions.runbook_url(p.settings.runbook_base_url, fm.id)
        assert conventions.runbook_path(fm.id) in pages
    assert slug_passes(list(p.catalog.failure_modes)) == max(fm.id.count("_") for fm in p.catalog.failure_modes) >= 4


def test_a_row_links_to_its_gpu_and_node_from_before_the_alert(dashboards):
    table = firing_table(dashboards, "dashboards/gpu-health.json")
    links = table["fieldConfig"]["defaults"]["links"]
    health = dashboards["dashboards/gpu-health.json"]
    gpu, node = links[1]["url"], links[2]["url"]
    assert gpu.startswith(f"/d/{health['uid']}/gpu-health?") and node.startswith(f"/d/{health['uid']}/gpu-health?")
    assert "var-gpu=${__data.fields.gpu}" in gpu and "var-gpu" not in node
    assert all(u.endswith("&from=${__data.fields.window_start_ms}&to=now") for u in (gpu, node))
    # every field a link reads is a column of the table: a label the alerts carry, the runbook label, or B's value
    hidden = {o["matcher"]["options"] for o in table["fieldConfig"]["overrides"]
              if {"id": "custom.hidden", "value": True} in o["properties"]}
    assert hidden == {"window_start_ms", "runbook"}
    s = bundled_plan().settings
    fields = {f for x in links for f in re.findall(r"__data\.fields\.(\w+)", x["url"] + x["title"])}
    assert fields == {"runbook", "failure_mode", s.cluster_label, s.host_label, "gpu", "window_start_ms"}


def test_every_alert_has_a_for_so_vmalert_writes_its_for_state():
    """vmalert writes ALERTS_FOR_STATE only for rules with `for` > 0 (alertForToTimeSeries); Prometheus for every
    active alert."""
    alerts = [r for r in bundled_plan().rules.rules if r.alert]
    assert alerts and all(r.for_seconds > 0 for r in alerts)


def planted_alerts(dashboards) -> tuple[str, list, list]:
    """The fleet table's query (variables at All), and two firing alerts (a warning one on a GPU, a critical one on
    a node) and a pending one: the query keeps the firing two, each with its runbook slug and priority, valued with
    its active time in ms."""
    expr = firing_table(dashboards, "dashboards/gpu-fleet-overview.json")["targets"][0]["expr"]
    expr = re.sub(r'=~"\$\w+"', '=~".*"', expr)
    gpu = 'alertname="GPUXIDSameGPUAcrossJobs", failure_mode="xid_same_gpu_across_jobs", severity="warning", cluster="c", Hostname="n1", gpu="0"'
    node = 'alertname="GPUExporterDown", failure_mode="exporter_down", severity="critical", cluster="c", Hostname="n2"'
    pending = 'alertname="GPULost", failure_mode="gpu_lost", severity="critical", cluster="c", Hostname="n3", gpu="1"'
    series = [{"series": f"ALERTS_FOR_STATE{{{gpu}}}", "values": "120x10"},
              {"series": f'ALERTS{{{gpu}, alertstate="firing"}}', "values": "1x10"},
              {"series": f"ALERTS_FOR_STATE{{{node}}}", "values": "300x10"},
              {"series": f'ALERTS{{{node}, alertstate="firing"}}', "values": "1x10"},
              {"series": f"ALERTS_FOR_STATE{{{pending}}}", "values": "540x10"},
              {"series": f'ALERTS{{{pending}, alertstate="pending"}}', "values": "1x10"}]
    expected = [
        {"labels": f'{{{node}, runbook="exporter-down", priority="1"}}', "value": 300000},
        {"labels": f'{{{gpu}, runbook="xid-same-gpu-across-jobs", priority="2"}}', "value": 120000}]
    return expr, series, expected


def test_promtool_evaluates_the_table_query_on_planted_alerts(promtool, dashboards, tmp_path):
    expr, series, expected = planted_alerts(dashboards)
    test = tmp_path / "firing.yaml"
    test.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": expr, "eval_time": "5m", "exp_samples": expected}]}]}))
    proc = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_vmalert_tool_evaluates_the_table_query_alike(vmalert_tool, dashboards, tmp_path):
    """MetricsQL (VictoriaMetrics' engine, vmalert-tool) reads the query as promtool does."""
    expr, series, expected = planted_alerts(dashboards)
    assert_vmalert_tool_answers(vmalert_tool, tmp_path, expr, series, expected)
