"""Navigation (issue 37 item 3): links between the dashboards that keep the variables and the time range, and
data links from a series to the view of its GPU, its node or its job.

Every dashboard carries two dashboard links by tag (Grafana's DashboardLink, type "dashboards"): a dropdown of
all rulesgen's dashboards (tag DASHBOARD_GENERATED_TAG) and, on all but the fleet overview, a way back to it
(the tag of its own id, which only it carries). Both keep the time range and the variables (includeVars: the
variables share their names on every dashboard).

A panel's series link to the views their labels name (`VIEWS`): a series that carries a GPU's identity to that
GPU in GPU Health, one that carries a node's to the node, one that carries a job's (namespace and workload) to
that job's GPUs in GPU Jobs. Which labels a panel's series carry is read from its queries' syntax trees
(rulesgen/promql/labels.py, the recording rules' own label sets), never guessed from a name, so a link never
reads a label its series lack. The URLs are Grafana data links: relative (/d/UID/SLUG, which Grafana prefixes
with its sub-path), the label values as ${__field.labels.X} (a table's as ${__data.fields.X}: a table turns
labels into columns), the time range as ${__url_time_range}. Grafana cannot run here: the link shapes are
those Grafana's docs give for data links (variables: "Data link variables"), and the tests check that every
target dashboard and tag exists in the rendered set.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import attr
from grafanalib._gen import DashboardEncoder
from grafanalib.core import DashboardLink, Panel, RowPanel

from ...model import conventions
from ...model.output import DASHBOARD_GENERATED_TAG
from ...promql import labels as label_flow
from ...promql import tree as promql_tree
from .context import Context

FLEET = "gpu-fleet-overview"
TIME_RANGE = "${__url_time_range}"
# Grafana's own variables, replaced by a value of their kind so that a query parses as PromQL.
MACROS = ((re.compile(r"\$__range_s\b|\$__interval_ms\b"), "3600"),
          (re.compile(r"\$__(range|interval|rate_interval)\b"), "1h"))


@dataclass(frozen=True)
class View:
    """Where a series of a subject links: the dashboard, the variable keys (context.ALL_KEYS) set from the
    series' labels, and the link's title (str.format over those keys' labels' values)."""
    name: str
    dashboard: str
    keys: tuple[str, ...]
    title: str


VIEWS = (
    View("gpu", "gpu-health", ("cluster", "host", "gpu"), "GPU {gpu} on {host}: its health"),
    View("node", "gpu-health", ("cluster", "host"), "Node {host}: its GPUs' health"),
    View("job", "gpu-jobs", ("cluster", "namespace", "workload"), "Job {namespace}/{workload}: its GPUs"),
)


def dashboard_tags(dashboard_id: str, groups: list[str]) -> list[str]:
    """rulesgen's tag (every generated dashboard), gpu, the dashboard's own id (the links to it by tag), its groups."""
    return [DASHBOARD_GENERATED_TAG, "gpu", dashboard_id, *groups]


def dashboard_links(dashboard_id: str) -> list[DashboardLink]:
    """The way back to the fleet (on every other dashboard), and a dropdown of every rulesgen dashboard."""
    links = [] if dashboard_id == FLEET else [
        DashboardLink(title="Back to the fleet", type="dashboards", tags=[FLEET], asDropdown=False, includeVars=True,
                      keepTime=True, icon="dashboard", tooltip="GPU Fleet Overview, same variables and time range")]
    return links + [DashboardLink(title="GPU dashboards", type="dashboards", tags=[DASHBOARD_GENERATED_TAG],
                                  asDropdown=True, includeVars=True, keepTime=True, icon="external link",
                                  tooltip="Every rulesgen dashboard, same variables and time range")]


def view_url(ctx: Context, dashboard_id: str, values: dict[str, str], time: str = TIME_RANGE) -> str:
    """A relative URL of a dashboard with variables set: values maps a key of ALL_KEYS to its value (a data-link
    macro such as ${__field.labels.gpu}); the variables not set take their defaults (All)."""
    params = [f"var-{ctx.variables.name(key)}={value}" for key, value in values.items()] + [time]
    return f"/d/{conventions.stable_uid(dashboard_id)}/{dashboard_id}?" + "&".join(params)


def view_links(ctx: Context, carried: frozenset[str], macro: str) -> list[dict]:
    """The data links to the views whose every label the series carry; macro formats a label's value
    ("${__field.labels.%s}" for series, "${__data.fields.%s}" for a table's rows)."""
    out = []
    for view in VIEWS:
        labels = {key: ctx.variables.label(key) for key in view.keys}
        if not set(labels.values()) <= carried:
            continue
        values = {key: macro % label for key, label in labels.items()}
        out.append({"title": view.title.format(**values), "url": view_url(ctx, view.dashboard, values),
                    "targetBlank": False})
    return out


def parsed(expr: str) -> str:
    for pattern, value in MACROS:
        expr = pattern.sub(value, expr)
    return expr


def carried_labels(ctx: Context, panel: Panel) -> frozenset[str]:
    """The labels every series of the panel carries for sure: the known labels its queries' results keep
    (a raw series' open set counts only its known labels), intersected over its queries."""
    sets = []
    for t in getattr(panel, "targets", []) or []:
        expr = parsed(t.expr)
        if promql_tree.problems(expr):
            return frozenset()
        sets.append(label_flow.output_labels(expr, ctx.record_labels).known)
    return frozenset.intersection(*sets) if sets else frozenset()


def with_view_links(ctx: Context, panel: Panel) -> Panel:
    """The panel with data links to the views of the GPU, node or job its series name (none for a row, or for
    series of a cluster or a model)."""
    if isinstance(panel, RowPanel):
        return panel
    macro = "${__data.fields.%s}" if panel.to_json_data().get("type") == "table" else "${__field.labels.%s}"
    links = view_links(ctx, carried_labels(ctx, panel), macro)
    if not links:
        return panel
    extra = dict(panel.extraJson or {})
    field = dict(extra.get("fieldConfig", {}))
    defaults = dict(field.get("defaults", {}))
    defaults["links"] = [*defaults.get("links", []), *links]
    field["defaults"] = defaults
    extra["fieldConfig"] = field
    return attr.evolve(panel, extraJson=extra)


def panel_json(panel: Panel) -> dict:
    return json.loads(json.dumps(panel.to_json_data(), cls=DashboardEncoder))


def used_variables(panels: list[Panel]) -> set[str]:
    """The variable names the panels' queries reference ($name, ${name}), Grafana's own ($__...) left out."""
    found: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("expr"), str):
                found.update(v for v in re.findall(r"\$\{?([A-Za-z_]\w*)", node["expr"]) if not v.startswith("__"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    for p in panels:
        walk(panel_json(p))
    return found
