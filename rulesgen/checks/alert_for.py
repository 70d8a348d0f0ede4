"""alert-for: an alert without `for` fires on one bad sample."""
from ..load.yamlsource import where_of
from .base import RULE, Check, Rule


def run(rule: Rule):
    if "alert" in rule.node and "for" not in rule.node:
        yield rule.hit("alert has no `for`: one bad sample pages someone", where_of(rule.node, "alert"))


CHECK = Check("alert-for", "warning", False, "alert without `for`", RULE, run)
