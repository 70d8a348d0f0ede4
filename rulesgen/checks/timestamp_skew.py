"""timestamp-skew: a comparison of a recorded timestamp with a timestamp() read now. The record was written
by its group at another moment of the interval; a scrape landing in between puts a whole scrape interval
between the two values on a healthy target (and scrape jitter takes it past an equal threshold)."""
import promql_parser as pp

from ..promql import tree as promql_tree
from .base import RULE, Check, Rule

ARITHMETIC = ("-", "+")


def _timestamps_now(e) -> bool:
    """e reads a selector through timestamp() at evaluation time."""
    return any(isinstance(n, pp.Call) and n.func.name == "timestamp" for n in promql_tree.nodes(e))


def _pairs(tree):
    """(lhs, rhs) of every comparison and of every + or - between two vectors."""
    for n in promql_tree.nodes(tree):
        if isinstance(n, pp.BinaryExpr) and (str(n.op) in promql_tree.COMPARISON_OPS or str(n.op) in ARITHMETIC):
            yield n.lhs, n.rhs


def run(rule: Rule):
    recorded = rule.files.timestamp_records
    if not rule.tree or not recorded:
        return
    for lhs, rhs in _pairs(rule.tree):
        for a, b in ((lhs, rhs), (rhs, lhs)):
            names = set(promql_tree.names_read(a)) & recorded
            if names and _timestamps_now(b):
                yield rule.hit(f"compares the recorded timestamp {sorted(names)[0]} with a timestamp() read now: "
                               "the record is written at another moment of its group's interval, so a scrape "
                               "in between puts a scrape interval between them; read both in this query")
                return


CHECK = Check("timestamp-skew", "error", False, "a recorded timestamp compared with a timestamp() read now", RULE, run)
