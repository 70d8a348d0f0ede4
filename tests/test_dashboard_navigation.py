"""Issue 37 item 3, navigation: uneditable dashboards linked to each other by tag (keeping variables and time), a
way back to the fleet, data links from per-GPU, per-node and per-job series to that GPU's, node's or job's view,
every failure-mode row collapsed below the open header row, a workload variable, the host variable read from a
record that carries the host label whatever the exporter calls it, and every variable used.

No Grafana runs here: each link target (a dashboard uid, a tag) must exist in the rendered set, each variable a
link sets must be one of the target's, each check also run on a planted mistake to show that it can fail.
"""
import copy
import re
from urllib.parse import parse_qsl, urlsplit

import pytest

from dashboard_views import (
    AUDIENCE_IDS, DASHBOARD_IDS, all_panels, bundled_plan, dashboards_of, data_panels, referenced_variables, variable_names)
from rulesgen.builders.dashboards.context import Context
from rulesgen.builders.dashboards.links import VIEWS, view_url
from rulesgen.promql import labels as label_flow

# Data-link macros Grafana fills from the series or row clicked (Grafana docs, "Data link variables").
LINK_MACROS = re.compile(r"\$\{(__field\.labels\.\w+|__data\.fields\.\w+|__url_time_range|__value\.\w+)\}")


@pytest.fixture(scope="module")
def dashboards():
    return dashboards_of(bundled_plan())


def data_links(panel) -> list[dict]:
    return panel.get("fieldConfig", {}).get("defaults", {}).get("links", [])


def link_problems(dashboards) -> list[str]:
    """Dashboard links whose tags select no rendered dashboard; data links to a uid not rendered, setting a
    variable the target lacks, or using a macro Grafana does not fill; a link out of Grafana that is no runbook."""
    runbook_base = bundled_plan().settings.runbook_base_url
    by_uid = {d["uid"]: d for d in dashboards.values()}
    tags = {t for d in dashboards.values() for t in d.get("tags", [])}
    problems = []
    for path, d in sorted(dashboards.items()):
        for link in d.get("links", []):
            if link.get("type") == "dashboards" and not set(link.get("tags", [])) <= tags:
                problems.append(f"{path}: dashboard link {link['title']!r}: no dashboard has tags {link['tags']}")
        for p in data_panels(d):
            for link in data_links(p):
                url = urlsplit(link["url"])
                where = f"{path} panel {p['id']} link {link['title']!r}"
                if url.netloc:  # outside Grafana: only the runbooks
                    if not link["url"].startswith(runbook_base):
                        problems.append(f"{where}: {link['url']} is no runbook")
                    continue
                m = re.fullmatch(r"/d/([\w-]+)/[\w-]+", url.path)
                target = by_uid.get(m.group(1)) if m else None
                if target is None:
                    problems.append(f"{where}: no rendered dashboard at {url.path}")
                    continue
                params = [k for k, _ in parse_qsl(url.query.replace("${__url_time_range}", "from=x&to=y"))]
                unknown = [k for k in params if k.startswith("var-") and k[4:] not in variable_names(target)]
                problems += [f"{where}: {target['title']} has no variable {k[4:]}" for k in unknown]
                problems += [f"{where}: Grafana fills no {m}" for m in re.findall(r"\$\{[^}]*\}", link["url"] + link["title"])
                             if not LINK_MACROS.fullmatch(m)]
    return problems


def variable_problems(dashboard) -> list[str]:
    """A declared variable no panel query reads, or a query reading a variable the dashboard does not declare."""
    declared = set(variable_names(dashboard)) - {"datasource"}
    used = {v for p in data_panels(dashboard) for t in p.get("targets", []) for v in referenced_variables(t["expr"])}
    queried = used | {v for x in dashboard.get("annotations", {}).get("list", []) for v in referenced_variables(x.get("expr", ""))}
    queried |= {v for x in dashboard["templating"]["list"] for v in referenced_variables(x.get("query", ""))}
    return ([f"variable {v} is used by no panel" for v in sorted(declared - used)]
            + [f"${v} is read but not declared" for v in sorted(queried - declared - {"datasource"})])


def row_problems(dashboard) -> list[str]:
    """The header row (id 1) open, every failure-mode row (id >= 100) collapsed with its panels inside it."""
    problems = []
    for p in dashboard["panels"]:
        if p["type"] == "row" and p["id"] >= 100 and not (p["collapsed"] and p["panels"]):
            problems.append(f"row {p['title']!r} is not collapsed with its panels")
        elif p["type"] == "row" and p["id"] < 100 and p["collapsed"]:
            problems.append(f"header row {p['title']!r} is collapsed")
        elif p["type"] != "row" and p["id"] >= 100:
            problems.append(f"panel {p['id']} {p['title']!r} lies outside its row")
    return problems


# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dashboard_id", DASHBOARD_IDS)
def test_dashboards_are_not_editable_and_link_to_each_other_keeping_variables_and_time(dashboards, dashboard_id):
    d = dashboards[f"dashboards/{dashboard_id}.json"]
    assert d["editable"] is False
    links = d["links"]
    assert links and all(link["type"] == "dashboards" and link["includeVars"] and link["keepTime"] for link in links)
    everyone = [link for link in links if link["tags"] == ["rulesgen"]]
    assert len(everyone) == 1 and everyone[0]["asDropdown"]
    back = [link for link in links if link["tags"] == ["gpu-fleet-overview"]]
    assert len(back) == (dashboard_id != "gpu-fleet-overview")


def test_every_link_target_exists(dashboards):
    assert link_problems(dashboards) == []
    fleet = [d for d in dashboards.values() if "gpu-fleet-overview" in d["tags"]]
    assert [d["uid"] for d in fleet] == [dashboards["dashboards/gpu-fleet-overview.json"]["uid"]]


def test_the_link_check_catches_planted_targets(dashboards):
    bad = copy.deepcopy(dashboards)
    health = bad["dashboards/gpu-health.json"]
    health["links"][0]["tags"] = ["gpu-fleet"]
    panel = next(p for p in data_panels(health) if data_links(p) and p["type"] == "timeseries")
    data_links(panel)[0]["url"] = data_links(panel)[0]["url"].replace("/d/rg-", "/d/xx-")
    data_links(panel)[1]["url"] += "&var-Hostnme=${__field.labels.Hostname}&from=${__from_alert}"
    found = link_problems(bad)
    assert len(found) == 4, found
    assert "no dashboard has tags ['gpu-fleet']" in found[0] and "no rendered dashboard at /d/xx-" in found[1]
    assert "has no variable Hostnme" in found[2] and "Grafana fills no ${__from_alert}" in found[3]


def test_series_link_to_their_gpus_nodes_and_jobs_views(dashboards):
    """Per-GPU series link to the GPU's and its node's view, per-node series to the node's, job and rank series to
    the job's GPUs; a link reads only labels the panel's series carry (the rules' label sets)."""
    p = bundled_plan()
    records = label_flow.record_labels([(r.record, r.expr) for r in p.rules.rules if r.record])
    titles = {view.name: view.title.split(" ")[0] for view in VIEWS}
    counts = {name: 0 for name in titles}
    for path, d in sorted(dashboards.items()):
        for panel in data_panels(d):
            for link in data_links(panel):
                if link["title"].startswith("Runbook") or "since before the alert" in link["title"]:
                    continue  # the firing-now table's (tests/test_dashboard_firing.py)
                name = next(n for n, word in titles.items() if link["title"].startswith(word))
                counts[name] += 1
                for label in re.findall(r"__field\.labels\.(\w+)", link["url"]):
                    for t in panel["targets"]:
                        expr = re.sub(r"\$__\w+", "5m", t["expr"])
                        assert label_flow.output_labels(expr, records).can_carry(label), (path, panel["title"], label)
    assert counts["gpu"] >= 30 and counts["node"] >= counts["gpu"] and counts["job"] >= 8, counts
    health = dashboards["dashboards/gpu-health.json"]
    main = next(q for q in all_panels(health) if q.get("id") == 601)  # thermal throttling's main panel
    assert [link["title"] for link in data_links(main)] == [
        "GPU ${__field.labels.gpu} on ${__field.labels.Hostname}: its health",
        "Node ${__field.labels.Hostname}: its GPUs' health"]
    assert data_links(main)[0]["url"] == view_url(Context.of(p.catalog, p.settings, p.rules), "gpu-health", {
        "cluster": "${__field.labels.cluster}", "host": "${__field.labels.Hostname}", "gpu": "${__field.labels.gpu}"})
    assert data_links(main)[0]["url"].endswith("&${__url_time_range}")


@pytest.mark.parametrize("dashboard_id", DASHBOARD_IDS)
def test_failure_mode_rows_are_collapsed_below_the_open_header(dashboards, dashboard_id):
    d = dashboards[f"dashboards/{dashboard_id}.json"]
    assert row_problems(d) == []
    assert d["panels"][0]["type"] == "row" and d["panels"][0]["id"] == 1 and not d["panels"][0]["collapsed"]
    collapsed = sum(p["type"] == "row" and p["collapsed"] for p in d["panels"])
    assert collapsed == 0 if dashboard_id in AUDIENCE_IDS else collapsed >= 1


def test_the_row_check_catches_an_open_failure_mode_row(dashboards):
    bad = copy.deepcopy(dashboards["dashboards/gpu-health.json"])
    row = next(p for p in bad["panels"] if p["type"] == "row" and p["id"] >= 100)
    bad["panels"] += row.pop("panels")
    row["collapsed"], row["panels"] = False, []
    found = row_problems(bad)
    assert found[0] == f"row {row['title']!r} is not collapsed with its panels" and len(found) > 1


@pytest.mark.parametrize("dashboard_id", DASHBOARD_IDS)
def test_every_variable_is_used_and_every_variable_read_is_declared(dashboards, dashboard_id):
    assert variable_problems(dashboards[f"dashboards/{dashboard_id}.json"]) == []


def test_the_variable_check_catches_an_unused_and_an_undeclared_variable(dashboards):
    bad = copy.deepcopy(dashboards["dashboards/gpu-fleet-overview.json"])
    bad["templating"]["list"].append(dict(bad["templating"]["list"][-1], name="pod"))
    data_panels(bad)[0]["targets"][0]["expr"] += ' + on () group_left () vector(0) * count(up{job=~"$job"})'
    assert variable_problems(bad) == ["variable pod is used by no panel", "$job is read but not declared"]


def test_job_dashboards_select_by_workload(dashboards):
    """The job identity the rules already read (gpu:dcgm_workload:info's workload, from workload_regex) is a
    variable wherever the panels read job series, between namespace and pod."""
    for path in ("dashboards/gpu-jobs.json", "dashboards/gpu-health.json", "dashboards/gpu-performance.json"):
        names = variable_names(dashboards[path])
        assert names[names.index("namespace") + 1:names.index("pod")] == ["workload"], path
    jobs = dashboards["dashboards/gpu-jobs.json"]
    assert sum('workload=~"$workload"' in t["expr"] for p in data_panels(jobs) for t in p["targets"]) >= 10


def test_the_host_variable_reads_a_record_that_normalises_every_host_label(dashboards):
    """dcgm-exporter < 4.8.3 calls the host label Hostname, 4.8.3+ hostname: label_values(<raw field>, Hostname)
    is empty on new exporters. Every variable reads a recording rule instead, and the rule that writes it copies
    each host label the settings list into the one the dashboards read."""
    p = bundled_plan()
    s = p.settings
    written = {r.record: r.expr for r in p.rules.rules if r.record}
    for path, d in sorted(dashboards.items()):
        for v in d["templating"]["list"][1:]:
            record = re.match(r"label_values\(([\w:]+)", v["query"]).group(1)
            assert record in written and "DCGM_" not in v["query"], (path, v["query"])
    reporting = written[p.catalog.named("reporting")]
    normalised = re.findall(r'label_replace\(.*?"(\w+)", "\$1", "(\w+)", "\(\.\+\)"\)', reporting, re.S)
    assert {(s.host_label, alias) for alias in s.host_aliases} <= set(normalised), normalised
    assert "hostname" in s.host_aliases and s.host_label == "Hostname"


def test_every_legend_reads_labels_its_query_carries(dashboards):
    """A legend's {{label}} is a label its query's series can carry (the rules' label sets): a label dropped from a
    record's aggregation would draw an unnamed series ("c1  SM active")."""
    p = bundled_plan()
    records = label_flow.record_labels([(r.record, r.expr) for r in p.rules.rules if r.record])
    legends = 0
    for path, d in sorted(dashboards.items()):
        for panel in data_panels(d):
            for t in panel.get("targets", []):
                expr = re.sub(r"\$__\w+", "5m", t.get("expr", ""))
                for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", "")):
                    legends += 1
                    assert label_flow.output_labels(expr, records).can_carry(label), (path, panel["title"], label, expr)
    assert legends >= 100, legends
