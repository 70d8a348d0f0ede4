"""The catalog as one configuration renders it, resolved once: per failure mode its thresholds with the
user's overrides, its severities after the user's remapping, its `for`, whether it renders (or why not)
and its place in its group (its dashboard panel). plan() builds it; builders and renderers read it
instead of applying rulesgen.yaml themselves."""
from __future__ import annotations

from dataclasses import dataclass

from ..model.catalog import AlertSpec, Catalog, FailureMode
from . import jobmetrics
from .settings import Settings

SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class EffectiveThreshold:
    name: str
    value: float
    unit: str
    source: str
    from_config: bool  # overridden in rulesgen.yaml


@dataclass(frozen=True)
class ModeView:
    fm: FailureMode
    thresholds: tuple[EffectiveThreshold, ...]
    severity_map: tuple[tuple[str, str], ...]  # catalog severity -> the severity it fires with
    for_override: int | None
    inactive: str | None  # why it does not render, None when it does
    index_in_group: int  # its row and panel on its group's dashboard

    @property
    def active(self) -> bool:
        return self.inactive is None

    def values(self) -> dict[str, float]:
        return {t.name: t.value for t in self.thresholds}

    def severity(self, catalog_severity: str) -> str:
        return dict(self.severity_map).get(catalog_severity, catalog_severity)

    def severities(self) -> tuple[str, ...]:
        """The severities its alerts fire with, strongest first."""
        return tuple(sorted({self.severity(a.severity) for a in self.fm.alerts}, key=SEVERITY_RANK.__getitem__))

    def for_seconds(self, spec: AlertSpec) -> int:
        return self.for_override if self.for_override is not None else spec.for_seconds


@dataclass(frozen=True)
class Resolved:
    modes: tuple[ModeView, ...]

    def mode(self, fm_id: str) -> ModeView:
        for m in self.modes:
            if m.fm.id == fm_id:
                return m
        raise KeyError(fm_id)

    @property
    def inactive(self) -> tuple[tuple[str, str], ...]:
        return tuple((m.fm.id, m.inactive) for m in self.modes if m.inactive)


def resolve(catalog: Catalog, settings: Settings) -> Resolved:
    groups: dict[str, list[str]] = {}
    for fm in catalog.failure_modes:
        groups.setdefault(fm.group, []).append(fm.id)
    modes = []
    for fm in catalog.failure_modes:
        mine = settings.for_mode(fm.id)
        overrides = dict(mine.thresholds)
        thresholds = tuple(EffectiveThreshold(t.name, overrides.get(t.name, t.value), t.unit, t.source, t.name in overrides)
                           for t in fm.thresholds)
        modes.append(ModeView(fm, thresholds, mine.severity, mine.for_seconds, inactive_reason(fm, settings),
                              groups[fm.group].index(fm.id)))
    return Resolved(tuple(modes))


def inactive_reason(fm: FailureMode, settings: Settings) -> str | None:
    mode = settings.for_mode(fm.id)
    if mode.enabled is False:
        return "disabled in rulesgen.yaml"
    if fm.group in settings.disabled_groups and mode.enabled is not True:
        return f"group {fm.group} disabled in rulesgen.yaml"
    if fm.needs_profiling and not settings.profiling:
        return "needs DCGM profiling fields (profiling: false in rulesgen.yaml)"
    if fm.job_metrics and not settings.job_metrics.enabled:
        names = ", ".join(jobmetrics.input_names(settings, fm.job_metrics))
        return f"needs the training jobs' own metrics ({names}; job_metrics.enabled: false in rulesgen.yaml)"
    return None
