"""The GPU Executive Overview (issue 37 item 1): for leads, in chapters. Capacity (GPUs by model and health,
reporting over time), utilisation (GPU_UTIL beside the honest SM and tensor activity, busy and idle
GPU-hours), cost (per team and per job from dashboards.price_per_gpu_hour, waste), jobs (the GPU jobs' success
rate from kube-state-metrics) and inventory (GPUs by model and driver version).

Every query reads a recording rule, a catalog metric or a kube-state-metrics series (model/kube_state.py);
builders/series_check.py checks it after the build. A fleet SLO chapter (the SLO issue) belongs after Capacity:
CHAPTERS is the place."""
from __future__ import annotations

import attr
from grafanalib.core import Panel, Stat, Table, TableSortByField

from ...model import kube_state as ksm
from ...promql import text as promql
from ..metric_selectors import selector
from .chapters import Chapter
from .context import DATASOURCE, WORKLOAD_LABEL, Context
from .fleet import cost, gpu_hours, gpus_by_model, health_state, priced, utilisation
from .panels import drawn, runbook_link, stat, target, time_series
from .prose import panel_text, panel_title

HOURS_PER_STEP = "300 / 3600"  # the cost subqueries' 5m step, in hours


def capacity_panels(ctx: Context) -> list[Panel]:
    return [*gpus_by_model(ctx), *drawn(ctx, "fleet.health_state", health_state), *_gpus_reporting(ctx)]


def utilisation_gauges(ctx: Context) -> list[Panel]:
    """GPU_UTIL's gauge, and beside it the honest ones: SM active and tensor active (each drawn when the catalog
    names its record)."""
    roles = (("util_per_gpu", "executive.gpu_util_gauge", "GPU utilization (GPU_UTIL)"),
             ("sm_active_per_gpu", "executive.sm_active_gauge", "SM active: the honest utilisation"),
             ("tensor_active_per_gpu", "executive.tensor_active_gauge", "Tensor active"))
    return [_gauge(ctx, text_id, fallback, record) for role, text_id, fallback in roles
            if (record := ctx.catalog.named(role)) is not None]


def utilisation_panels(ctx: Context) -> list[Panel]:
    return [*drawn(ctx, "fleet.utilisation", utilisation), *drawn(ctx, "fleet.gpu_hours", gpu_hours)]


def cost_panels(ctx: Context) -> list[Panel]:
    s = ctx.settings
    return [*drawn(ctx, "fleet.cost", cost),
            _cost_table(ctx, "executive.cost_by_namespace", "Cost per team (namespace) in range",
                        (s.cluster_label, s.namespace_label), top=None),
            _cost_table(ctx, "executive.cost_by_job", "Cost per job in range (top 10)",
                        (s.cluster_label, s.namespace_label, WORKLOAD_LABEL), top=10)]


def job_panels(ctx: Context) -> list[Panel]:
    return [_job_success(ctx), _jobs_finished(ctx)]


def inventory_panels(ctx: Context) -> list[Panel]:
    """Drawn when the catalog names the inventory metric and the driver label field (metrics.yaml roles:)."""
    if ctx.catalog.named("inventory") is None or ctx.catalog.named("driver_version") is None:
        return []
    return [_inventory(ctx)]


CHAPTERS = (
    Chapter("Capacity", "leads: how many GPUs the fleet has and how many can take work", capacity_panels),
    # A "Fleet SLO" chapter (the SLO issue: gpu_capacity, job_success, training_time) goes here.
    Chapter("Utilisation", "leads: how much real work the GPUs do", utilisation_gauges, per_line=3),
    Chapter("Utilisation over time", "leads: busy against idle GPU-hours", utilisation_panels),
    Chapter("Cost", "leads and team budgets: who spends the GPU-hours", cost_panels),
    Chapter("Jobs", "leads: do the GPU jobs finish", job_panels),
    Chapter("Inventory", "leads and procurement: GPU models and drivers", inventory_panels),
)


def _text(ctx: Context, text_id: str, fallback: str, **values) -> tuple[str, str]:
    return panel_title(ctx, text_id, fallback), panel_text(ctx, text_id, **values)


def _gpus_reporting(ctx: Context) -> list[Panel]:
    gpus = ctx.catalog.named("fleet_gpus")
    if gpus is None:
        return []
    title, text = _text(ctx, "executive.gpus_reporting", "GPUs reporting by model")
    fleet = ctx.variables.matchers(("cluster", "modelName"))
    return [time_series(title, text, "short", [target(f"sum by (modelName) ({gpus}{{{fleet}}})", "{{modelName}}")],
                        runbook_link(ctx, None), stacked=True)]


def _gauge(ctx: Context, text_id: str, fallback: str, record: str) -> Stat:
    """A gauge of the selected GPUs' mean of a per-GPU ratio now (a Stat drawn as Grafana's gauge panel)."""
    title, text = _text(ctx, text_id, fallback)
    panel = stat(title, text, "percentunit", [target(f"avg({ctx.gpu_series(record)})", "mean", instant=True)],
                 runbook_link(ctx, None))
    return attr.evolve(panel, noValue="No data", extraJson={
        "type": "gauge", "options": {"showThresholdMarkers": True, "showThresholdLabels": False},
        "fieldConfig": {"defaults": {"min": 0, "max": 1}}})


def _prices(ctx: Context) -> dict[str, str]:
    s = ctx.settings
    return {"price_default": promql.format_number(s.dashboards.price_default),
            "model_prices": ", ".join(f"{p} = {promql.format_number(v)}" for p, v in s.dashboards.prices) or "none"}


def _cost_table(ctx: Context, text_id: str, fallback: str, by: tuple[str, ...], top: int | None) -> Table:
    """Cost over the dashboard's time range of the GPUs the pods of each `by` group held: per 5m step, the GPUs
    held times their model's price per hour, summed and turned into hours (a group present part of the range
    pays for that part only)."""
    s = ctx.settings
    held_by = promql.by((s.cluster_label, "modelName", *by[1:]))
    job_labels = promql.by(by[1:])

    pods = ctx.workload_info(f'{s.pod_label}!=""')

    def held(matcher: str) -> str:
        return (f"count by ({held_by}) (\n    {ctx.gpu_series(ctx.named('reporting'), matcher)}\n"
                f"      * on ({ctx.gpu_id}) group_left ({job_labels}) {pods}\n  )")

    total = f"sum by ({promql.by(by)}) (sum_over_time((\n  {priced(ctx, held)}\n)[$__range:5m])) * {HOURS_PER_STEP}"
    expr = f"topk({top}, {total})" if top else f"sort_desc({total})"
    title, text = _text(ctx, text_id, fallback, **_prices(ctx))
    return Table(title=title, description=text, dataSource=DATASOURCE, unit=s.dashboards.currency_unit,
                 targets=[target(expr, "", instant=True, table=True)], links=runbook_link(ctx, None), maxDataPoints=None,
                 transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True},
                                                                  "renameByName": {"Value": "cost"}}}],
                 sortBy=[TableSortByField(displayName="cost", desc=True)])


def gpu_job_names(ctx: Context) -> str:
    """The Kubernetes Jobs whose pods request GPUs, one series per (cluster, namespace, job_name) (kube-state-metrics)."""
    pod, owner = ctx.kube_state_by("pod"), ctx.kube_state_by("owner_name")
    requests = ctx.kube_state(ksm.REQUESTS, f'resource="{ksm.GPU_RESOURCE}"')
    owners = ctx.kube_state(ksm.POD_OWNER, 'owner_kind="Job"')
    return (f'label_replace(\n  max by ({owner}) ({owners} and on ({pod}) max by ({pod}) ({requests} > 0)),\n'
            f'  "job_name", "$1", "owner_name", "(.+)"\n)')


def _finished(ctx: Context, series: str) -> str:
    finished = ctx.kube_state(series, 'condition="true"')
    return f"count({finished} == 1 and on ({ctx.kube_state_by(ksm.JOB_LABEL)}) {gpu_job_names(ctx)})"


def _job_success(ctx: Context) -> Stat:
    title, text = _text(ctx, "executive.job_success", "GPU job success rate", resource=ksm.GPU_RESOURCE)
    done, failed = _finished(ctx, ksm.JOB_COMPLETE), _finished(ctx, ksm.JOB_FAILED)
    expr = f"{done}\n/ ({done} + ({failed} or vector(0)))"
    panel = stat(title, text, "percentunit", [target(expr, "success rate", instant=True)], runbook_link(ctx, None))
    return attr.evolve(panel, noValue="no kube-state-metrics data")


def _jobs_finished(ctx: Context) -> Panel:
    title, text = _text(ctx, "executive.jobs_finished", "GPU jobs finished: completed and failed",
                        resource=ksm.GPU_RESOURCE)
    return time_series(title, text, "short", [target(_finished(ctx, ksm.JOB_COMPLETE), "completed"),
                                              target(_finished(ctx, ksm.JOB_FAILED), "failed", "B")],
                       runbook_link(ctx, None))


def _inventory(ctx: Context) -> Table:
    """GPUs per cluster, model and driver: one series per GPU of the inventory metric (under each of its names),
    its driver label copied into `driver` from whichever of the driver field's names the exporter uses."""
    s = ctx.settings
    metric = ctx.catalog.metric(ctx.named("inventory"))
    drivers = ctx.catalog.metric(ctx.named("driver_version")).names
    expr = selector(metric, f"{s.selector}, {ctx.variables.matchers(('cluster', 'modelName'))}")
    for name in reversed(drivers):
        expr = f'label_replace({expr}, "driver", "$1", "{name}", "(.+)")'
    title, text = _text(ctx, "executive.inventory", "Inventory by GPU model and driver", driver_labels=" or ".join(drivers))
    return Table(title=title, description=text, dataSource=DATASOURCE, unit="short",
                 targets=[target(f"count by ({promql.by((s.cluster_label, 'modelName', 'driver'))}) ({expr})", "",
                                 instant=True, table=True)],
                 links=runbook_link(ctx, None), maxDataPoints=None,
                 transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True},
                                                                  "renameByName": {"Value": "GPUs"}}}])
