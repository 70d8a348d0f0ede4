"""panel-datasource: grafana/dashboard-linter's panel-datasource-rule. Every panel and every query reads the
templated data source (${datasource}), never a data source by name: a name is one Grafana's, not another's."""
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard

TEMPLATED = ("$datasource", "${datasource}")


def _uid(source) -> str:
    return str(source.get("uid")) if isinstance(source, dict) else str(source)


def run(d: Dashboard):
    for p in d.data_panels:
        sources = [p.get("datasource"), *(t.get("datasource") for t in p.get("targets", []) or [] if isinstance(t, dict))]
        wrong = sorted({_uid(s) for s in sources if s is not None and _uid(s) not in TEMPLATED})
        if wrong or p.get("datasource") is None:
            yield d.hit(f"reads data source {', '.join(wrong) or 'none'}, not the templated ${{datasource}}", p)


CHECK = Check("panel-datasource", "error", False, "a panel or query does not read ${datasource} "
              "(dashboard-linter panel-datasource-rule)", DASHBOARD, run)
