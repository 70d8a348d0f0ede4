"""The dashboards' variables narrow what their panels draw, queried on a real Prometheus: with one node selected
in the Hostname variable, no panel returns a series of another node; with "All", the same panels return both.
Every series a dashboard selects is written for two nodes of one cluster (labels: the GPU's, the job's, and the
values its selectors ask for), so each query meets data for both."""
from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error

import pytest

from servers import Prometheus
from rulesgen.artifacts import plan
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.promql import tree
from conftest import ROOT

NODES = ("node-a", "node-b")
PER_NODE = ("DCGM_", "gpu:", "node:", "ALERTS")
MINUTES = 120
# Grafana's own variables, as a panel over the last few hours would have them
BUILTINS = {"$__rate_interval": "5m", "$__range_s": "21600", "$__range": "6h"}


def _queries() -> list[tuple[str, str, str]]:
    """(dashboard, panel title, expr) of every target of the bundled dashboards but the rows of fleet-scope failure
    modes (a cluster's own panels: they follow the cluster variable alone, by design)."""
    bundled = plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)
    fleet_rows = {fm.title for fm in bundled.catalog.failure_modes if fm.scope == "fleet"}
    out = []
    for a in bundled.artifacts:
        if a.path.startswith("dashboards/") and a.path.endswith(".json"):
            row = ""
            for p in json.loads(a.text).get("panels", []):
                row = p.get("title", "").split(" · ")[0] if p.get("type") == "row" else row
                for panel in [p, *p.get("panels", [])]:
                    if row not in fleet_rows:
                        out += [(a.path, panel.get("title", ""), t["expr"]) for t in panel.get("targets", []) if t.get("expr")]
    return out


def _with(expr: str, host: str) -> str:
    for name, value in BUILTINS.items():
        expr = expr.replace(name, value)
    expr = expr.replace("$Hostname", host)
    return re.sub(r"\$(cluster|gpu|modelName|namespace|workload|pod)\b", ".*", expr)


def _value(op: str, value: str) -> str | None:
    """A label value a matcher accepts (the first alternative of a plain alternation), or None."""
    if op == "=":
        return value
    if op == "=~" and re.fullmatch(r"[\w.:-]+(\|[\w.:-]+)*", value):
        return value.split("|")[0]
    return None


def _series(queries) -> dict[str, dict[str, str]]:
    """{name: labels} of one series per selector of the queries, before the node's own labels."""
    out: dict[str, dict[str, str]] = {}
    for _, _, expr in queries:
        for s in tree.selectors(_with(expr, ".*")):
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
        for k, node in enumerate(NODES if per_node else NODES[:1]):
            labels = {"job": "dcgm-exporter", "cluster": "c1", "modelName": "NVIDIA H100 80GB HBM3", "namespace": "ml",
                      "workload": "train", "pod": f"train-{k}", "job_name": "train", "condition": "true", **fixed}
            if per_node:  # the exporter's series, rulesgen's per-GPU and per-node records and their alerts
                labels.update(Hostname=node, instance=f"{node}:9400", gpu="0", UUID=f"GPU-{node}")
            text = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()) if key != "__name__")
            lines += [f"{name}{{{text}}} 1 {start + 60 * m}" for m in range(MINUTES + 1)]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory, promtool, prometheus_bin):
    queries = _queries()
    workdir = tmp_path_factory.mktemp("dashboard-variables")
    start = int(time.time()) // 3600 * 3600 - 4 * 3600
    raw = workdir / "raw.om"
    raw.write_text(_openmetrics(_series(queries), start))
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(raw), str(workdir / "data")],
                   check=True, capture_output=True)
    with Prometheus(prometheus_bin, workdir / "data") as prom:
        yield prom, queries, start + 60 * MINUTES


def _nodes(prom, expr: str, at: int) -> set:
    """The Hostname values of the query's result; none where the synthetic series cannot answer it (one series
    of each name for a node cannot satisfy every join: many-to-many matches are refused)."""
    try:
        return {r["metric"].get("Hostname") for r in prom.query(expr, at)}
    except urllib.error.HTTPError:
        return set()


def test_a_node_selected_shows_only_that_node(server):
    prom, queries, at = server
    leaks, shown, both = [], 0, 0
    for dashboard, title, expr in queries:
        nodes = _nodes(prom, _with(expr, "node-a"), at)
        if "node-b" in nodes:
            leaks.append(f"{dashboard} {title!r}: {expr[:160]}")
        shown += "node-a" in nodes
        both += _nodes(prom, _with(expr, ".*"), at) >= set(NODES)
    assert not leaks, "panels that draw other nodes than the one selected:\n" + "\n".join(leaks)
    # the data reaches the panels: of the queries that name the host variable, at least half draw node-a alone
    # (82 of 152 on 2026-12-02: the rest compare with thresholds the constant series do not cross), and every
    # one of those draws both nodes under "All"
    hosted = sum("$Hostname" in expr for _, _, expr in queries)
    assert 2 * shown >= hosted and both >= shown, (hosted, shown, both)
