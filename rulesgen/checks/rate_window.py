"""rate-window: a rate()-like function over a window shorter than 4 scrape intervals sees too few
samples (one missed scrape and it returns nothing). `rulesgen render` holds scrape_interval to the
same rule for its own rules (shortest_rate_window)."""
from ..durations import format_duration
from ..promql import tree as promql_tree
from .base import RULE, Check, Rule

RATE_FUNCTIONS = ("rate", "irate", "increase", "deriv", "delta", "idelta")


def run(rule: Rule):
    scrape_interval = rule.options.scrape_interval
    for call in promql_tree.range_calls(rule.tree) if rule.tree else ():
        if call.function in RATE_FUNCTIONS and call.selector and call.range < 4 * scrape_interval:
            yield rule.hit(f"{call.function}() over [{format_duration(call.range)}] is shorter than 4x the scrape "
                           f"interval ({4 * scrape_interval}s)")


def shortest_rate_window(rules) -> tuple[int, str] | None:
    """(seconds, rule name) of the shortest rate()-like window over a raw series among `rules` (Rule
    objects): the rate-window check needs scrape_interval <= a quarter of it."""
    best = None
    for rule in rules:
        for call in promql_tree.range_calls(rule.tree):
            if call.function in RATE_FUNCTIONS and call.selector and (best is None or call.range < best[0]):
                best = (call.range, rule.alert or rule.record)
    return best


CHECK = Check("rate-window", "warning", False, "rate()-like window under 4 scrape intervals", RULE, run)
