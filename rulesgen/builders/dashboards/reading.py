"""What a failure mode's alerts read, from the syntax trees of their expressions as the rules
builder renders them: the comparisons they make (each threshold recognised by a marker left in its
place) and the recording rules they name."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import Collector
from ...load import template_syntax
from ...model import conventions
from ...model.catalog import FailureMode, Threshold
from ...promql import printer as promql_print
from ...promql import text as promql
from ...promql import tree as promql_tree
from .. import templates
from .context import Context

MARKER_PREFIX, MARKER_SUFFIX = "__threshold_", "__"  # a threshold's place: a series name in the tree


@dataclass(frozen=True)
class Comparison:
    """`lhs op rhs` inside an alert expression; rhs is a threshold, a number or a reference series."""
    lhs: str
    op: str
    rhs: str
    threshold: Threshold | None
    value: float | None  # the threshold's (or the number's) value; None for a reference series
    severity: str
    alert: str


class _Marker(str):
    """A threshold's marker; a template filter that needs the number (a range) reads threshold_value."""
    threshold_value: float


def _marker_for(name: str, value: float) -> _Marker:
    marker = _Marker(f"{MARKER_PREFIX}{name}{MARKER_SUFFIX}")
    marker.threshold_value = value
    return marker


def _marked_expr(ctx: Context, fm: FailureMode, spec) -> str:
    """The alert expression as the rules builder renders it, with each threshold left as a marker."""
    context = templates.mode_context(templates.base_context(ctx.catalog, ctx.settings, ctx.resolved), ctx.resolved.mode(fm.id))
    values = ctx.threshold_values(fm)
    context["t"] = type(context["t"])(f"threshold of {fm.id}",
                                      {t.name: _marker_for(t.name, values[t.name]) for t in fm.thresholds})
    return template_syntax.render(spec.expr, context, spec.where, Collector(), fm.id)


def _marker(s: promql_tree.Selector) -> str | None:
    """The threshold a marker stands for."""
    name = s.name or ""
    if name.startswith(MARKER_PREFIX) and name.endswith(MARKER_SUFFIX) and not s.matchers and s.range is None:
        return name[len(MARKER_PREFIX):-len(MARKER_SUFFIX)]
    return None


def _with_values(expr, values: dict[str, float]) -> str:
    """The expression on one line, each threshold's value in place of its marker."""
    def value(s: promql_tree.Selector) -> str | None:
        name = _marker(s)
        return promql.format_number(values[name]) if name else None
    return promql_print.to_text(expr, value)


@dataclass(frozen=True)
class AlertReading:
    """What a failure mode's alerts read: their comparisons and the recording rules they name."""
    comparisons: tuple[Comparison, ...]
    records: tuple[str, ...]  # in order of first use
    extra_labels: tuple[str, ...]  # labels the alerts group by beyond the GPU's own (xid ...)


def alert_reading(ctx: Context, fm: FailureMode) -> AlertReading:
    values = ctx.threshold_values(fm)
    by_name = {t.name: t for t in fm.thresholds}
    found: dict[str, Comparison] = {}
    records: list[str] = []
    extra: list[str] = []
    known = {*ctx.settings.gpu_labels, *ctx.settings.workload_labels, "workload"}
    for spec in fm.alerts:
        text = _marked_expr(ctx, fm, spec)
        if not text:
            continue  # a template error: build_rules reports it
        tree = promql_tree.parse(text)
        severity = ctx.severity(fm, spec.severity)
        alert = conventions.alert_name(fm.id, spec.severity, len(fm.alerts))
        for c in promql_tree.comparisons(tree):
            alone = promql_tree.wrapped_series(c.rhs)
            name = _marker(alone.selector) if alone and alone.function is None else None
            threshold = by_name[name] if name else None
            value = values[threshold.name] if threshold else promql_tree.number(c.rhs)
            lhs = _with_values(c.lhs, values)
            found.setdefault(lhs, Comparison(lhs, c.op, _with_values(c.rhs, values), threshold, value, severity, alert))
        records += [r for r in promql_tree.recorded_names(tree) if r not in records]
        for kind, labels in promql_tree.grouping(tree):
            if kind == "by":
                extra += [x for x in labels if x not in known | set(extra)]
    return AlertReading(tuple(found.values()), tuple(records), tuple(extra))
