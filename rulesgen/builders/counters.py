"""The dcgm-exporter counters the rendered rules need: every DCGM field some rule reads (an alias counts
for its field) and the label fields, from the catalog's metric table (render/counters.py writes them)."""
from __future__ import annotations

from ..model.catalog import Catalog
from ..model.output import CounterField, ExporterCounters, RuleSet
from ..promql.tree import metric_names


def fields_read(catalog: Catalog, rules: RuleSet) -> list[str]:
    """Canonical names of every DCGM field some rendered rule reads, in catalog order."""
    known = {n for m in catalog.metrics for n in m.names}
    names = {catalog.metric(n).name for r in rules.rules for n in metric_names(r.tree) if n in known}
    return [m.name for m in catalog.metrics if m.name in names]


def exporter_counters(catalog: Catalog, rules: RuleSet, namespace: str) -> ExporterCounters:
    def line(name: str) -> CounterField:
        m = catalog.metric(name)
        return CounterField(name, m.type, m.help)
    return ExporterCounters(tuple(line(n) for n in fields_read(catalog, rules)),
                            tuple(line(n) for n in catalog.named_all("label_fields")), namespace)
