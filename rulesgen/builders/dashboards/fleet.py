"""The GPU Fleet Overview's own panels: GPUs by model and health state, utilisation, busy and idle
GPU-hours, estimated cost and waste, firing alerts."""
from __future__ import annotations

from collections.abc import Callable

from grafanalib.core import Panel

from ...promql import text as promql
from .context import Context, Reads
from .panels import drawn, firing_alerts_panel, runbook_link, stat, target, time_series
from .prose import panel_text, panel_title, signal_text


def priced(ctx: Context, gpus: Callable[[str], str]) -> str:
    """Cost per hour of the GPUs gpus(matcher) counts per cluster and model: the first price pattern
    matching modelName wins, the default covers the rest (`or` keeps the first series per label set)."""
    prices = ctx.settings.dashboards
    terms = [f'({gpus(_model_matches(p))} * {promql.format_number(v)})' for p, v in prices.prices]
    terms.append(f"({gpus('')} * {promql.format_number(prices.price_default)})")
    return "\n  or ".join(terms)


def _model_matches(regex: str) -> str:
    return f'modelName=~"{promql.escape(regex)}"'


def _over_range(expr: str) -> str:
    """Sum over the dashboard's time range, in hours, of a per-hour quantity."""
    return f"sum(avg_over_time((\n  {expr}\n)[$__range:5m])) * $__range_s / 3600"


def fleet_panels(ctx: Context) -> list[Panel]:
    """The Fleet row; a hand-made panel the catalog does not declare (catalog/dashboards.yaml) is left out."""
    return [
        *_gpus_by_model(ctx),
        *drawn(ctx, "fleet.health_state", _health_state),
        *drawn(ctx, "fleet.utilisation", _utilisation),
        *drawn(ctx, "fleet.gpu_hours", _gpu_hours),
        *drawn(ctx, "fleet.cost", _cost),
        firing_alerts_panel(ctx, list(ctx.catalog.failure_modes)),
    ]


def _gpus_by_model(ctx: Context) -> list[Panel]:
    """GPUs reporting per model: drawn when the catalog records them (role fleet_gpus)."""
    gpus = ctx.catalog.named("fleet_gpus")
    if gpus is None:
        return []
    fleet = ctx.variables.matchers(("cluster", "modelName"))
    return [stat(panel_title(ctx, "fleet.gpus_by_model", "GPUs by model"), panel_text(ctx, "fleet.gpus_by_model",
                                             signal=signal_text(ctx, gpus, "GPUs reporting per model.")),
                 "short", [target(f"sum by (modelName) ({gpus}{{{fleet}}})", "{{modelName}}", instant=True)],
                 runbook_link(ctx, None))]


def _health_state(ctx: Context, reads: Reads) -> Panel:
    s = ctx.settings
    fleet = ctx.variables.matchers(("cluster", "modelName"))
    health_ids = "|".join(fm.id for fm in ctx.catalog.failure_modes if fm.group == "health") or "none"
    gpu_key = promql.by((s.cluster_label, s.host_label, "gpu"))
    gpus = ctx.named("fleet_gpus")
    state = [
        target(f"sum({gpus}{{{fleet}}})", "reporting"),
        target(f"sum({gpus}{{{fleet}}})\n  - (count(max by ({gpu_key}) (ALERTS{{alertstate=\"firing\", "
               f"failure_mode=~\"{health_ids}\", {fleet}}})) or vector(0))", "healthy", "B"),
        target(f'count(max by ({gpu_key}) (ALERTS{{alertstate="firing", action="drain", {fleet}}})) or vector(0)',
               "to drain", "C"),
        target(f'count(max by ({gpu_key}) (ALERTS{{alertstate="firing", action="investigate", '
               f'failure_mode=~"{health_ids}", {fleet}}})) or vector(0)', "to investigate", "D"),
    ]
    return stat(panel_title(ctx, "fleet.health_state", "GPUs by health state"),
                panel_text(ctx, "fleet.health_state", mode=reads.fm.id),
        "short", state, runbook_link(ctx, reads.fm))


def _utilisation(ctx: Context, reads: Reads) -> Panel:
    fleet = ctx.variables.matchers(("cluster", "modelName"))
    return time_series(panel_title(ctx, "fleet.utilisation", "Fleet utilisation: SM active (GPU_UTIL dashed)"), panel_text(
        ctx, "fleet.utilisation", mode=reads.fm.id, runbook_do="; ".join(reads.fm.runbook.act)),
        ctx.unit(ctx.named("fleet_sm_active")),
        [target(f"{ctx.named('fleet_sm_active')}{{{fleet}}}", "{{cluster}} {{modelName}} SM active"),
         target(f"{ctx.named('fleet_gpu_util')}{{{fleet}}}", "{{cluster}} {{modelName}} GPU_UTIL", "B")],
        runbook_link(ctx, reads.fm), dashed_refs=("B",))


def _gpu_hours(ctx: Context, reads: Reads) -> Panel:
    idle_util = promql.format_number(reads.value("idle_util"))

    def util_hours(op: str) -> str:
        return _over_range(f"{ctx.gpu_series(ctx.named('util_per_gpu'))} {op} bool {idle_util}")

    return stat(panel_title(ctx, "fleet.gpu_hours", "GPU-hours in range: busy vs idle"), panel_text(
        ctx, "fleet.gpu_hours", idle_util=idle_util, mode=reads.fm.id, threshold=reads.names["idle_util"]),
        "short", [target(util_hours(">"), "busy GPU-hours", instant=True),
                  target(util_hours("<="), "idle GPU-hours", "B", instant=True)], runbook_link(ctx, reads.fm))


def _cost(ctx: Context, reads: Reads) -> Panel:
    s = ctx.settings
    by_model = promql.by((s.cluster_label, "modelName"))
    idle_util = reads.value("idle_util")

    def gpus_with(matcher: str) -> str:
        return f"count by ({by_model}) ({ctx.gpu_series(ctx.named('reporting'), matcher)})"

    def idle_allocated(matcher: str) -> str:
        util = ctx.gpu_series(ctx.named("util_per_gpu"), matcher)
        return (f"count by ({by_model}) ({util} <= {promql.format_number(idle_util)}\n"
                f"  and on ({ctx.gpu_id}) {ctx.named('workload')}{{{s.pod_label}!=\"\"}})")

    prices = ", ".join(f"{p} = {promql.format_number(v)}" for p, v in s.dashboards.prices) or "none"
    return stat(panel_title(ctx, "fleet.cost", "Estimated cost and waste in range"), panel_text(
        ctx, "fleet.cost", idle_util=promql.format_number(idle_util),
        price_default=promql.format_number(s.dashboards.price_default), model_prices=prices,
        runbook_do="; ".join(reads.fm.runbook.act)),
        s.dashboards.currency_unit, [target(_over_range(priced(ctx, gpus_with)), "cost", instant=True),
                                     target(_over_range(priced(ctx, idle_allocated)), "waste (allocated, idle)", "B",
                                            instant=True)],
        runbook_link(ctx, reads.fm))
