"""contract-label: every rulesgen alert carries the labels Alertmanager routes by (README "What it generates")."""
from ..load.yamlsource import where_of
from .base import RULE, Check, Rule

CONTRACT_LABELS = ("severity", "failure_mode", "action")


def run(rule: Rule):
    if "alert" not in rule.node:
        return
    labels = rule.node.get("labels") or {}
    for key in CONTRACT_LABELS:
        if key not in labels:
            yield rule.hit(f"missing label {key!r}", where_of(rule.node, "alert"))


CHECK = Check("contract-label", "warning", True, "rulesgen alerts carry labels severity, failure_mode, action", RULE, run)
