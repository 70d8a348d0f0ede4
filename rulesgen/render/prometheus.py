"""RuleFile -> Prometheus rule file text (plain `groups:` format, loadable by promtool and vmalert)."""
from __future__ import annotations

from ..durations import format_duration
from ..model.output import Rule, RuleFile
from .yamltext import dump, header


def rule_dict(rule: Rule) -> dict:
    out: dict = {}
    if rule.record:
        out["record"] = rule.record
    else:
        out["alert"] = rule.alert
    out["expr"] = rule.expr
    if rule.alert:
        out["for"] = format_duration(rule.for_seconds)
        if rule.keep_firing_for_seconds:
            out["keep_firing_for"] = format_duration(rule.keep_firing_for_seconds)
    if rule.labels:
        out["labels"] = dict(rule.labels)
    if rule.annotations:
        out["annotations"] = dict(rule.annotations)
    return out


def groups_dict(rule_file: RuleFile, delay_field: str | None = None) -> dict:
    """delay_field: the name the reading engine gives a group's query delay (query_offset for Prometheus
    >= 2.53, eval_delay for vmalert); None for plain rule files, read by every engine (no delay written)."""
    groups = []
    for g in rule_file.groups:
        group: dict = {"name": g.name}
        if g.interval_seconds:
            group["interval"] = format_duration(g.interval_seconds)
        if delay_field and g.query_delay_seconds:
            group[delay_field] = format_duration(g.query_delay_seconds)
        group["rules"] = [rule_dict(r) for r in g.rules]
        groups.append(group)
    return {"groups": groups}


def render_rule_file(rule_file: RuleFile) -> str:
    return header([rule_file.description]) + dump(groups_dict(rule_file))
