"""The GPU Jobs dashboard's own panels: pick a namespace and pod, see its GPUs, the spread across
its ranks and its efficiency."""
from __future__ import annotations

from grafanalib.core import Panel, Table

from ...promql import text as promql
from .context import DATASOURCE, Context, Reads
from .job_signals import header_panels
from .panels import drawn, runbook_link, target, threshold_steps, time_series
from .prose import one_line, panel_text, panel_title, record_title


def job_panels(ctx: Context) -> list[Panel]:
    """The Job row, top to bottom; a hand-made panel the catalog does not declare (catalog/dashboards.yaml) is
    left out."""
    return [*drawn(ctx, "jobs.pods_gpus", pods_gpus_table), *header_panels(ctx), *rank_spread_panels(ctx),
            *per_gpu_panels(ctx), pods_alerts_panel(ctx)]


def pod_legend(ctx: Context) -> str:
    return f"{{{{{ctx.settings.pod_label}}}}} {{{{{ctx.settings.host_label}}}}}/{{{{gpu}}}}"


def pods_gpus_table(ctx: Context, reads: Reads) -> Table:
    return Table(title=panel_title(ctx, "jobs.pods_gpus", "GPUs of the selected pods (GPU_UTIL now)"),
                 dataSource=DATASOURCE, unit=ctx.unit(ctx.named("util_per_gpu")),
                 description=panel_text(ctx, "jobs.pods_gpus"),
                 targets=[target(ctx.of_selected_pods(ctx.gpu_series(ctx.named("util_per_gpu"))), "", instant=True, table=True)],
                 links=runbook_link(ctx, reads.fm), maxDataPoints=None)


def rank_spread_panels(ctx: Context) -> list[Panel]:
    """How far the job's ranks are apart: a straggler holds back the whole job."""
    return [*drawn(ctx, "jobs.rank_clock_spread", _rank_clock_spread), *drawn(ctx, "jobs.rank_sm_spread", _rank_sm_spread)]


def _rank_clock_spread(ctx: Context, reads: Reads) -> Panel:
    ratio = reads.value("straggler_below")
    pods = ctx.variables.matchers(("cluster", "host", "gpu", "namespace", "workload", "pod"))
    vs_job = ctx.named("sm_clock_vs_job")
    return time_series(
        panel_title(ctx, "jobs.rank_clock_spread", "Spread across ranks: SM clock vs the job's median"), panel_text(
            ctx, "jobs.rank_clock_spread", signal=one_line(ctx.signal(vs_job).description),
            straggler_below=promql.format_number(ratio), runbook_do="; ".join(reads.fm.runbook.act)),
        ctx.unit(vs_job), [target(f"{vs_job}{{{pods}}}", pod_legend(ctx))],
        runbook_link(ctx, reads.fm), threshold_steps("<", ratio, "warning"))


def _rank_sm_spread(ctx: Context, reads: Reads) -> Panel:
    s = ctx.settings
    job_by = promql.by((s.cluster_label, s.namespace_label, "workload"))
    sm = ctx.of_selected_pods(ctx.gpu_series(ctx.named("sm_active_per_gpu")))
    return time_series(
        panel_title(ctx, "jobs.rank_sm_spread", "Spread across ranks: max - min SM active"),
        panel_text(ctx, "jobs.rank_sm_spread"),
        ctx.unit(ctx.named("sm_active_per_gpu")),
        [target(f"max by ({job_by}) ({sm})\n- min by ({job_by}) ({sm})", "{{workload}}")],
        runbook_link(ctx, reads.fm))


def per_gpu_panels(ctx: Context) -> list[Panel]:
    """One panel per record of role job_gpu_panels (signals.yaml roles:), a series per GPU of the selected pods."""
    panels: list[Panel] = []
    for record in ctx.catalog.named_all("job_gpu_panels"):
        signal = ctx.signal(record)
        words = record_title(ctx, record)
        panels.append(time_series(panel_title(ctx, "jobs.per_gpu", f"{words} per GPU", signal_title=words), panel_text(
            ctx, "jobs.per_gpu", signal=one_line(signal.description), signal_title=words),
            signal.unit, [target(ctx.of_selected_pods(ctx.gpu_series(record)), pod_legend(ctx))], runbook_link(ctx, None)))
    return panels


def pods_alerts_panel(ctx: Context) -> Panel:
    pods = ctx.variables.matchers(("cluster", "namespace", "pod"))
    pod = ctx.settings.pod_label
    held = ctx.workload_info(f'{pod}!=""')
    by_pod = promql.by((ctx.settings.cluster_label, *ctx.settings.workload_labels))
    # Efficiency and job alerts name the pod in their labels, not always its job: they are kept for the pods
    # of the selected jobs. Hardware alerts carry the GPU's identity only (README "Alert identity"): they are
    # joined to the pod holding their GPU.
    expr = (f'count by (alertname, failure_mode) (\n  (ALERTS{{alertstate="firing", {pods}, {pod}!=""}}'
            f' and on ({by_pod}) {held})\n'
            f'  or ALERTS{{alertstate="firing", {ctx.variables.matchers(("cluster",))}, {pod}=""}}\n'
            f'    * on ({ctx.gpu_id}) group_left ({promql.by(ctx.settings.workload_labels)}) '
            f'{held}\n)')
    return time_series(panel_title(ctx, "jobs.pods_alerts", "Firing alerts on the selected pods' GPUs"),
                       panel_text(ctx, "jobs.pods_alerts"),
        "short", [target(expr, "{{alertname}}")], runbook_link(ctx, None), stacked=True)
