"""contract-annotation: every rulesgen alert carries the annotations a person acts on."""
from ..load.yamlsource import where_of
from .base import RULE, Check, Rule

CONTRACT_ANNOTATIONS = ("summary", "description", "runbook_url", "dashboard_url")


def run(rule: Rule):
    if "alert" not in rule.node:
        return
    annotations = rule.node.get("annotations") or {}
    for key in CONTRACT_ANNOTATIONS:
        if key not in annotations:
            yield rule.hit(f"missing annotation {key!r}", where_of(rule.node, "alert"))


CHECK = Check("contract-annotation", "warning", True,
              "rulesgen alerts carry summary, description, runbook_url, dashboard_url", RULE, run)
