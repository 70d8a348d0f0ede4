"""variable-refresh: grafana/dashboard-linter's template-on-time-change-reload-rule. A query variable reloads its
values when the time range changes (refresh 2): GPUs, nodes and pods come and go."""
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard


def run(d: Dashboard):
    for v in d.variables:
        if v.get("type") == "query" and v.get("refresh") != 2:
            yield d.variable_hit(v, f"refresh is {v.get('refresh')!r}: set 2 (on time range change)")


CHECK = Check("variable-refresh", "warning", False, "a query variable does not reload on time range change "
              "(dashboard-linter template-on-time-change-reload-rule)", DASHBOARD, run)
