"""Which failure modes a dcgm-exporter counters file leaves blind: the raw fields each active alert
reads, directly or through recording rules, against the fields the file enables."""
from __future__ import annotations

from dataclasses import dataclass

from ..model.catalog import Catalog
from ..model.output import RuleSet
from ..promql.graph import Graph


@dataclass(frozen=True)
class Coverage:
    state: str  # covered | partial | blind
    missing: tuple[str, ...]

    def describe(self) -> str:
        if self.state == "blind":
            return f"BLIND: needs {', '.join(self.missing)}"
        return f"partial: missing {', '.join(self.missing)}"


def coverage(catalog: Catalog, rules: RuleSet, enabled: set[str]) -> dict[str, Coverage]:
    graph = Graph(list(rules.rules))
    enabled_canonical = {catalog.metric(n).name for n in enabled if _known(catalog, n)}
    out = {}
    for fm in catalog.failure_modes:
        read = graph.metrics_read(r.expr for r in rules.rules if r.failure_mode == fm.id)
        needed = {catalog.metric(n).name for n in read if _known(catalog, n)}
        # DCGM_FI_DEV_GPU_TEMP etc. that only identify GPUs do not make a mode "see" its failure.
        own = {catalog.metric(m).name for m in fm.metrics} & needed or needed
        missing = tuple(sorted(own - enabled_canonical))
        if not own or not missing:
            out[fm.id] = Coverage("covered", ())
        elif len(missing) == len(own):
            out[fm.id] = Coverage("blind", missing)
        else:
            out[fm.id] = Coverage("partial", missing)
    return out


def _known(catalog: Catalog, name: str) -> bool:
    try:
        catalog.metric(name)
        return True
    except KeyError:
        return False
