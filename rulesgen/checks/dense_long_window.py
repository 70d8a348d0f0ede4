"""dense-long-window: a day or more over a recorded series written at every evaluation (a raw one is
raw-long-window's): count an event series (one sample per event, conventions.is_sparse) instead."""
from ..durations import format_duration
from ..model.conventions import is_sparse
from ..promql import tree as promql_tree
from .base import RULE, Check, Rule
from .raw_long_window import is_raw_long, names_of

DAY = 86400


def run(rule: Rule):
    for s in promql_tree.selectors(rule.tree) if rule.tree else ():
        names = names_of(s)
        if is_raw_long(s, rule.options.long_window):
            continue
        if s.range is not None and s.range >= DAY and not all(is_sparse(n) for n in names):
            yield rule.hit(f"[{format_duration(s.range)}] over recorded series {'|'.join(names)}, written at "
                           "every evaluation: count an event series (one sample per event, named ...:onset) or read "
                           "daily sums")


CHECK = Check("dense-long-window", "warning", False, "a day or more over a series written every evaluation", RULE, run)
