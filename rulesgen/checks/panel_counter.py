"""panel-counter: grafana/dashboard-linter's target-counter-agg-rule. A counter (a catalog metric of type counter,
under any of its names, or a name ending in _total) is read only inside rate(), irate() or increase(): its raw
value is the total since the exporter started, which says nothing and drops at every restart."""
from ..promql import tree as promql_tree
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard, parsed

RATES = ("rate", "irate", "increase")


def raw_counters(expr: str, counters: frozenset[str]) -> list[str]:
    """The counters expr reads other than as the range of a rate-like call."""
    return [n for s in promql_tree.selectors(expr) if s.range is None or s.function not in RATES
            for n in s.names if n in counters or n.endswith("_total")]


def run(d: Dashboard):
    counters = d.board.options.counters
    for p in d.data_panels:
        for t in d.targets(p):
            expr = parsed(t["expr"])
            if promql_tree.problems(expr):
                continue  # panel-promql's
            for name in raw_counters(expr, counters):
                yield d.hit(f"query {t.get('refId', '?')} reads counter {name} outside rate()/irate()/increase()", p)


CHECK = Check("panel-counter", "error", False, "a panel reads a counter outside rate()/irate()/increase() "
              "(dashboard-linter target-counter-agg-rule)", DASHBOARD, run)
