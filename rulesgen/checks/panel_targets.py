"""panel-targets: grafana/dashboard-linter's panel-no-targets-rule. A data panel (time series, stat, table ...)
with no query draws nothing."""
from .base import DASHBOARD, Check
from .dashboard_view import DATA_PANEL_TYPES, Dashboard


def run(d: Dashboard):
    for p in d.data_panels:
        if p.get("type") in DATA_PANEL_TYPES and not list(d.targets(p)):
            yield d.hit("has no query", p)


CHECK = Check("panel-targets", "error", False, "a data panel without a query (dashboard-linter panel-no-targets-rule)",
              DASHBOARD, run)
