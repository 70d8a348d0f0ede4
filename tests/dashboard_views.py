"""What the dashboard tests read: the bundled catalog's plan (rendered once per session), its dashboards as
Grafana JSON, and walks over their panels, queries and links. Helpers only: no test here."""
from __future__ import annotations

import functools
import json
import re
import subprocess

import yaml

from conftest import ROOT
from rulesgen.artifacts import plan
from rulesgen.catalog import bundled_catalog_dir

DASHBOARD_IDS = ("gpu-executive", "gpu-on-call", "gpu-fleet-overview", "gpu-health", "gpu-performance", "gpu-baselines",
                 "gpu-jobs")
AUDIENCE_IDS = ("gpu-executive", "gpu-on-call")  # chapters only, no failure-mode rows


@functools.lru_cache(maxsize=1)
def bundled_plan():
    """The bundled catalog with the repository's rulesgen.yaml, as `rulesgen render` plans it."""
    return plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)


def dashboards_of(p) -> dict[str, dict]:
    """path -> dashboard JSON of a plan's dashboards."""
    return {a.path: json.loads(a.text) for a in p.artifacts if a.path.startswith("dashboards/") and a.path.endswith(".json")}


def all_panels(dashboard):
    """Every panel, rows and the panels nested in collapsed rows included."""
    for p in dashboard.get("panels", []):
        yield p
        yield from p.get("panels", [])


def data_panels(dashboard):
    return [p for p in all_panels(dashboard) if p.get("type") != "row"]


def units(panel) -> list[str]:
    """The units a panel draws with: its default and every override's."""
    field = panel.get("fieldConfig", {})
    found = [field.get("defaults", {}).get("unit")]
    found += [prop["value"] for o in field.get("overrides", []) for prop in o.get("properties", []) if prop.get("id") == "unit"]
    return [u for u in found if u is not None]


def one_line(text: str) -> str:
    return " ".join(text.split())


def variable_names(dashboard) -> list[str]:
    return [v["name"] for v in dashboard.get("templating", {}).get("list", [])]


def referenced_variables(text: str) -> set[str]:
    """$name, ${name} and ${name:format} in a query or URL; Grafana's own ($__rate_interval) left out."""
    return {m for m in re.findall(r"\$\{?([A-Za-z_]\w*)", text) if not m.startswith("__")}


def assert_vmalert_tool_answers(vmalert_tool, tmp_path, expr: str, series: list[dict], expected: list[dict],
                                eval_time: str = "5m") -> None:
    """vmalert-tool (MetricsQL) gives `expected` for a panel query over `series` at eval_time. It needs a rule file,
    so it gets one that records nothing the query reads."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "none", "rules": [
        {"record": "unused:vector:one", "expr": "vector(1)"}]}]}))
    (tmp_path / "firing.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series,
                   "metricsql_expr_test": [{"expr": expr, "eval_time": eval_time, "exp_samples": expected}]}]}))
    proc = subprocess.run([vmalert_tool, "unittest", "--files", "firing.yaml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
