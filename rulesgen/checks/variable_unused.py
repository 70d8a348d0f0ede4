"""variable-unused: every variable a dashboard declares is read by some panel's query, and every variable a query,
variable or link reads is declared (or is Grafana's own, $__...): an unused one is a filter that filters nothing,
an undeclared one a literal "$name" that matches nothing."""
from .base import DASHBOARD, Check
from .dashboard_view import VARIABLE_REF, Dashboard


def refs(text: str) -> set[str]:
    return {v for v in VARIABLE_REF.findall(text) if not v.startswith("__")}


def run(d: Dashboard):
    declared = set(d.variable_names)
    used = {v for p in d.data_panels for t in d.targets(p) for v in refs(t["expr"])}
    for v in d.variables:
        if v.get("type") != "datasource" and v.get("name") not in used:
            yield d.variable_hit(v, "no panel's query reads it")
    for p in d.data_panels:
        read = {v for t in d.targets(p) for v in refs(t["expr"])} | {v for x in d.links(p) for v in refs(str(x.get("url", "")))}
        for name in sorted(read - declared):
            yield d.hit(f"reads ${name}, which the dashboard does not declare", p)
    for v in d.variables:
        for name in sorted(refs(str(v.get("query", ""))) - declared):
            yield d.variable_hit(v, f"reads ${name}, which the dashboard does not declare")


CHECK = Check("variable-unused", "error", False, "a variable no panel reads, or a variable read that the dashboard "
              "does not declare", DASHBOARD, run)
