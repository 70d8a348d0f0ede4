"""dashboard-editable: grafana/dashboard-linter's uneditable-dashboard rule. A generated dashboard is changed in
its catalog, not in Grafana: an edit saved there is lost at the next render, so the dashboard says editable: false."""
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard


def run(d: Dashboard):
    if d.data.get("editable", True) is not False:
        yield d.hit("is editable: set editable: false (change the catalog, not the dashboard)", key=r'"editable":')


CHECK = Check("dashboard-editable", "warning", False, "the dashboard is editable (dashboard-linter uneditable-dashboard)",
              DASHBOARD, run)
