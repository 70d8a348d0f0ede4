"""One fault, one alert: who covers whom (catalog `covers`, and catalog/dcgm_health.yaml's failure_modes),
shared by the rule builder (covered alerts stay quiet) and the Alertmanager renderer (inhibit rules).

A covering alert never silences a more severe one: when a covering failure mode also alerts at a lower
severity than the covered alert, only its alerts at least as severe count (e.g. memory_remap's warning for a
pending remap does not silence DCGM's critical verdict on the same GPU; its critical one does)."""
from __future__ import annotations

from dataclasses import dataclass

from ..load.resolved import SEVERITY_RANK, ModeView, Resolved
from ..model.catalog import Catalog, FailureMode


@dataclass(frozen=True)
class Cover:
    """Failure modes (`sources`) whose pending or firing alerts on a GPU silence the alerts of `target` there
    whose `label` is `value` (all of them when label is "")."""
    target: str
    label: str
    value: str
    sources: tuple[str, ...]


def covering(fm: FailureMode, catalog: Catalog) -> list[Cover]:
    """What covers fm, grouped by the value covered ("" = all of fm's alerts), in catalog order."""
    by_value: dict[str, list[str]] = {}
    for m in catalog.failure_modes:
        for target, value in m.covers:
            if target == fm.id and m.id not in by_value.setdefault(value, []):
                by_value[value].append(m.id)
    return [Cover(fm.id, fm.cover_label if value else "", value, tuple(modes)) for value, modes in by_value.items()]


def strong_enough(source: ModeView, severity: str) -> tuple[str, ...] | None:
    """The severities of source's alerts that may silence an alert of `severity`: None when all of them
    may (no filter needed), () when none may."""
    own = source.severities()
    allowed = tuple(s for s in own if SEVERITY_RANK[s] <= SEVERITY_RANK[severity])
    return None if allowed == own else allowed


@dataclass(frozen=True)
class Inhibit:
    """One Alertmanager inhibit rule: source alerts (failure mode, optional severities) silence target
    alerts (failure mode, optional severity, optional label values) on the same GPU."""
    source: str
    source_severities: tuple[str, ...]
    target: str
    target_severity: str
    label: str
    values: tuple[str, ...]


def inhibits(catalog: Catalog, resolved: Resolved) -> list[Inhibit]:
    """The covers as Alertmanager inhibit rules, one per covering and covered failure mode (the covered
    label values joined in one regex), split by the covered alert's severity only where the covering
    mode also alerts less severely."""
    modes = {m.id: m for m in catalog.failure_modes}
    out = []
    for source in catalog.failure_modes:
        grouped: dict[tuple[str, str], list[str]] = {}
        for target, value in source.covers:
            if target not in modes:
                continue
            key = (target, modes[target].cover_label if value else "")
            values = grouped.setdefault(key, [])
            if value and value not in values:
                values.append(value)
        for (target, label), values in grouped.items():
            target_severities = resolved.mode(target).severities()
            if all(strong_enough(resolved.mode(source.id), s) is None for s in target_severities):
                out.append(Inhibit(source.id, (), target, "", label, tuple(values)))
                continue
            for s in target_severities:
                allowed = strong_enough(resolved.mode(source.id), s)
                if allowed is None or allowed:
                    out.append(Inhibit(source.id, allowed or (), target, s, label, tuple(values)))
    return out
