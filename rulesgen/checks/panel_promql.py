"""panel-promql: grafana/dashboard-linter's target-promql-rule. Every query of a panel parses as PromQL (rulesgen's
parser, rulesgen/promql/tree.py), Grafana's own variables ($__rate_interval ...) read as a value of their kind;
an annotation's query too."""
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard, query_problem


def run(d: Dashboard):
    for p in d.data_panels:
        for t in d.targets(p):
            problem = query_problem(t["expr"])
            if problem:
                yield d.hit(f"query {t.get('refId', '?')} does not parse: {problem}", p)
    for a in (d.data.get("annotations") or {}).get("list", []) or []:
        if isinstance(a, dict) and isinstance(a.get("expr"), str) and query_problem(a["expr"]):
            yield d.hit(f"annotation {a.get('name')!r}: its query does not parse: {query_problem(a['expr'])}",
                        key=r'"annotations":')


CHECK = Check("panel-promql", "error", False, "a panel's or an annotation's query does not parse "
              "(dashboard-linter target-promql-rule)", DASHBOARD, run)
