"""raw-long-window: a range of long_window (1h) or more over raw series reads every raw sample of it
at every evaluation: record a short average first, then the long statistics over that."""
from ..durations import format_duration
from ..promql import printer as promql_print
from ..promql import tree as promql_tree
from .base import RULE, Check, Rule


def names_of(s: promql_tree.Selector) -> tuple[str, ...]:
    """The metric names a selector reads (its printed text when it names none)."""
    return s.names or (promql_print.selector_text(s),)


def is_raw_long(s: promql_tree.Selector, long_window: int) -> bool:
    return s.range is not None and s.range >= long_window and not any(promql_tree.is_record(n) for n in names_of(s))


def run(rule: Rule):
    for s in promql_tree.selectors(rule.tree) if rule.tree else ():
        if is_raw_long(s, rule.options.long_window):
            yield rule.hit(f"[{format_duration(s.range)}] over raw series {'|'.join(names_of(s))}: "
                           "downsample with a recording rule first")


CHECK = Check("raw-long-window", "warning", False, "long range over raw series: downsample first", RULE, run)
