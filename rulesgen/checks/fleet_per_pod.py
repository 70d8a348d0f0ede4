"""fleet-per-pod: rulesgen's fleet:* aggregates drop per-pod labels (a `without` keeps them all), except
the global tier's `without (shard)` over a shard's parts (README "Sharded topology")."""
from ..promql import tree as promql_tree
from ..promql.tiers import DEFAULT_SHARD_LABEL
from .base import RULE, WORKLOAD_LABELS, Check, Rule


def run(rule: Rule):
    if "alert" in rule.node or not str(rule.node.get("record", "")).startswith("fleet:"):
        return
    for kind, labels in promql_tree.grouping(rule.tree) if rule.tree else ():
        if kind == "without" and set(labels) <= {DEFAULT_SHARD_LABEL}:
            continue
        if kind == "without" or set(labels) & set(WORKLOAD_LABELS):
            yield rule.hit(f"fleet aggregate keeps per-pod labels ({kind} ({', '.join(labels)}))")


CHECK = Check("fleet-per-pod", "warning", True, "rulesgen's fleet:* aggregates drop per-pod labels", RULE, run)
