"""Every check, in the order `rulesgen lint`'s docs list them: each module of this package declares
CHECK (or CHECKS, for a family sharing all its code); MODULES is the one list to extend."""
from __future__ import annotations

from . import (
    alert_for, alert_identity, alerts_reader_mixed, cluster_local, contract_annotation, contract_label, dashboard_datasource,
    dashboard_editable, dashboard_json, dashboard_link, dense_long_window, engine_field, fleet_per_pod, group_count,
    group_size, instant_slow_record, panel_counter, panel_datasource, panel_description, panel_promql,
    panel_rate_interval, panel_series, panel_targets, panel_title, panel_unit, promql_syntax, query_length, rate_window,
    raw_long_window, scope_identity, template_labels, tier_local, tier_mix, timestamp_skew, value_in_label,
    variable_query, variable_refresh, variable_unused, yaml_load)
from .base import Check

MODULES = (yaml_load, promql_syntax, rate_window, raw_long_window, dense_long_window, instant_slow_record, alert_for,
           value_in_label, contract_label, contract_annotation, fleet_per_pod, alert_identity, scope_identity, cluster_local,
           template_labels, group_size, group_count,
           alerts_reader_mixed, engine_field, query_length, tier_local, tier_mix, timestamp_skew,
           # Grafana dashboards (*.json): grafana/dashboard-linter's rules that apply, then rulesgen's own
           dashboard_json, dashboard_datasource, panel_datasource, panel_description, panel_unit, panel_targets,
           panel_promql, panel_rate_interval, panel_counter, variable_query, variable_refresh, dashboard_editable,
           panel_title, panel_series, dashboard_link, variable_unused)


def _declared(module) -> tuple[Check, ...]:
    return tuple(getattr(module, "CHECKS", None) or (module.CHECK,))


CHECKS: dict[str, Check] = {c.code: c for m in MODULES for c in _declared(m)}
# A diagnostic of the loader that no check declares (an unreadable file): reported as a warning.
UNLISTED = Check("?", "warning", False, "")


def check_of(code: str) -> Check:
    return CHECKS.get(code, UNLISTED)


def of_scope(scope: str) -> list[Check]:
    return [c for c in CHECKS.values() if c.scope == scope]
