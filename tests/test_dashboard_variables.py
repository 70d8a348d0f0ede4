"""The dashboards' variables narrow what their panels draw, queried on a real Prometheus: with one node (or one
cluster) selected, no panel returns a series of another; with "All", the same panels return them all. Every
series a dashboard selects is written for three nodes in two clusters (labels: the GPU's, the job's, and the
values its selectors ask for), so each query meets data from each place."""
from __future__ import annotations

import re
import time
import urllib.error

import pytest

from dashboard_views import all_panels, dashboards_of
from servers import Prometheus, blocks_from_openmetrics
from rulesgen.artifacts import plan
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.promql import tree
from conftest import ROOT

PLACES = (("c1", "node-a"), ("c1", "node-b"), ("c2", "node-c"))  # (cluster, Hostname)
PER_NODE = ("DCGM_", "gpu:", "node:", "ALERTS")  # the exporter's series, the per-GPU and per-node records, alerts
MINUTES = 120
# Grafana's own variables, as a panel over the last few hours would have them
BUILTINS = {"$__rate_interval": "5m", "$__range_s": "21600", "$__range": "6h"}


def _queries() -> list[tuple[str, str, str, bool]]:
    """(dashboard, panel title, expr, whether its row is a fleet-scope failure mode's) of every target of the
    bundled dashboards. A fleet-scope mode's row shows a cluster: it follows the cluster variable alone."""
    bundled = plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)
    fleet_rows = {fm.title for fm in bundled.catalog.failure_modes if fm.scope == "fleet"}
    out = []
    for path, dashboard in dashboards_of(bundled).items():
        row = ""
        for panel in all_panels(dashboard):
            if panel.get("type") == "row":
                row = panel.get("title", "").split(" · ")[0]
            out += [(path, panel.get("title", ""), t["expr"], row in fleet_rows)
                    for t in panel.get("targets", []) if t.get("expr")]
    return out


def _with(expr: str, cluster: str = ".*", host: str = ".*") -> str:
    for name, value in BUILTINS.items():
        expr = expr.replace(name, value)
    expr = expr.replace("$Hostname", host).replace("$cluster", cluster)
    return re.sub(r"\$(gpu|modelName|namespace|workload|pod)\b", ".*", expr)


def _value(op: str, value: str) -> str | None:
    """A label value a matcher accepts (the first alternative of a plain alternation), or None."""
    if op == "=":
        return value
    if op == "=~" and re.fullmatch(r"[\w.:-]+(\|[\w.:-]+)*", value):
        return value.split("|")[0]
    return None


def _series(queries) -> dict[str, dict[str, str]]:
    """{name: labels} of one series per selector of the queries, before the place's own labels."""
    out: dict[str, dict[str, str]] = {}
    for _, _, expr, _ in queries:
        for s in tree.selectors(_with(expr)):
            if not s.name:
                continue
            labels = out.setdefault(s.name, {})
            for label, op, value in s.matchers:
                if (v := _value(op, value)) is not None and label not in labels:
                    labels[label] = v
    return out


def _openmetrics(series: dict[str, dict[str, str]], start: int) -> str:
    lines = []
    for name, fixed in sorted(series.items()):
        lines.append(f"# TYPE {name} gauge")
        per_node = name.startswith(PER_NODE)
        places = PLACES if per_node else tuple({c: (c, h) for c, h in PLACES}.values())  # one per cluster
        for k, (cluster, node) in enumerate(places):
            labels = {"job": "dcgm-exporter", "modelName": "NVIDIA H100 80GB HBM3", "namespace": "ml",
                      "workload": "train", "pod": f"train-{k}", "job_name": "train", "owner_name": "train", "condition": "true", **fixed,
                      "cluster": cluster}
            if per_node:
                labels.update(Hostname=node, instance=f"{node}:9400", gpu="0", UUID=f"GPU-{node}")
            text = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()) if key != "__name__")
            lines += [f"{name}{{{text}}} 1 {start + 60 * m}" for m in range(MINUTES + 1)]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory, promtool, prometheus_bin):
    queries = _queries()
    start = int(time.time()) // 3600 * 3600 - 4 * 3600
    data = blocks_from_openmetrics(promtool, _openmetrics(_series(queries), start),
                                   tmp_path_factory.mktemp("dashboard-variables") / "data")
    with Prometheus(prometheus_bin, data) as prom:
        yield prom, queries, start + 60 * MINUTES


def _results(prom, expr: str, at: int) -> list[dict]:
    """The query's result; none where the synthetic series cannot answer it (one series of each name for a place
    cannot satisfy every join: many-to-many matches are refused)."""
    try:
        return prom.query(expr, at)
    except urllib.error.HTTPError:
        return []


def _values(prom, expr: str, at: int, label: str) -> set:
    return {r["metric"].get(label) for r in _results(prom, expr, at)}


def _narrowing(prom, at, queries, label: str, chosen: str, others: set, **selected) -> tuple[list, int, int]:
    """(queries that draw another `label` than the one selected, how many draw the chosen one, how many of those
    draw every value under "All")."""
    leaks, shown, every = [], 0, 0
    for dashboard, title, expr, _ in queries:
        values = _values(prom, _with(expr, **selected), at, label)
        if values & others:
            leaks.append(f"{dashboard} {title!r}: {expr[:160]}")
        if chosen in values:
            shown += 1
            every += _values(prom, _with(expr), at, label) >= {chosen, *others}
    return leaks, shown, every


def test_a_node_selected_shows_only_that_node(server):
    prom, queries, at = server
    per_node = [q for q in queries if not q[3]]
    leaks, shown, every = _narrowing(prom, at, per_node, "Hostname", "node-a", {"node-b", "node-c"}, host="node-a")
    assert not leaks, "panels that draw other nodes than the one selected:\n" + "\n".join(leaks)
    # the data reaches the panels: of the queries that name the host variable, at least half draw node-a alone
    # (82 of 152 on 2026-12-02: the rest compare with thresholds the constant series do not cross), and every
    # one of those draws each node under "All"
    hosted = sum("$Hostname" in expr for _, _, expr, _ in per_node)
    assert 2 * shown >= hosted and every == shown, (hosted, shown, every)


def test_a_cluster_selected_shows_only_that_cluster(server):
    """The same for the cluster variable, on every panel (the fleet-scope rows too): a Grafana over Thanos or
    Mimir sees every cluster's series at once."""
    prom, queries, at = server
    leaks, shown, every = _narrowing(prom, at, queries, "cluster", "c1", {"c2"}, cluster="c1")
    assert not leaks, "panels that draw other clusters than the one selected:\n" + "\n".join(leaks)
    # a sum or a count drops the label: with a cluster nobody has, every panel is empty or zero
    counted = [f"{dashboard} {title!r}: {expr[:160]}" for dashboard, title, expr, _ in queries
               if any(float(r["value"][1]) for r in _results(prom, _with(expr, cluster="c-none"), at))]
    assert not counted, "panels that count other clusters than the one selected:\n" + "\n".join(counted)
    named = sum("$cluster" in expr for _, _, expr, _ in queries)
    assert 2 * shown >= named and every == shown, (named, shown, every)


def test_every_panel_of_the_exporter_targets_draws_them(server):
    """A panel of `up` (an exporter target: no GPU labels) draws its targets under "All"; joined on a GPU's
    identity, as a GPU row's series are, it would draw nothing, ever."""
    prom, queries, at = server
    targets = [(dashboard, title, expr) for dashboard, title, expr, _ in queries if re.match(r"\(*up\{", expr)]
    empty = [f"{dashboard} {title!r}: {expr[:200]}" for dashboard, title, expr in targets if not _results(prom, _with(expr), at)]
    assert targets and not empty, "panels of the exporter targets that draw nothing:\n" + "\n".join(empty)
