"""What is firing now (issue 37 item 2): a table of the firing alerts, one row per alert and GPU, node or
cluster (the alerts' own identity labels, README "Alert identity"), the most severe first, each row linking to
its failure mode's runbook and to its GPU's or node's view from an hour before the alert became active.

The rows read ALERTS_FOR_STATE, whose value is the time the alert became active (pending), kept where ALERTS
says it fires (`and ignoring (alertstate)`: the two carry the same labels, ALERTS adds alertstate). Prometheus
writes both series for every active alert; vmalert writes ALERTS_FOR_STATE, through -remoteWrite.url, for the
alerts with a `for:` (app/vmalert/rule/alerting.go alertForToTimeSeries), which every rulesgen alert has (the
catalog loader refuses `for: 0`). ALERTS carries labels only, not the runbook_url annotation: the runbook link is
the catalog's runbook path (conventions.runbook_url), its slug made from the failure_mode label by label_replace
(one underscore to a hyphen per pass, as many passes as the catalog's ids have underscores). The severity order
is a `priority` label (1 for the first of model.catalog.SEVERITIES), drawn as the severity's name.

On the on-call dashboard (with_jobs) each row of a GPU that runs a pod also names the pod and its job (the
`workload` record joined on the GPU's identity: hardware alerts carry the GPU only, README "Alert identity"),
and links to that job's GPUs in GPU Jobs: the GPU's view, the runbook and the job one click from the row. A
drain-action alert names the job its fault hit: the one the `drain_onset` record saw on the GPU when the
drain episode started (its newest sample within ONSET_MEMORY), not whatever pod the scheduler put there since.

Grafana cannot run here: the table is a Grafana table panel as Grafana's schema describes it (instant queries in
table format, merged on their labels, organized, links as data links with ${__data.fields.X}); the tests check
the shape, the slug of every failure mode and that every link target exists.
"""
from __future__ import annotations

from grafanalib.core import Table, TableSortByField

from ...model import conventions
from ...model.catalog import SEVERITIES, FailureMode
from ...promql import text as promql
from .context import DATASOURCE, WORKLOAD_LABEL, Context
from .links import view_url
from .panels import SEVERITY_COLOR, target
from .prose import panel_text, panel_title

LEAD_SECONDS = 3600  # the time range a row opens starts this long before the alert became active
# How far back a drain alert's row looks for the job at its episode's start: a drain alert still firing after a
# week names the GPU's pod now (by then the node is drained, or the alert ignored; heuristic).
ONSET_MEMORY = "7d"
ACTIVE_SINCE, WINDOW_START, SEVERITY = "Active since", "window_start_ms", "Severity"


def slug_passes(modes: list[FailureMode]) -> int:
    """How many label_replace passes turn every failure mode's id into its runbook slug."""
    return max((fm.id.count("_") for fm in modes), default=0)


def with_runbook_and_priority(expr: str, passes: int) -> str:
    """expr with a `runbook` label (the failure_mode's runbook slug, conventions.runbook_slug) and a `priority`
    label (1 for the most severe of SEVERITIES)."""
    out = f'label_replace({expr}, "runbook", "$1", "failure_mode", "(.*)")'
    for _ in range(passes):  # "(.*)_(.*)" is greedy: each pass turns the last underscore into a hyphen
        out = f'label_replace({out}, "runbook", "$1-$2", "runbook", "(.*)_(.*)")'
    for rank, severity in enumerate(SEVERITIES, start=1):
        out = f'label_replace({out}, "priority", "{rank}", "severity", "{severity}")'
    return out


def firing_expr(ctx: Context, modes: list[FailureMode], action: str | None = None) -> str:
    """The firing alerts of modes (with `action`: those with that action label), valued with the time they
    became active (seconds)."""
    ids = "|".join(fm.id for fm in modes) or "none"
    keys = ("cluster", "host", "gpu")
    only = f'action="{action}", ' if action else ""
    return (f'ALERTS_FOR_STATE{{failure_mode=~"{ids}", {only}{ctx.variables.matchers(keys)}}}\n'
            f'  and ignoring (alertstate) ALERTS{{alertstate="firing"}}')


def with_job(ctx: Context, modes: list[FailureMode]) -> str:
    """The firing alerts of modes, each row of a GPU that runs a pod labelled with the pod, its namespace and its
    job (the workload record, one series per GPU; the record's values replace an efficiency alert's own), a
    drain alert's row with the job of its episode's start instead (module doc), the other rows as they are
    (`unless`: no row is repeated without its job)."""
    s = ctx.settings
    expr = firing_expr(ctx, modes)
    job = promql.by((*s.workload_labels, WORKLOAD_LABEL))
    pods = f'{ctx.named("workload")}{{{s.pod_label}!=""}}'
    onset_record = ctx.catalog.named("drain_onset")
    if onset_record is None:  # a catalog without the record: every row names the GPU's pod now
        return (f"(\n  ({expr})\n    * on ({ctx.gpu_id}) group_left ({job}) {pods}\n"
                f"  or (({expr}) unless on ({ctx.gpu_id}) {pods})\n)")
    onset = f'last_over_time({onset_record}{{{s.pod_label}!=""}}[{ONSET_MEMORY}])'
    hit = (f"(\n    ({firing_expr(ctx, modes, 'drain')})\n"
           f"      + on ({ctx.gpu_id}) group_left ({job}) (0 * {onset})\n  )")
    rest = f"(({expr}) unless on ({ctx.gpu_id}, alertname, severity) {hit})"
    return (f"(\n  {hit}\n  or {rest}\n    * on ({ctx.gpu_id}) group_left ({job}) {pods}\n"
            f"  or ({rest} unless on ({ctx.gpu_id}) {pods})\n)")


def row_links(ctx: Context, with_jobs: bool = False) -> list[dict]:
    """A row's runbook, its GPU's and node's view from LEAD_SECONDS before the alert became active, and with_jobs
    its job's GPUs in GPU Jobs over the same time."""
    def field(label: str) -> str:
        return "${__data.fields.%s}" % label

    host = ctx.settings.host_label
    time = f"from={field(WINDOW_START)}&to=now"
    runbook = conventions.runbook_page_url(ctx.settings.runbook_base_url, field("runbook"))
    gpu = {"cluster": field(ctx.settings.cluster_label), "host": field(host), "gpu": field("gpu")}
    node = {"cluster": field(ctx.settings.cluster_label), "host": field(host)}
    job = {"cluster": field(ctx.settings.cluster_label), "namespace": field(ctx.settings.namespace_label),
           "workload": field(WORKLOAD_LABEL)}
    return [
        {"title": f"Runbook: {field('failure_mode')}", "url": runbook, "targetBlank": True},
        {"title": f"GPU {field('gpu')} on {field(host)} since before the alert",
         "url": view_url(ctx, "gpu-health", gpu, time), "targetBlank": False},
        {"title": f"Node {field(host)} since before the alert", "url": view_url(ctx, "gpu-health", node, time),
         "targetBlank": False},
        *([{"title": f"Job {field(ctx.settings.namespace_label)}/{field(WORKLOAD_LABEL)}: its GPUs",
            "url": view_url(ctx, "gpu-jobs", job, time), "targetBlank": False}] if with_jobs else []),
    ]


def firing_table(ctx: Context, modes: list[FailureMode], with_jobs: bool = False) -> Table:
    """The firing alerts of modes now, one row each, most severe first (rows sorted by Severity); with_jobs each
    GPU's pod and job beside it (with_job), and a link to the job."""
    firing = with_job(ctx, modes) if with_jobs else firing_expr(ctx, modes)
    expr = with_runbook_and_priority(firing, slug_passes(list(ctx.catalog.failure_modes)))
    s = ctx.settings
    jobs = [s.namespace_label, WORKLOAD_LABEL, s.pod_label] if with_jobs else []
    order = ["priority", "alertname", "failure_mode", s.cluster_label, s.host_label, "gpu", *jobs, "UUID", "modelName",
             "Value #A"]
    severity_names = {str(rank): {"text": sev, "color": SEVERITY_COLOR[sev], "index": rank - 1}
                      for rank, sev in enumerate(SEVERITIES, start=1)}
    hidden = [{"id": "custom.hidden", "value": True}]
    return Table(
        title=panel_title(ctx, "alerts.firing_table", "Alerts firing now"),
        description=panel_text(ctx, "alerts.firing_table", lead_hours=str(LEAD_SECONDS // 3600)),
        dataSource=DATASOURCE, unit="none", maxDataPoints=None,
        targets=[target(f"({expr}) * 1000", "", "A", instant=True, table=True),
                 target(f"({expr} - {LEAD_SECONDS}) * 1000", "", "B", instant=True, table=True)],
        transformations=[
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True, "severity": True, "alertgroup": True},
                "indexByName": {name: i for i, name in enumerate(order)},
                "renameByName": {"priority": SEVERITY, "alertname": "Alert", "failure_mode": "Failure mode",
                                 "Value #A": ACTIVE_SINCE, "Value #B": WINDOW_START}}}],
        overrides=[
            {"matcher": {"id": "byName", "options": SEVERITY},
             "properties": [{"id": "mappings", "value": [{"type": "value", "options": severity_names}]},
                            {"id": "custom.cellOptions", "value": {"type": "color-text"}}]},
            {"matcher": {"id": "byName", "options": ACTIVE_SINCE}, "properties": [{"id": "unit", "value": "dateTimeAsIso"}]},
            {"matcher": {"id": "byName", "options": WINDOW_START},
             "properties": [*hidden, {"id": "unit", "value": "none"}, {"id": "decimals", "value": 0}]},
            {"matcher": {"id": "byName", "options": "runbook"}, "properties": hidden},
        ],
        sortBy=[TableSortByField(displayName=SEVERITY, desc=False)],
        extraJson={"fieldConfig": {"defaults": {"links": row_links(ctx, with_jobs)}}})
