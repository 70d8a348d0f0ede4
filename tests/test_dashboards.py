"""Grafana dashboards: schema, PromQL, known series, dashboard-linter rules, and alert deep links.

No Grafana server can run here, so the dashboards are validated against Grafana's published dashboard
schema instead: tests/schemas/grafana-dashboard.schema.json, generated from the TypeScript types of
the @grafana/schema npm package (tools/grafana-schema/README.md says how). Every query is parsed by the
real promtool with Grafana's variables substituted; every series a query names must be a catalog
metric or a rendered recording rule; the checks of Grafana's dashboard-linter run on every panel.
Each check is also run on a planted mistake, to show that it can fail.
"""
import copy
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator

from conftest import ROOT
from dashboard_views import DASHBOARD_IDS, all_panels, dashboards_of
from rulesgen.builders.dashboards.chapters import SEPARATOR, group_audience
from rulesgen.model import conventions, kube_state
from rulesgen.artifacts import plan, write_all
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.promql import tree as promql_tree

SCHEMA = json.loads((ROOT / "tests/schemas/grafana-dashboard.schema.json").read_text())
Draft7Validator.check_schema(SCHEMA)
VALIDATOR = Draft7Validator(SCHEMA)
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# Grafana's variables, as a value each: durations for ranges, names for label values.
GRAFANA_VARIABLES = (("$__rate_interval", "5m"), ("$__interval", "1m"), ("$__range_s", "3600"), ("$__range", "1h"))
FUNCTION_OR_KEYWORD = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                       "offset", "inf", "nan"}


@pytest.fixture(scope="module")
def bundled():
    return plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)


@pytest.fixture(scope="module")
def dashboards(bundled):
    return {a.path: json.loads(a.text) for a in bundled.artifacts if a.path.startswith("dashboards/") and a.path.endswith(".json")}


@pytest.fixture(scope="module")
def known_series(bundled):
    return ({r.record for r in bundled.rules.rules if r.record} | {n for m in bundled.catalog.metrics for n in m.names}
            | {"ALERTS", "ALERTS_FOR_STATE", "up"}  # the series the engines write themselves
            | set(kube_state.SERIES))  # kube-state-metrics' pods and Jobs (the audience dashboards)


@pytest.fixture(scope="module")
def counters(bundled):
    return sorted(n for m in bundled.catalog.metrics if m.type == "counter" for n in m.names)


# ---------------------------------------------------------------------------------------------
# helpers: what a dashboard holds, and the checks
# ---------------------------------------------------------------------------------------------

def queries(dashboard):
    """(where, PromQL) of every panel target, annotation and query variable."""
    for p in all_panels(dashboard):
        for t in p.get("targets", []):
            yield f"panel {p.get('id')} {p.get('title')!r} target {t.get('refId')}", t["expr"]
    for a in dashboard.get("annotations", {}).get("list", []):
        if "expr" in a:
            yield f"annotation {a['name']!r}", a["expr"]
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            m = re.fullmatch(r"label_values\((.*),\s*[a-zA-Z_]\w*\)", v["query"], re.S)
            yield f"variable {v['name']}", m.group(1) if m else v["query"]


def substitute(expr: str) -> str:
    for name, value in GRAFANA_VARIABLES:
        expr = expr.replace(name, value)
    return re.sub(r"\$\{?(\w+)\}?", "x", expr)


def schema_errors(dashboard):
    def leaf_errors(error):
        """anyOf errors (panels are Panel | RowPanel) are vague; report the errors inside them."""
        if not error.context:
            yield error
            return
        for sub in error.context:
            if list(error.absolute_path)[:1] == ["panels"] and isinstance(error.instance, dict):
                branch = 1 if error.instance.get("type") == "row" else 0
                if sub.schema_path and sub.schema_path[0] != branch:
                    continue
            yield from leaf_errors(sub)

    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for err in VALIDATOR.iter_errors(dashboard) for e in leaf_errors(err)]


def promtool_problems(promtool, named_queries, workdir: Path):
    """promtool check rules on one recording rule per query; returns the queries it rejects."""
    named_queries = list(named_queries)
    rules = [{"record": f"dashboard_query_{i}", "expr": substitute(expr)} for i, (_, expr) in enumerate(named_queries)]
    path = workdir / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard-queries", "rules": rules}]}))
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    if proc.returncode == 0:
        return []
    out = proc.stdout + proc.stderr
    problems = [f"{named_queries[int(i) - 1][0]}: {line.strip()}" for line in out.splitlines()
                for i in re.findall(r"rule (\d+)", line)]
    return problems or [out]


def metric_names(expr: str) -> set[str]:
    """Series names in a PromQL expression: identifiers that are not functions, keywords, label
    names (in by/on lists and matchers), durations or numbers."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = re.findall(r"(?<![\w.:$])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()", text)
    return {n for n in names if n not in FUNCTION_OR_KEYWORD}


def unknown_series(dashboard, known):
    return [f"{where}: {name}" for where, expr in queries(dashboard) for name in sorted(metric_names(expr) - known)]


def lint_problems(dashboard, counters):
    """Grafana dashboard-linter's rules: one datasource variable, $__rate_interval in rates, a unit
    and a description on every panel, datasources as the variable, counters only through rates."""
    problems = []
    variables = dashboard.get("templating", {}).get("list", [])
    if sum(v.get("type") == "datasource" for v in variables) != 1:
        problems.append("dashboard must have exactly one datasource variable")
    for v in variables:
        if v.get("type") == "query" and v.get("datasource") != DATASOURCE:
            problems.append(f"variable {v['name']}: datasource is not ${{datasource}}")
    for p in all_panels(dashboard):
        if p.get("type") == "row":
            continue
        where = f"panel {p.get('id')} {p.get('title')!r}"
        if not p.get("fieldConfig", {}).get("defaults", {}).get("unit"):
            problems.append(f"{where}: no unit")
        if not p.get("description"):
            problems.append(f"{where}: no description")
        if p.get("datasource") != DATASOURCE or any(t.get("datasource") != DATASOURCE for t in p.get("targets", [])):
            problems.append(f"{where}: datasource is not ${{datasource}}")
    for where, expr in queries(dashboard):
        for fn, window in re.findall(r"\b(rate|irate|increase)\s*\((?:[^()\[]|\([^()]*\))*\[([^\]]+)\]", expr):
            if window != "$__rate_interval":
                problems.append(f"{where}: {fn}() over [{window}], not [$__rate_interval]")
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
        for name in counters:
            for m in re.finditer(rf"(?<![\w:]){re.escape(name)}(?![\w:])", bare):
                if not re.search(r"\b(rate|irate|increase)\s*\(\s*$", bare[:m.start()]):
                    problems.append(f"{where}: counter {name} outside rate()/increase()")
    return problems


def panel_by_id(dashboard, panel_id):
    return next((p for p in all_panels(dashboard) if p.get("id") == panel_id), None)


# ---------------------------------------------------------------------------------------------
# the dashboards
# ---------------------------------------------------------------------------------------------

def test_every_dashboard_has_a_stable_uid_and_a_provider(bundled, dashboards):
    assert sorted(dashboards) == sorted(f"dashboards/{d}.json" for d in DASHBOARD_IDS)
    for dashboard_id in DASHBOARD_IDS:
        d = dashboards[f"dashboards/{dashboard_id}.json"]
        assert d["uid"] == conventions.stable_uid(dashboard_id)
        assert d["schemaVersion"] == 39 and "rulesgen" in d["tags"]
        ids = [p["id"] for p in all_panels(d)]
        assert len(ids) == len(set(ids)), dashboard_id
    provider = next(a for a in bundled.artifacts if a.path == "dashboards/provider.yaml")
    assert provider.text.startswith("# Generated by rulesgen")
    doc = yaml.safe_load(provider.text)
    assert doc["providers"][0]["type"] == "file"
    assert doc["providers"][0]["folder"] == bundled.settings.dashboards.folder
    assert doc["providers"][0]["options"]["path"] == bundled.settings.dashboards.provisioning_path


@pytest.mark.parametrize("dashboard_id", DASHBOARD_IDS)
def test_dashboard_matches_grafana_schema(dashboards, dashboard_id):
    errors = schema_errors(dashboards[f"dashboards/{dashboard_id}.json"])
    assert not errors, "\n".join(errors)


def test_schema_rejects_planted_mistakes(dashboards):
    bad = copy.deepcopy(dashboards["dashboards/gpu-health.json"])
    panel = next(p for p in bad["panels"] if p["type"] == "timeseries")
    panel["datasource"] = "Prometheus"  # legacy string datasource
    panel["titel"] = "typo"
    bad["schemaVersion"] = "39"
    errors = "\n".join(schema_errors(bad))
    assert "datasource" in errors and "titel" in errors and "schemaVersion" in errors


def test_variables_are_chained_from_datasource_to_pod(bundled, dashboards):
    """The variables a dashboard's panels use, in chain order, each listing its values from a recording rule
    (the host label normalised whatever the exporter calls it) filtered by the variables before it that the rule
    carries: the GPU keys from the reporting record, the job keys (namespace, workload, pod) from the workload one."""
    s = bundled.settings
    chain = ["cluster", s.host_label, "gpu", "modelName", "namespace", "workload", "pod"]
    gpu_keys = chain[:4]
    for path, d in dashboards.items():
        variables = d["templating"]["list"]
        names = [v["name"] for v in variables]
        assert names[0] == "datasource" and names[1:] == [n for n in chain if n in names], path
        assert variables[0]["type"] == "datasource" and variables[0]["query"] == "prometheus"
        for i, v in enumerate(variables[1:], start=1):
            record = bundled.catalog.named("reporting" if v["name"] in gpu_keys else "workload")
            assert v["query"].startswith(f"label_values({record}") and v["datasource"] == DATASOURCE, (path, v["query"])
            assert v["query"].endswith(f", {v['name']})") and v["refresh"] == 2
            for previous in variables[1:i]:
                carried = v["name"] in gpu_keys or previous["name"] != "modelName"  # the workload record has no model
                assert (f"${previous['name']}" in v["query"]) == carried, (v["name"], previous["name"])
    assert [v["name"] for v in dashboards["dashboards/gpu-health.json"]["templating"]["list"]] == ["datasource", *chain]


def test_every_query_parses_in_promtool(promtool, dashboards, tmp_path):
    named = [(f"{path} {where}", expr) for path, d in sorted(dashboards.items()) for where, expr in queries(d)]
    assert len(named) > 100
    problems = promtool_problems(promtool, named, tmp_path)
    assert not problems, "\n".join(problems)


def test_promtool_check_rejects_a_planted_bad_query(promtool, tmp_path):
    problems = promtool_problems(promtool, [("good", "sum(up)"), ("planted", "rate(up[$__rate_interval]")], tmp_path)
    assert problems and all(p.startswith("planted") for p in problems)


def test_queries_name_only_catalog_metrics_and_recording_rules(dashboards, known_series):
    for path, d in sorted(dashboards.items()):
        assert not unknown_series(d, known_series), path


def test_unknown_series_check_catches_a_planted_name(dashboards, known_series):
    bad = copy.deepcopy(dashboards["dashboards/gpu-jobs.json"])
    next(p for p in all_panels(bad) if p.get("targets"))["targets"][0]["expr"] = "avg(gpu:dcgm_nope:ratio) + DCGM_FI_DEV_NOPE"
    assert {u.split(": ")[-1] for u in unknown_series(bad, known_series)} == {"gpu:dcgm_nope:ratio", "DCGM_FI_DEV_NOPE"}


@pytest.mark.parametrize("dashboard_id", DASHBOARD_IDS)
def test_dashboard_linter_rules(dashboards, counters, dashboard_id):
    problems = lint_problems(dashboards[f"dashboards/{dashboard_id}.json"], counters)
    assert not problems, "\n".join(problems)


PLANTED = {
    "second datasource variable": lambda d: d["templating"]["list"].append(
        {"name": "ds2", "type": "datasource", "query": "prometheus"}),
    "rate over a fixed window": lambda d: _first_target(d).update(expr="rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[5m])"),
    "raw counter": lambda d: _first_target(d).update(expr="max(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL)"),
    "panel without unit": lambda d: _first_panel(d)["fieldConfig"]["defaults"].pop("unit"),
    "panel without description": lambda d: _first_panel(d).pop("description"),
    "legacy datasource": lambda d: _first_panel(d).update(datasource="Prometheus"),
}


def _first_panel(d):
    return next(p for p in all_panels(d) if p.get("type") == "timeseries")


def _first_target(d):
    return _first_panel(d)["targets"][0]


@pytest.mark.parametrize("mistake", sorted(PLANTED))
def test_linter_catches_planted_mistakes(dashboards, counters, mistake):
    bad = copy.deepcopy(dashboards["dashboards/gpu-health.json"])
    PLANTED[mistake](bad)
    assert lint_problems(bad, counters), mistake


def test_rates_over_rate_interval_pass_the_linter(dashboards, counters):
    good = copy.deepcopy(dashboards["dashboards/gpu-health.json"])
    _first_target(good).update(expr="rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[$__rate_interval])")
    assert not lint_problems(good, counters)


# ---------------------------------------------------------------------------------------------
# rows from the catalog, alert links and annotations
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def regional(tmp_path_factory):
    """The bundled catalog with the cluster in a label of another name (labels.cluster: region)."""
    config = tmp_path_factory.mktemp("regional") / "rulesgen.yaml"
    config.write_text("labels:\n  cluster: region\n")
    return plan(bundled_catalog_dir(), config, None)


@pytest.mark.parametrize("which,cluster_label", [("bundled", "cluster"), ("regional", "region")])
def test_every_alert_dashboard_url_opens_an_existing_failure_mode_panel(request, which, cluster_label):
    bundled = request.getfixturevalue(which)
    dashboards = dashboards_of(bundled)
    by_uid = {d["uid"]: d for d in dashboards.values()}
    links = 0
    for rule in bundled.rules.rules:
        if not rule.alert:
            continue
        url = dict(rule.annotations)["dashboard_url"]
        m = re.search(r"/d/([\w-]+)/[\w-]+\?viewPanel=(\d+)(?:&(.*))?$", url)
        assert m, url
        dashboard = by_uid.get(m.group(1))
        assert dashboard, f"{rule.alert}: no dashboard with uid {m.group(1)}"
        panel = panel_by_id(dashboard, int(m.group(2)))
        assert panel and panel["type"] == "timeseries", f"{rule.alert}: no time series {m.group(2)} in {dashboard['title']}"
        fm = bundled.catalog.failure_mode(rule.failure_mode)
        assert panel["title"].startswith(fm.title), (rule.alert, panel["title"])
        variables = {v["name"] for v in dashboard["templating"]["list"]}
        assert {p.split("=")[0][4:] for p in (m.group(3) or "").split("&") if p} <= variables, url
        # the link opens the panel on the alert's own cluster, node and GPU, as far as its scope names them; the
        # dashboards' cluster variable is named cluster whatever label carries it
        selected = {p.split("=")[0][4:]: p.split("=", 1)[1] for p in (m.group(3) or "").split("&") if p.startswith("var-")}
        expected = {"gpu": ("cluster", "Hostname", "gpu"), "node": ("cluster", "Hostname"), "fleet": ("cluster",)}[fm.scope]
        labels = {"cluster": cluster_label}
        assert selected == {v: f"{{{{ $labels.{labels.get(v, v)} }}}}" for v in expected}, (rule.alert, url)
        links += 1
    assert links >= 22


@pytest.mark.parametrize("group,dashboard_id", [("health", "gpu-health"), ("efficiency", "gpu-performance"),
                                                ("baselines", "gpu-baselines"), ("fleet", "gpu-fleet-overview")])
def test_rows_are_the_catalog_failure_modes_in_order(bundled, dashboards, group, dashboard_id):
    d = dashboards[f"dashboards/{dashboard_id}.json"]
    rows = [p["title"] for p in d["panels"] if p["type"] == "row" and p["id"] >= 100]
    assert rows == [f"{fm.title}{SEPARATOR}{group_audience(group)}" for fm in bundled.catalog.failure_modes
                    if fm.group == group]


def test_failure_mode_panels_show_their_alerts_thresholds_and_runbook(bundled, dashboards):
    d = dashboards["dashboards/gpu-health.json"]
    annotations = {a["expr"]: a for a in d["annotations"]["list"]}
    health = [fm for fm in bundled.catalog.failure_modes if fm.group == "health"]
    for i, fm in enumerate(health):
        main = conventions.failure_mode_panel_id(i)
        annotation = next(a for e, a in annotations.items() if f'failure_mode="{fm.id}"' in e and 'alertstate="firing"' in e)
        assert main in annotation["filter"]["ids"], fm.id
        panel = panel_by_id(d, main)
        assert conventions.runbook_url(bundled.settings.runbook_base_url, fm.id) in [link["url"] for link in panel["links"]]
    ecc = panel_by_id(d, conventions.failure_mode_panel_id(2))  # ecc_correctable_rate
    assert [s["value"] for s in ecc["fieldConfig"]["defaults"]["thresholds"]["steps"]] == [None, 10]
    read = promql_tree.names_read(substitute(ecc["targets"][0]["expr"]))  # the record, never the raw field
    assert "gpu:dcgm_ecc_sbe:rate_per_minute" in read and not any(n.startswith("DCGM") for n in read)
    assert "Normal:" in ecc["description"] and "Do:" in ecc["description"]


def test_threshold_overrides_from_the_config_reach_the_panels(tmp_path):
    config = tmp_path / "rulesgen.yaml"
    config.write_text("failure_modes:\n  ecc_correctable_rate:\n    thresholds: {per_minute: 20}\n"
                      "dashboards:\n  price_per_gpu_hour:\n    default: 1.5\n    models: {'.*H100.*': 4}\n")
    p = plan(bundled_catalog_dir(), config, None)
    d = json.loads(next(a.text for a in p.artifacts if a.path == "dashboards/gpu-health.json"))
    ecc = panel_by_id(d, conventions.failure_mode_panel_id(2))
    assert ecc["fieldConfig"]["defaults"]["thresholds"]["steps"][1]["value"] == 20
    fleet = json.loads(next(a.text for a in p.artifacts if a.path == "dashboards/gpu-fleet-overview.json"))
    cost = next(t["expr"] for pan in all_panels(fleet) for t in pan.get("targets", []) if t.get("legendFormat") == "cost")
    assert 'modelName=~".*H100.*"' in cost and "* 4)" in cost and "* 1.5)" in cost


def test_adding_a_failure_mode_adds_its_row(minimal_catalog):
    d = json.loads(next(a.text for a in plan(minimal_catalog, None, None).artifacts if a.path == "dashboards/gpu-health.json"))
    assert [p["title"].split(SEPARATOR)[0] for p in d["panels"] if p["type"] == "row"] == ["Overview", "Hot GPU"]
    main = panel_by_id(d, conventions.failure_mode_panel_id(0))
    assert main["title"].startswith("Hot GPU") and main["fieldConfig"]["defaults"]["unit"] == "celsius"
    assert main["fieldConfig"]["defaults"]["thresholds"]["steps"][1] == {"color": "orange", "value": 85}


def test_stale_generated_dashboards_are_removed_and_others_kept(bundled, tmp_path):
    write_all(tmp_path, bundled.artifacts)
    dashboards_dir = tmp_path / "dashboards"
    (dashboards_dir / "gpu-old.json").write_text((dashboards_dir / "gpu-jobs.json").read_text())
    (dashboards_dir / "mine.json").write_text('{"title": "hand-made", "tags": ["rulesgen"]}')
    changed = write_all(tmp_path, bundled.artifacts)
    assert changed == ["dashboards/gpu-old.json (removed)"]
    assert (dashboards_dir / "mine.json").exists()


def test_model_limit_lines_are_drawn_once_per_gpu(promtool, bundled, dashboards, tmp_path):
    """The alert lines that read a model limit (one series per cluster and modelName) are spread to
    the model's GPUs, so the GPU variables filter them and the legend names a GPU. promtool evaluates
    every such query against the rendered recording rules on an H100 and an A100; Grafana's variables
    are set to "All" (.*)."""
    h100, a100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
    gpus = [("n1", "0", "GPU-h", h100), ("n2", "3", "GPU-a", a100)]
    series = [{"series": f'{metric}{{job="dcgm-exporter",cluster="c",Hostname="{host}",gpu="{gpu}",UUID="{uuid}",'
                         f'modelName="{model}"}}', "values": f"{value}x60"}
              for host, gpu, uuid, model in gpus for metric, value in (("DCGM_FI_DEV_GPU_TEMP", 60), ("DCGM_FI_DEV_FB_USED", 1000))]
    targets = [(f"{path} {where}", substitute(re.sub(r'=~"\$\{?\w+\}?"', '=~".*"', expr)))
               for path, d in sorted(dashboards.items()) for where, expr in queries(d)
               if conventions.LIMIT_PREFIX in expr or conventions.GPU_LIMIT_PREFIX in expr]
    assert len(targets) >= 4, targets
    one_each = [{"labels": f'{{Hostname="{host}", UUID="{uuid}", cluster="c", gpu="{gpu}"}}', "value": 1}
                for host, gpu, uuid, _ in gpus]
    cases = [{"expr": f"count by (cluster, Hostname, gpu, UUID) ({expr})", "eval_time": "10m", "exp_samples": one_each}
             for _, expr in targets]
    # The thermal line's values are the models' limits in gpu_models.yaml (the GPUs export no limit of their own).
    limit = conventions.gpu_limit_record("gpu_max_operating_temp_c")
    thermal = next(expr for _, expr in targets if limit in expr and "pcie" not in expr)
    model_limit = {m.id: m.limit("gpu_max_operating_temp_c") for m in bundled.catalog.gpu_models}
    by_name = {h100: model_limit["h100_sxm"], a100: model_limit["a100_sxm4_80gb"]}
    cases.append({"expr": f"max by (Hostname) ({thermal})", "eval_time": "10m",
                  "exp_samples": [{"labels": f'{{Hostname="{host}"}}', "value": by_name[model]} for host, _, _, model in gpus]})
    assert by_name[h100] != by_name[a100]
    write_all(tmp_path, bundled.artifacts)
    test = tmp_path / "limit-lines.yaml"
    test.write_text(yaml.safe_dump({"rule_files": [str(tmp_path / conventions.rule_file("recording"))],
                                    "evaluation_interval": "1m",
                                    "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": cases}]}))
    proc = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
