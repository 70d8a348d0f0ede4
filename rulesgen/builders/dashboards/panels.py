"""Panel constructors: grafanalib panels with this project's defaults, and the panels of a failure
mode's row built from what its alerts read (one per comparison, then one per further record)."""
from __future__ import annotations

from collections.abc import Callable

import attr
from grafanalib.core import DataLink, Panel, Stat, Target, TimeSeries

from ...model import conventions, grafana_units
from ...model.catalog import FailureMode
from ...promql import text as promql
from ...promql import tree as promql_tree
from .context import DATASOURCE, Context, Reads, level
from .prose import (
    comparison_description, comparison_title, comparison_unit, one_line, panel_text, panel_title, record_description,
    record_title)
from .reading import Comparison, alert_reading

SEVERITY_COLOR = {"critical": "red", "warning": "orange", "info": "yellow"}


def threshold_steps(op: str | None, value: float | None, severity: str) -> list[dict]:
    if value is None or op in (None, "==", "!="):
        return [{"color": "green", "value": None}]
    bad = SEVERITY_COLOR.get(severity, "red")
    if op in (">", ">="):
        return [{"color": "green", "value": None}, {"color": bad, "value": value}]
    return [{"color": bad, "value": None}, {"color": "green", "value": value}]


def runbook_link(ctx: Context, fm: FailureMode | None) -> list[DataLink]:
    if fm is None:
        return [DataLink(title="Runbooks", linkUrl=ctx.settings.runbook_base_url, isNewTab=True)]
    return [DataLink(title=f"Runbook: {fm.title}", linkUrl=conventions.runbook_url(ctx.settings.runbook_base_url, fm.id),
                     isNewTab=True)]


def drawn(ctx: Context, panel: str, build: Callable[[Context, Reads], Panel]) -> list[Panel]:
    """[the hand-made panel] when the catalog declares it (catalog/dashboards.yaml), else nothing."""
    reads = ctx.hand_made(panel)
    return [] if reads is None else [build(ctx, reads)]


def target(expr: str, legend: str, ref: str = "A", instant: bool = False, table: bool = False) -> Target:
    return Target(expr=expr, legendFormat=legend, refId=ref, datasource=DATASOURCE, instant=instant,
                  format="table" if table else "time_series")


def in_grafana_unit(unit: str, targets: list[Target], steps: list[dict]) -> tuple[str, list[Target], list[dict]]:
    """The catalog unit as a Grafana unit id (model/grafana_units.py): a unit Grafana has no id for (MHz) is
    drawn through one it has (hertz), the queries and the threshold steps multiplied by its factor."""
    grafana, factor = grafana_units.display(unit)
    if factor == 1:
        return grafana, targets, steps
    n = promql.format_number(factor)
    return (grafana, [attr.evolve(t, expr=f"({t.expr}) * {n}") for t in targets],
            [{**s, "value": None if s["value"] is None else s["value"] * factor} for s in steps])


def time_series(title: str, description: str, unit: str, targets: list[Target], links, steps=None,
                dashed_refs=(), stacked: bool = False) -> TimeSeries:
    unit, targets, steps = in_grafana_unit(unit, targets, steps or [{"color": "green", "value": None}])
    overrides = [{"matcher": {"id": "byFrameRefID", "options": ref},
                  "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}]}
                 for ref in dashed_refs]
    return TimeSeries(title=title, description=description, unit=unit, targets=targets, links=links,
                      dataSource=DATASOURCE, thresholds=steps, maxDataPoints=None, overrides=overrides,
                      thresholdsStyleMode="dashed" if len(steps) > 1 else "off", fillOpacity=10 if stacked else 0,
                      stacking={"mode": "normal", "group": "A"} if stacked else {"mode": "none", "group": "A"},
                      tooltipMode="multi", tooltipSort="desc", legendDisplayMode="table", legendPlacement="right",
                      legendCalcs=["lastNotNull", "max"])


def stat(title: str, description: str, unit: str, targets: list[Target], links, calc: str = "lastNotNull") -> Stat:
    unit, targets, _ = in_grafana_unit(unit, targets, [])
    return Stat(title=title, description=description, format=unit, targets=targets, links=links, dataSource=DATASOURCE,
                thresholds=[{"color": "green", "value": None}], reduceCalc=calc, graphMode="none", textMode="value_and_name",
                maxDataPoints=None, noValue="0")


def firing_alerts_panel(ctx: Context, modes: list[FailureMode]) -> TimeSeries:
    ids = "|".join(fm.id for fm in modes) or "none"
    expr = (f'count by (failure_mode) (ALERTS{{alertstate="firing", failure_mode=~"{ids}", '
            f'{ctx.variables.matchers(("cluster",))}}})')
    desc = panel_text(ctx, "alerts.firing")
    return time_series(panel_title(ctx, "alerts.firing", "Firing alerts by failure mode"), desc, "short",
                       [target(expr, "{{failure_mode}}")], runbook_link(ctx, None), stacked=True)


def _of_gpus(expr: str) -> bool:
    """Whether expr reads a per-GPU series (an exporter field or a gpu: record), so the GPU variables can select
    from it; an exporter target's `up` has no GPU to select (joined on the GPU's identity it would draw nothing)."""
    return any(level(s.name) in ("gpu", "raw") for s in promql_tree.selectors(expr) if s.name)


def comparison_panel(ctx: Context, fm: FailureMode, c: Comparison, title: str, legend: str) -> TimeSeries:
    def query(expr: str) -> str:
        expr = ctx.filtered(one_line(expr), fm.scope)
        return ctx.selected_gpus(expr) if fm.scope == "gpu" and _of_gpus(expr) else expr

    targets = [target(query(c.lhs), legend if _of_gpus(c.lhs) or fm.scope != "gpu" else "{{instance}}")]
    reference = c.value is None
    if reference:
        per_model = fm.scope == "gpu" and any(level(n) == "model" for n in promql_tree.recorded_names(c.rhs))
        targets.append(target(query(ctx.per_gpu(c.rhs) if per_model else c.rhs), "alert line: " + legend, "B"))
    return time_series(title, comparison_description(ctx, fm, c), comparison_unit(ctx, c), targets,
                       runbook_link(ctx, fm), threshold_steps(c.op, c.value, c.severity), ("B",) if reference else ())


def record_panel(ctx: Context, fm: FailureMode, record: str, legend: str) -> TimeSeries:
    """A recording rule the alerts read; the legend names the series only at the alert's own level
    (an empty legend lets Grafana show all labels of a node or fleet series)."""
    expr = ctx.filtered(record, fm.scope)
    same_level = level(record) == fm.scope
    if same_level and fm.scope == "gpu":
        expr = ctx.selected_gpus(expr)
    return time_series(record_title(ctx, record), record_description(ctx, fm, record), ctx.unit(record),
                       [target(expr, legend if same_level else "")], runbook_link(ctx, fm))


def _plumbing(ctx: Context, record: str) -> bool:
    """Recording rules that carry labels or limits, not a signal worth a panel of its own."""
    return record in (ctx.named("workload"), conventions.MODEL_GPUS) or record.startswith(conventions.LIMIT_PREFIX)


def alert_panels(ctx: Context, fm: FailureMode) -> list[Panel]:
    """A failure mode's row read from its alerts, main panel first: the comparisons they make that the catalog
    has words for (prose.comparison_title), then the other records they read."""
    reading = alert_reading(ctx, fm)
    legend = ctx.legend(fm.scope, reading.extra_labels)
    titled = [(c, title) for c in reading.comparisons if (title := comparison_title(ctx, c))]
    twice = {t for t in (t for _, t in titled) if sum(t == u for _, u in titled) > 1}
    # One series compared by two alerts (DCGM health: fail and warn): a panel each, named by its alert's severity.
    titled = [(c, f"{t} ({c.severity} alert)" if t in twice else t) for c, t in titled]
    panels: list[Panel] = [comparison_panel(ctx, fm, c, title, legend) for c, title in titled]
    shown = {n for c, _ in titled for side in (c.lhs, c.rhs) for n in promql_tree.recorded_names(side)}
    panels += [record_panel(ctx, fm, r, legend) for r in reading.records if r not in shown and not _plumbing(ctx, r)]
    if panels:
        panels[0] = attr.evolve(panels[0], title=f"{fm.title}: {panels[0].title}")
    return panels
