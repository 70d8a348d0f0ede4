"""Dashboards -> deterministic Grafana JSON (sort_keys, indent 2, trailing newline), and the Grafana
file-provisioning provider YAML.

grafanalib 0.7 writes a dashboard model older than the one Grafana's published schema describes
(tools/grafana-schema/README.md lists the differences); `grafana_json` removes that legacy: null
values, keys Grafana dropped (rows, style, span, ...), and target keys of other datasources.
"""
from __future__ import annotations

import json

from grafanalib._gen import DashboardEncoder

from ..model.conventions import folder_uid
from ..model.output import (
    DASHBOARD_GENERATED_NOTE, DASHBOARD_GENERATED_TAG, DASHBOARD_SCHEMA_VERSION, Artifact, DashboardFile)
from .yamltext import dump, header

PROVIDER_PATH = "dashboards/provider.yaml"
LEGACY_ROOT = ("rows", "style", "hideControls", "sharedCrosshair", "__inputs")
LEGACY_PANEL = ("editable", "error", "span", "height", "minSpan")
LEGACY_TABLE = ("color", "columns", "fontSize", "mappings")  # grafanalib's Table writes these at panel level
LEGACY_TARGET = ("query", "target", "metric", "step", "intervalFactor", "hide", "interval")
ROW_KEYS = ("collapsed", "datasource", "gridPos", "id", "panels", "repeat", "title", "type")  # all a row has
LEGACY_VARIABLE = ("useTags", "tagsQuery", "tagValuesQuery", "auto", "auto_min", "auto_count")


def _drop_nulls(value):
    """Drop null-valued keys, except a threshold step's `value` (null is -Infinity there)."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None or (k == "value" and "color" in value)}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _clean_panel(panel: dict) -> dict:
    if panel.get("type") == "row":
        panel = {k: v for k, v in panel.items() if k in ROW_KEYS}
        panel["panels"] = [_clean_panel(p) for p in panel.get("panels", [])]
        return panel
    for key in LEGACY_PANEL + (LEGACY_TABLE if panel.get("type") == "table" else ()):
        panel.pop(key, None)
    for t in panel.get("targets", []):
        for key in LEGACY_TARGET:
            t.pop(key, None)
    return panel


def _clean_variable(variable: dict) -> dict:
    for key in LEGACY_VARIABLE:
        variable.pop(key, None)
    current = variable.get("current") or {}
    current.pop("tags", None)
    variable["current"] = current if current.get("text") is not None else {}
    return variable


def dashboard_dict(d: DashboardFile) -> dict:
    """The dashboard as Grafana's current schema describes it (schemaVersion DASHBOARD_SCHEMA_VERSION)."""
    data = json.loads(json.dumps(d.dashboard.to_json_data(), cls=DashboardEncoder))
    for key in LEGACY_ROOT:
        data.pop(key, None)
    data["panels"] = [_clean_panel(p) for p in data["panels"]]
    data["templating"]["list"] = [_clean_variable(v) for v in data["templating"]["list"]]
    data = _drop_nulls(data)
    data.update(id=None, schemaVersion=DASHBOARD_SCHEMA_VERSION)
    return data


def render_json(data: dict) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def dashboard_artifacts(dashboards: list[DashboardFile]) -> list[Artifact]:
    return [Artifact(d.path, render_json(dashboard_dict(d))) for d in dashboards]


def is_generated_dashboard(text: str) -> bool:
    """JSON has no comments: a generated dashboard is recognised by its tag and description."""
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return (isinstance(data, dict) and DASHBOARD_GENERATED_TAG in data.get("tags", [])
            and DASHBOARD_GENERATED_NOTE in str(data.get("description", "")))


def provider_artifact(folder: str, provisioning_path: str) -> Artifact:
    """Grafana file provisioning: copy dashboards/*.json to provisioning_path and this file to
    /etc/grafana/provisioning/dashboards/."""
    doc = {"apiVersion": 1, "providers": [{
        "name": "rulesgen", "orgId": 1, "type": "file", "folder": folder, "folderUid": folder_uid(folder),
        "disableDeletion": False, "allowUiUpdates": False, "updateIntervalSeconds": 60,
        "options": {"path": provisioning_path, "foldersFromFilesStructure": False}}]}
    lines = ["Grafana dashboard provider (file provisioning): put this file in /etc/grafana/provisioning/dashboards/",
             f"and dashboards/*.json in {provisioning_path} (dashboards.provisioning_path in rulesgen.yaml)."]
    return Artifact(PROVIDER_PATH, header(lines) + dump(doc))
