"""What a failure mode's alerts read, from the syntax trees of their expressions as build_rules rendered
them (Rule.template_expr, read from the rule set, never rendered again): the comparisons they make
(each threshold known by its place) and the recording rules they name."""
from __future__ import annotations

from dataclasses import dataclass

from ...model import conventions
from ...model.catalog import FailureMode, Threshold
from ...promql import labels as label_flow
from ...promql import printer as promql_print
from ...promql import tree as promql_tree
from .context import Context


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


@dataclass(frozen=True)
class AlertReading:
    """What a failure mode's alerts read: their comparisons and the recording rules they name."""
    comparisons: tuple[Comparison, ...]
    records: tuple[str, ...]  # in order of first use
    extra_labels: tuple[str, ...]  # labels the alerts group by beyond the GPU's own (xid ...)


def alert_reading(ctx: Context, fm: FailureMode) -> AlertReading:
    """Read from the built alerts' template expressions (Rule.template_expr), each threshold at its place."""
    by_name = {t.name: t for t in fm.thresholds}
    built = {r.alert: r for r in ctx.rules.rules if r.alert and r.failure_mode == fm.id}
    found: dict[str, Comparison] = {}
    records: list[str] = []
    extra: list[str] = []
    known = {*ctx.settings.gpu_labels, *ctx.settings.workload_labels, "workload"}
    for spec in fm.alerts:
        alert = conventions.alert_name(fm.id, spec.severity, len(fm.alerts))
        marked = built[alert].template_expr if alert in built else None
        if marked is None or not marked.text:
            continue
        tree = marked.tree
        severity = ctx.severity(fm, spec.severity)
        for c in promql_tree.comparisons(tree):
            alone = promql_tree.wrapped_series(c.rhs)
            placed = marked.threshold_at(alone.selector) if alone and alone.function is None else None
            threshold = by_name[placed.name] if placed and placed.mode == fm.id else None
            value = placed.value if placed else promql_tree.number(c.rhs)
            lhs = promql_print.to_text(c.lhs, marked.value_text)
            found.setdefault(lhs, Comparison(lhs, c.op, promql_print.to_text(c.rhs, marked.value_text), threshold, value,
                                             severity, alert))
        records += [r for r in promql_tree.recorded_names(tree) if r not in records]
        carried = label_flow.output_labels(tree, ctx.record_labels)  # not an inner grouping's (instance of a join)
        for kind, labels in promql_tree.grouping(tree):
            if kind == "by":
                extra += [x for x in labels if x not in known | set(extra) and carried.can_carry(x)]
    return AlertReading(tuple(found.values()), tuple(records), tuple(extra))
