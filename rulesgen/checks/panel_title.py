"""panel-title: a panel or row title is a few words (rulesgen/model/words.py): never PromQL (braces, matchers,
ranges, calls, grouping clauses, series names) and at most 80 characters. rulesgen's come from the catalog."""
from ..model.words import title_problem
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard


def run(d: Dashboard):
    for p in d.panels:
        problem = title_problem(str(p.get("title") or ""))
        if problem:
            yield d.hit(f"title {problem}", p)


CHECK = Check("panel-title", "warning", False, "a panel or row title that reads like PromQL or is over 80 characters",
              DASHBOARD, run)
