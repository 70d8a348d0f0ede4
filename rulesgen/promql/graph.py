"""The dependency graph of a rule set: what each rule reads and who reads it, from the rules' syntax trees."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from .tree import metric_names, names_read, recorded_names

ALERT_SERIES = ("ALERTS", "ALERTS_FOR_STATE")


class Graph:
    """What each rule reads and who reads it, over rules given in evaluation order (objects with
    `expr` and `record` or `alert`, e.g. output.Rule). Rules are referred to by index."""

    def __init__(self, rules: Sequence):
        self.rules = tuple(rules)
        self.reads: tuple[tuple[str, ...], ...] = tuple(names_read(r.expr) for r in self.rules)
        self.writers: dict[str, tuple[int, ...]] = {}
        for i, r in enumerate(self.rules):
            for name in written_names(r):
                self.writers[name] = self.writers.get(name, ()) + (i,)

    def read_rules(self, i: int) -> set[int]:
        """Indices of the rules whose output rule i reads (ALERTS: every alert)."""
        return {j for name in self.reads[i] for j in self.writers.get(name, ())}

    def readers(self, name: str) -> tuple[int, ...]:
        return tuple(i for i, names in enumerate(self.reads) if name in names)

    def records_read(self, exprs: Iterable[str], transitive: bool = True) -> tuple[str, ...]:
        """Recording rules of this set that the expressions read, directly or (transitive) through
        other recording rules; in order of discovery."""
        todo = [n for e in exprs for n in recorded_names(e)]
        found: dict[str, None] = {}
        while todo:
            name = todo.pop(0)
            if name in found or name not in self.writers:
                continue
            found[name] = None
            if transitive:
                for j in self.writers[name]:
                    todo.extend(recorded_names(self.rules[j].expr))
        return tuple(found)

    def metrics_read(self, exprs: Iterable[str]) -> set[str]:
        """Exporter series the expressions read, directly or through recording rules of this set."""
        exprs = list(exprs)
        out = {n for e in exprs for n in metric_names(e)}
        for name in self.records_read(exprs):
            for j in self.writers[name]:
                out.update(metric_names(self.rules[j].expr))
        return out


def written_names(rule) -> tuple[str, ...]:
    """What a rule writes: its record, or for an alert the ALERTS series."""
    return (rule.record,) if getattr(rule, "record", None) else ALERT_SERIES
