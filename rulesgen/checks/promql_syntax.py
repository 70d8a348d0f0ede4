"""promql-syntax: the expression does not parse (the other rule checks then skip its tree)."""
from .base import RULE, Check, Rule


def run(rule: Rule):
    if rule.error is not None:
        yield rule.hit(f"expression does not parse: {rule.error}")


CHECK = Check("promql-syntax", "error", False, "the expression does not parse as PromQL", RULE, run)
