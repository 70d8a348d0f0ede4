"""panel-series: every series a panel or annotation reads exists: recorded by the catalog's rules or a rule file
given, a catalog metric under any of its names, a training-job metric, or written by the engines (ALERTS,
ALERTS_FOR_STATE, up; builders/series_check.produced, which `rulesgen render` checks too). A contract check: a
dashboard rulesgen did not generate may read other exporters' series."""
from ..promql import tree as promql_tree
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard, parsed


def unknown(expr: str, known: frozenset[str]) -> list[str]:
    expr = parsed(expr)
    if promql_tree.problems(expr):
        return []  # panel-promql's
    return [n for n in promql_tree.names_read(expr) if n not in known]


def run(d: Dashboard):
    known = d.board.options.known
    for p in d.data_panels:
        for t in d.targets(p):
            for name in unknown(t["expr"], known):
                yield d.hit(f"query {t.get('refId', '?')} reads {name}: no rule records it and no catalog metric has "
                            "that name", p)
    for a in (d.data.get("annotations") or {}).get("list", []) or []:
        if isinstance(a, dict) and isinstance(a.get("expr"), str):
            for name in unknown(a["expr"], known):
                yield d.hit(f"annotation {a.get('name')!r} reads {name}: no rule records it and no catalog metric has "
                            "that name", key=r'"annotations":')


CHECK = Check("panel-series", "error", True, "a panel or annotation reads a series no rule records and no catalog "
              "metric names", DASHBOARD, run)
