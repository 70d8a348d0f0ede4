"""panel-unit: grafana/dashboard-linter's panel-units-rule. Every panel's unit (its default and every
override's) is one of Grafana's unit ids (rulesgen/model/grafana_units.py, from Grafana's categories.ts):
Grafana draws an id it does not know as a bare suffix ("1410 rotmhz")."""
from ..model import grafana_units
from .base import DASHBOARD, Check
from .dashboard_view import Dashboard


def units(panel: dict) -> list:
    field = panel.get("fieldConfig") or {}
    found = [(field.get("defaults") or {}).get("unit")]
    found += [prop.get("value") for o in field.get("overrides", []) or [] for prop in o.get("properties", []) or []
              if prop.get("id") == "unit"]
    return found


def run(d: Dashboard):
    for p in d.data_panels:
        bad = [u for u in units(p) if u not in grafana_units.UNIT_IDS and u is not None]
        if (p.get("fieldConfig") or {}).get("defaults", {}).get("unit") is None:
            yield d.hit("has no unit", p)
        for unit in bad:
            yield d.hit(f"unit {unit!r} is not a Grafana unit id (Grafana's categories.ts)", p)


CHECK = Check("panel-unit", "error", False, "a panel without a unit, or with one that is not a Grafana unit id "
              "(dashboard-linter panel-units-rule)", DASHBOARD, run)
