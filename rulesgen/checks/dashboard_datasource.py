"""dashboard-datasource: grafana/dashboard-linter's template-datasource-rule. One templated data source, named
`datasource` and labelled "Data source", of type prometheus: the panels read it, so the dashboard runs against
any Prometheus or VictoriaMetrics data source."""
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard


def run(d: Dashboard):
    sources = [v for v in d.variables if v.get("type") == "datasource"]
    if len(sources) != 1:
        yield d.hit(f"has {len(sources)} data source variables: give it one, named datasource", key=r'"templating":')
        return
    v = sources[0]
    if v.get("name") != "datasource" or v.get("label") != "Data source" or v.get("query") != "prometheus":
        yield d.variable_hit(v, f"the data source variable is named {v.get('name')!r}, labelled {v.get('label')!r}, of type "
                                f"{v.get('query')!r}: name it datasource, label it 'Data source', type prometheus")


CHECK = Check("dashboard-datasource", "error", False,
              "not one prometheus data source variable named datasource (dashboard-linter template-datasource-rule)",
              DASHBOARD, run)
