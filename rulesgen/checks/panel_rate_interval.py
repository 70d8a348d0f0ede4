"""panel-rate-interval: grafana/dashboard-linter's target-rate-interval-rule. rate() and irate() of a panel read
the range $__rate_interval, which Grafana keeps at least four scrape intervals whatever the zoom; a fixed range is
too short zoomed out (points skipped) or too long zoomed in (spikes smoothed away)."""
from ..promql import tree as promql_tree
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard, parsed

RATE_INTERVAL_STAND_IN = 3 * 3600 + 7  # $__rate_interval's value while the query is parsed: no range has it


def run(d: Dashboard):
    for p in d.data_panels:
        for t in d.targets(p):
            expr = parsed(t["expr"].replace("$__rate_interval", f"{RATE_INTERVAL_STAND_IN}s"))
            if promql_tree.problems(expr):
                continue  # panel-promql's
            for call in promql_tree.range_calls(expr):
                if call.function in ("rate", "irate") and call.selector and call.range != RATE_INTERVAL_STAND_IN:
                    yield d.hit(f"query {t.get('refId', '?')}: {call.function}() over a fixed range, not [$__rate_interval]", p)


CHECK = Check("panel-rate-interval", "warning", False, "rate()/irate() of a panel over a range that is not "
              "$__rate_interval (dashboard-linter target-rate-interval-rule)", DASHBOARD, run)
