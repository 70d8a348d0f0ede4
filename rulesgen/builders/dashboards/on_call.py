"""The GPU On-call dashboard (issue 37 item 1): for whoever is paged, in chapters. What is firing now (the table
with each GPU's job, one click to its GPU's view, runbook and job), nodes (by health, exporters down, GPUs
lost) and workloads (GPUs pending pods wait for, the GPU jobs that fail, the jobs whose GPUs alert).

Every query reads a recording rule, ALERTS, `up` or a kube-state-metrics series (model/kube_state.py)."""
from __future__ import annotations

from grafanalib.core import Panel, Table, TableSortByField

from ...model import kube_state as ksm
from ...promql import text as promql
from .chapters import Chapter
from .context import DATASOURCE, WORKLOAD_LABEL, Context, Reads
from .executive import gpu_job_names
from .firing import firing_table
from .panels import drawn, firing_alerts_panel, runbook_link, stat, target, time_series
from .prose import panel_text, panel_title


def firing_panels(ctx: Context) -> list[Panel]:
    modes = list(ctx.catalog.failure_modes)
    return [firing_table(ctx, modes, with_jobs=True), firing_alerts_panel(ctx, modes)]


def node_panels(ctx: Context) -> list[Panel]:
    return [*_nodes(ctx), *drawn(ctx, "on_call.exporters", _exporters), *drawn(ctx, "on_call.gpus_lost", _gpus_lost)]


def workload_panels(ctx: Context) -> list[Panel]:
    return [_pending_gpu_pods(ctx), _failing_jobs(ctx), _alerting_jobs(ctx)]


CHAPTERS = (
    Chapter("Firing now", "on-call: what to work on first, and where it runs", firing_panels, per_line=1),
    Chapter("Nodes", "on-call: which nodes are sick, blind or short of GPUs", node_panels, per_line=3),
    Chapter("Workloads", "on-call: jobs waiting for GPUs and jobs failing on them", workload_panels, per_line=3),
)


def _table(title: str, description: str, unit: str, targets, transformations, sort: str, links) -> Table:
    return Table(title=title, description=description, dataSource=DATASOURCE, unit=unit, targets=targets,
                 transformations=transformations, sortBy=[TableSortByField(displayName=sort, desc=True)], links=links,
                 maxDataPoints=None)


def _organize(rename: dict[str, str]) -> dict:
    return {"id": "organize", "options": {"excludeByName": {"Time": True}, "renameByName": rename}}


def _alerts(*matchers: str) -> str:
    """The firing alerts the matchers select."""
    return "ALERTS{" + ", ".join(('alertstate="firing"', *(m for m in matchers if m))) + "}"


def _is(label: str, value: str) -> str:
    return f'{label}="{value}"'


def _nodes(ctx: Context) -> list[Panel]:
    """One row per node: its GPUs reporting and its firing critical and warning alerts (merged on the node)."""
    node_gpus = ctx.catalog.named("node_gpus")
    if node_gpus is None:
        return []
    s = ctx.settings
    node = promql.by((s.cluster_label, s.host_label))
    where = ctx.variables.matchers(("cluster", "host"))

    def alerts(severity: str) -> str:
        firing = _alerts(_is("severity", severity), f'{s.host_label}!=""', where)
        return f"count by ({node}) ({firing})"

    return [_table(panel_title(ctx, "on_call.nodes", "Nodes by health"), panel_text(ctx, "on_call.nodes"), "short",
                   [target(f"{node_gpus}{{{where}}}", "", "A", instant=True, table=True),
                    target(alerts("critical"), "", "B", instant=True, table=True),
                    target(alerts("warning"), "", "C", instant=True, table=True)],
                   [{"id": "merge", "options": {}},
                    _organize({"Value #A": "GPUs reporting", "Value #B": "critical", "Value #C": "warning"})],
                   "critical", runbook_link(ctx, None))]


def _exporters(ctx: Context, reads: Reads) -> Panel:
    s = ctx.settings
    cluster = ctx.variables.matchers(("cluster",))
    up = f"up{{{s.selector}, {cluster}}}"
    return stat(panel_title(ctx, "on_call.exporters", "dcgm-exporter targets"), panel_text(
        ctx, "on_call.exporters", mode=reads.fm.id, runbook_do="; ".join(reads.fm.runbook.act)), "short",
        [target(f"sum({ctx.named('exporter_targets')}{{{cluster}}})", "targets", instant=True),
         target(f"count({up} == 0) or vector(0)", "down", "B", instant=True),
         target(f"count({_alerts(_is('failure_mode', reads.fm.id), cluster)}) or vector(0)", "nodes alerting", "C",
                instant=True)],
        runbook_link(ctx, reads.fm))


def _gpus_lost(ctx: Context, reads: Reads) -> Panel:
    cluster = ctx.variables.matchers(("cluster",))
    gpus = f"sum({ctx.named('fleet_gpus')}{{{cluster}}})"
    return stat(panel_title(ctx, "on_call.gpus_lost", "GPUs lost"), panel_text(
        ctx, "on_call.gpus_lost", mode=reads.fm.id, runbook_do="; ".join(reads.fm.runbook.act)), "short",
        [target(f"count({_alerts(_is('failure_mode', reads.fm.id), cluster)}) or vector(0)", "lost (alert)",
                instant=True),
         target(f"max_over_time({gpus}[1d:5m]) - {gpus}", "missing vs the last day", "B", instant=True)],
        runbook_link(ctx, reads.fm))


def _pending_gpu_pods(ctx: Context) -> Panel:
    pod, cluster = ctx.kube_state_by("pod"), ctx.settings.cluster_label
    phase = ctx.kube_state(ksm.POD_PHASE, 'phase="Pending"')
    pending = f"max by ({pod}) ({phase} == 1)"
    requests = ctx.kube_state(ksm.REQUESTS, f'resource="{ksm.GPU_RESOURCE}"')
    expr = f"sum by ({ctx.kube_state_by()}) (\n  {requests}\n    * on ({pod}) group_left () {pending}\n)"
    return time_series(panel_title(ctx, "on_call.pending_gpu_pods", "GPUs requested by pending pods"),
                       panel_text(ctx, "on_call.pending_gpu_pods", resource=ksm.GPU_RESOURCE), "short",
                       [target(expr, f"{{{{{cluster}}}}} {{{{namespace}}}}")], runbook_link(ctx, None), stacked=True)


def _failing_jobs(ctx: Context) -> Table:
    job = ctx.kube_state_by(ksm.JOB_LABEL)
    expr = (f'topk(10, max by ({job}) ({ctx.kube_state(ksm.JOB_FAILED_PODS)} > 0)\n'
            f'  and on ({job}) {gpu_job_names(ctx)})')
    return _table(panel_title(ctx, "on_call.failing_jobs", "Top failing GPU jobs"),
                  panel_text(ctx, "on_call.failing_jobs", resource=ksm.GPU_RESOURCE), "short",
                  [target(expr, "", instant=True, table=True)], [_organize({"Value": "failed pods"})], "failed pods",
                  runbook_link(ctx, None))


def _alerting_jobs(ctx: Context) -> Table:
    """The jobs whose GPUs carry the most firing alerts: each alert about a GPU joined to the pod holding it."""
    s = ctx.settings
    job = promql.by((s.cluster_label, s.namespace_label, WORKLOAD_LABEL))
    pods = ctx.workload_info(f'{s.pod_label}!=""')
    alerts = _alerts('gpu!=""', ctx.variables.matchers(("cluster",)))
    labels = promql.by((*s.workload_labels, WORKLOAD_LABEL))
    expr = f"topk(10, count by ({job}) (\n  {alerts}\n    * on ({ctx.gpu_id}) group_left ({labels}) {pods}\n))"
    return _table(panel_title(ctx, "on_call.alerting_jobs", "Jobs with the most GPU alerts"),
                  panel_text(ctx, "on_call.alerting_jobs"), "short", [target(expr, "", instant=True, table=True)],
                  [_organize({"Value": "firing alerts"})], "firing alerts", runbook_link(ctx, None))
