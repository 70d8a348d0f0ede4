"""A catalog metric as a PromQL selector: every name it is exported under (old and new names, each alias
scaled to the metric's unit), without DCGM's not-supported/blank sentinels and impossible readings."""
from __future__ import annotations

from ..model.catalog import Metric
from ..promql.text import format_number


def selector(metric: Metric, matchers: str, names: tuple[str, ...] | None = None) -> str:
    """The raw series of `metric` under every name it is exported as (old and new names)."""
    names = names or metric.names
    if len(names) == 1:
        return f"{names[0]}{{{matchers}}}"
    return f'{{__name__=~"{"|".join(names)}", {matchers}}}'


def valid(metric: Metric, matchers: str) -> str:
    """Instant values in the metric's unit (aliases scaled), without DCGM's not-supported/blank
    sentinels (about 9.2e18 for int64 fields) and without impossible readings (max_plausible:
    dcgm-exporter passes e.g. a GPU utilisation of 808334905 straight through)."""
    terms = []
    for scale, names in metric.names_by_scale():
        term = f"({selector(metric, matchers, names)} < {format_number(metric.valid_max)})"
        if scale != 1:
            term = f"({term} * {format_number(scale)})"
        if metric.max_plausible is not None:
            term = f"({term} <= {format_number(metric.max_plausible)})"
        terms.append(term)
    return terms[0] if len(terms) == 1 else "(" + " or ".join(terms) + ")"
