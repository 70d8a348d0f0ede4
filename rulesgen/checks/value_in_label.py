"""value-in-label: $value (or .Value) in an alert's label makes every new value a new alert."""
from ..load.yamlsource import where_of
from .base import RULE, Check, Rule


def run(rule: Rule):
    if "alert" not in rule.node:
        return
    labels = rule.node.get("labels") or {}
    for key, value in labels.items():
        if "$value" in str(value) or ".Value" in str(value):
            yield rule.hit(f"label {key!r} uses $value: every new value starts a new alert", where_of(labels, key))


CHECK = Check("value-in-label", "warning", False, "$value in a label: every new value starts a new alert", RULE, run)
