"""The GPU Fleet Overview's own panels: GPUs by model and health state, utilisation, busy and idle
GPU-hours, estimated cost and waste, firing alerts."""
from __future__ import annotations

from collections.abc import Callable

from grafanalib.core import Panel

from ... import promql
from .context import Context
from .panels import firing_alerts_panel, runbook_link, stat, target, time_series
from .prose import describe, signal_text


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
    s = ctx.settings
    by_model = promql.by((s.cluster_label, "modelName"))
    fleet = ctx.variables.matchers(("cluster", "modelName"))
    idle_util = ctx.threshold("gpu_idle_allocated", "gpu_util", 0.05)
    health = [fm for fm in ctx.catalog.failure_modes if fm.group == "health"]
    health_ids = "|".join(fm.id for fm in health) or "none"
    gpu_key = promql.by((s.cluster_label, s.host_label, "gpu"))

    def gpus_with(matcher: str) -> str:
        return f"count by ({by_model}) ({ctx.gpu_series('gpu:dcgm_reporting:timestamp', matcher)})"

    def idle_allocated(matcher: str) -> str:
        util = ctx.gpu_series("gpu:dcgm_gpu_util:ratio", matcher)
        return (f"count by ({by_model}) ({util} <= {promql.format_number(idle_util)}\n"
                f"  and on ({ctx.gpu_id}) gpu:dcgm_workload:info{{{s.pod_label}!=\"\"}})")

    def util_hours(op: str) -> str:
        return _over_range(f"{ctx.gpu_series('gpu:dcgm_gpu_util:ratio')} {op} bool {promql.format_number(idle_util)}")

    money = s.dashboards.currency_unit
    idle_fm, util_fm = ctx.mode("gpu_idle_allocated"), ctx.mode("misleading_utilization")
    price_note = (f"Prices per GPU-hour from rulesgen.yaml dashboards.price_per_gpu_hour (default "
                  f"{promql.format_number(s.dashboards.price_default)}; models: "
                  + (", ".join(f"{p} = {promql.format_number(v)}" for p, v in s.dashboards.prices) or "none") + ").")
    state = [
        target(f"sum(fleet:dcgm_gpus:count{{{fleet}}})", "reporting"),
        target(f"sum(fleet:dcgm_gpus:count{{{fleet}}})\n  - (count(max by ({gpu_key}) (ALERTS{{alertstate=\"firing\", "
               f"failure_mode=~\"{health_ids}\", {fleet}}})) or vector(0))", "healthy", "B"),
        target(f'count(max by ({gpu_key}) (ALERTS{{alertstate="firing", action="drain", {fleet}}})) or vector(0)',
               "to drain", "C"),
        target(f'count(max by ({gpu_key}) (ALERTS{{alertstate="firing", action="investigate", '
               f'failure_mode=~"{health_ids}", {fleet}}})) or vector(0)', "to investigate", "D"),
    ]
    return [
        stat("GPUs by model", describe(signal_text(ctx, "fleet:dcgm_gpus:count", "GPUs reporting per model."),
                                       "the number of GPUs you own; a drop is GPUs or nodes gone (see GPU Health).",
                                       "compare with the inventory; check exporter_down and gpu_lost alerts."),
             "short", [target(f"sum by (modelName) (fleet:dcgm_gpus:count{{{fleet}}})", "{{modelName}}", instant=True)],
             runbook_link(ctx, None)),
        stat("GPUs by health state", describe(
            "GPUs reporting, healthy (no firing health alert), with a drain alert, and with an investigate alert.",
            "to drain and to investigate at 0.", "open GPU Health; drain one node at a time (fleet_capacity_degraded guards the rest)."),
            "short", state, runbook_link(ctx, ctx.mode("fleet_capacity_degraded"))),
        time_series("Fleet utilisation: SM active (GPU_UTIL dashed)", describe(
            "Mean SM active per cluster and model: the share of cycles the SMs had work, the honest utilisation. "
            "GPU_UTIL (dashed) only says a kernel was running.",
            "SM active close to GPU_UTIL; a wide gap is the utilisation myth (misleading_utilization).",
            "; ".join(util_fm.runbook.act) if util_fm else "look at GPU Performance."),
            "percentunit",
            [target(f"fleet:dcgm_sm_active:avg{{{fleet}}}", "{{cluster}} {{modelName}} SM active"),
             target(f"fleet:dcgm_gpu_util:avg{{{fleet}}}", "{{cluster}} {{modelName}} GPU_UTIL", "B")],
            runbook_link(ctx, util_fm), dashed_refs=("B",)),
        stat("GPU-hours in range: busy vs idle", describe(
            f"GPU-hours over the dashboard's time range with GPU_UTIL above {promql.format_number(idle_util)} (busy) "
            f"and at or below it (idle); the limit is gpu_idle_allocated's gpu_util threshold.",
            "busy far above idle for a training fleet.", "find idle GPUs in GPU Jobs and GPU Performance."),
            "short", [target(util_hours(">"), "busy GPU-hours", instant=True),
                      target(util_hours("<="), "idle GPU-hours", "B", instant=True)], runbook_link(ctx, idle_fm)),
        stat("Estimated cost and waste in range", describe(
            "Cost: GPU-hours of every reporting GPU times its model's price. Waste: GPU-hours of GPUs held by a pod "
            f"while idle (GPU_UTIL at or below {promql.format_number(idle_util)}). " + price_note,
            "waste a small share of cost.", "; ".join(idle_fm.runbook.act) if idle_fm else "release idle GPUs."),
            money, [target(_over_range(priced(ctx, gpus_with)), "cost", instant=True),
                    target(_over_range(priced(ctx, idle_allocated)), "waste (allocated, idle)", "B", instant=True)],
            runbook_link(ctx, idle_fm)),
        firing_alerts_panel(ctx, list(ctx.catalog.failure_modes), "Firing alerts by failure mode"),
    ]

