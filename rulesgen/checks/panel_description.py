"""panel-description: grafana/dashboard-linter's panel-title-description-rule. Every panel has a title and a
description: what it shows, what normal looks like, what to do (rulesgen's come from the catalog)."""
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard


def run(d: Dashboard):
    for p in d.data_panels:
        missing = [k for k in ("title", "description") if not str(p.get(k) or "").strip()]
        if missing:
            yield d.hit(f"has no {' and no '.join(missing)}", p)


CHECK = Check("panel-description", "warning", False, "a panel without a title or a description "
              "(dashboard-linter panel-title-description-rule)", DASHBOARD, run)
