"""instant-slow-record: an instant selector reading a record written every SLOW_INTERVAL (5m) or less
often: vmalert's 5m query step (engine_fit.SLOW_INTERVAL) misses its newest point."""
from ..promql import tree as promql_tree
from .base import RULE, Check, Rule
from .raw_long_window import names_of


def run(rule: Rule):
    slow = rule.files.slow
    for s in promql_tree.selectors(rule.tree) if rule.tree else ():
        for metric in names_of(s) if s.range is None else ():
            if metric in slow:
                yield rule.hit(f"reads {metric} (written every {slow[metric]}s) with an instant selector: "
                               f"vmalert's 5m query step misses it; use last_over_time({metric}[{2 * slow[metric]}s])")


CHECK = Check("instant-slow-record", "warning", False, "instant read of a record written every 5m or less often",
              RULE, run)
