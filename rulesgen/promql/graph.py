"""The dependency graph of a rule set: what each rule reads and who reads it, from the rules' syntax trees."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from .tree import metric_names, names_read, recorded_names, selectors

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
        self.alert_labels = {j: known_alert_labels(self.rules[j].alert, getattr(self.rules[j], "labels", None))
                             for j in self.writers.get(ALERT_SERIES[0], ())}

    def read_rules(self, i: int) -> set[int]:
        """Indices of the rules whose output rule i reads; of the alerts, those its ALERTS selectors can
        match (by alertname and the alert's fixed labels)."""
        out = {j for name in self.reads[i] if name not in ALERT_SERIES for j in self.writers.get(name, ())}
        alert_reads = [s for s in selectors(self.rules[i].expr) if set(s.names) & set(ALERT_SERIES)]
        return out | {j for j, labels in self.alert_labels.items() if any(s.may_select(labels) for s in alert_reads)}

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


def known_alert_labels(alert: str, labels) -> dict[str, str]:
    """The labels every ALERTS series of an alerting rule carries whatever its expression returns: its name
    and its fixed `labels:` (a dict or pairs; a rule's labels override its expression's; a templated value
    is not known)."""
    pairs = labels.items() if isinstance(labels, dict) else labels or ()
    return {"alertname": alert} | {k: v for k, v in pairs if "{{" not in str(v)}


def written_names(rule) -> tuple[str, ...]:
    """What a rule writes: its record, or for an alert the ALERTS series."""
    return (rule.record,) if getattr(rule, "record", None) else ALERT_SERIES
