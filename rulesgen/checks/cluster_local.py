"""cluster-local: every rule's result for one cluster is computed from that cluster's series alone, so one
evaluator over several clusters' series (a Thanos or Mimir ruler over a global store, a VictoriaMetrics
cluster holding every cluster) gives each cluster what its own Prometheus gives it. tiers.Classifier reads
it from the trees with the cluster label as the partition key: every aggregation groups by it and every
`on (...)` match keeps it (an exporter's `instance`, a pod IP, repeats across clusters). Rules may not
select or rewrite the cluster label either: its value is the cluster's name, not a signal."""
from __future__ import annotations

import promql_parser as pp

from ..promql import tree as promql_tree
from ..promql.tiers import LOCAL, Classifier
from .base import FILES, Check, Files

LABEL_FUNCTIONS = ("label_replace", "label_join")


def _rewrites(e, label: str) -> bool:
    """A label_replace/label_join that writes or reads the cluster label."""
    if not (isinstance(e, pp.Call) and e.func.name in LABEL_FUNCTIONS):
        return False
    # label_replace(v, dst, replacement, src, regex); label_join(v, dst, separator, src...)
    names = [a.val for a in e.args[1:] if isinstance(a, pp.StringLiteral)]
    touched = names[:1] + (names[2:3] if e.func.name == "label_replace" else names[2:])
    return label in touched


def uses_label(expr: str, label: str) -> str | None:
    """How an expression selects or rewrites `label`, if it does."""
    for s in promql_tree.selectors(expr):
        if any(name == label for name, _, _ in s.matchers):
            return f"selects on {label} ({s.name or 'a series'})"
    if any(_rewrites(e, label) for e in promql_tree.nodes(expr)):
        return f"rewrites {label} with label_replace/label_join"
    return None


def run(files: Files):
    label = files.options.cluster_label
    located = files.plain_rules
    tiers = Classifier([rule for _, rule in located], (label,)).tiers
    for (path, rule), tier in zip(located, tiers):
        why = uses_label(rule.expr, label)
        if why is None and tier.tier != LOCAL:
            why = f"mixes clusters: {tier.reason}"
        if why is not None:
            yield rule.hit(path, f"{why}; keep {label} in every by (...) and on (...), so that each cluster's result "
                           "depends on its own series only")


CHECK = Check("cluster-local", "error", True, "a rule's result for one cluster is computed from that cluster's series "
              "alone: every aggregation and `on (...)` match keeps the cluster label, and no rule selects or rewrites "
              "it (one ruler over several clusters: Thanos, Mimir, VictoriaMetrics)", FILES, run)
