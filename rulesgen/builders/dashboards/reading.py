"""What a failure mode's alerts read, from their expressions as the rules builder renders them:
the comparisons they make (each threshold recognised by a marker left in its place) and the
recording rules they name."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ... import conventions, promql
from ...errors import Collector
from ...model import FailureMode, Threshold
from .. import templates
from .comparisons import comparisons
from .context import Context

_MARKER = re.compile(r"__threshold_(\w+?)__")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


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


def _marked_expr(ctx: Context, fm: FailureMode, spec) -> str:
    """The alert expression as the rules builder renders it, with each threshold left as a marker."""
    context = templates.mode_context(templates.base_context(ctx.catalog, ctx.settings), fm, ctx.settings)
    context["t"] = type(context["t"])(f"threshold of {fm.id}", {t.name: f"__threshold_{t.name}__" for t in fm.thresholds})
    return templates.render(spec.expr, context, spec.where, Collector(), fm.id)


def _with_values(text: str, values: dict[str, float]) -> str:
    return _MARKER.sub(lambda m: promql.format_number(values[m.group(1)]), text)


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
        expr = _marked_expr(ctx, fm, spec)
        severity = ctx.severity(fm, spec.severity)
        alert = conventions.alert_name(fm.id, spec.severity, len(fm.alerts))
        for lhs, op, rhs in comparisons(expr):
            marker = _MARKER.fullmatch(rhs.strip())
            threshold = by_name[marker.group(1)] if marker else None
            value = values[threshold.name] if threshold else (float(rhs) if _NUMBER.match(rhs.strip()) else None)
            lhs = _with_values(lhs, values)
            found.setdefault(lhs, Comparison(lhs, op, _with_values(rhs, values), threshold, value, severity, alert))
        plain = _with_values(expr, values)
        records += sorted(promql.recorded_names(plain) - set(records), key=plain.find)
        for labels in re.findall(r"\bby\s*\(([^)]*)\)", plain):
            extra += [x.strip() for x in labels.split(",") if x.strip() and x.strip() not in known | set(extra)]
    return AlertReading(tuple(found.values()), tuple(records), tuple(extra))
