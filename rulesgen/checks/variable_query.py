"""variable-query: grafana/dashboard-linter's template-label-promql-rule. A query variable calls one of Grafana's
Prometheus variable functions (label_values, label_names, metrics, query_result) on a query that parses."""
import re

from .base import DASHBOARD, Check
from .dashboard_view import Dashboard, query_problem

CALL = re.compile(r"(label_values|label_names|metrics|query_result)\((.*)\)", re.S)


def run(d: Dashboard):
    for v in d.variables:
        if v.get("type") != "query":
            continue
        query = str(v.get("query", ""))
        m = CALL.fullmatch(query.strip())
        if not m:
            yield d.variable_hit(v, f"query {query!r} is not label_values(), label_names(), metrics() or query_result()")
            continue
        inner = m.group(2)
        if m.group(1) == "label_values":
            inner = re.sub(r",\s*[A-Za-z_]\w*\s*$", "", inner)  # the label
        if m.group(1) != "metrics" and inner.strip() and query_problem(inner):
            yield d.variable_hit(v, f"its query does not parse: {query_problem(inner)}")


CHECK = Check("variable-query", "error", False, "a query variable's query is not a Grafana Prometheus variable "
              "function over valid PromQL (dashboard-linter template-label-promql-rule)", DASHBOARD, run)
