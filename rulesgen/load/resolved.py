"""The catalog as one configuration renders it, resolved once: per failure mode its thresholds with the
user's overrides, its severities after the user's remapping, its `for`, whether it renders (or why not)
and its place in its group (its dashboard panel). plan() builds it; builders and renderers read it
instead of applying rulesgen.yaml themselves."""
from __future__ import annotations

from dataclasses import dataclass

from ..durations import format_duration
from ..errors import Collector
from ..model import kube_state
from ..model.catalog import AlertSpec, Catalog, FailureMode
from . import jobmetrics
from .mapping import did_you_mean
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


def check_against_catalog(settings: Settings, catalog) -> None:
    """Config names failure modes and thresholds: they must exist in the catalog."""

    errors = Collector()
    ids = [fm.id for fm in catalog.failure_modes]
    for fm_id, (where, thresholds) in settings.where_of_mode:
        if fm_id not in ids:
            errors.add(where, "unknown-failure-mode", f"failure_modes: unknown failure mode {fm_id!r}{did_you_mean(fm_id, ids)}")
            continue
        fm = catalog.failure_mode(fm_id)
        names = [t.name for t in fm.thresholds]
        values = dict(settings.for_mode(fm_id).thresholds)
        for name in thresholds:
            if name not in names:
                errors.add(thresholds.key_where[name], "unknown-threshold",
                           f"failure_modes.{fm_id}.thresholds: unknown threshold {name!r}{did_you_mean(name, names)}"
                           f" (known: {', '.join(names) or 'none'})")
            elif name in values and values[name] not in fm.threshold(name).range:
                t = fm.threshold(name)
                errors.add(thresholds.key_where[name], "out-of-range",
                           f"failure_modes.{fm_id}.thresholds.{name}: {values[name]:g} is out of range {t.range} "
                           f"({t.unit}; catalog value {t.value:g})")
        hold = settings.for_mode(fm_id).for_seconds
        if hold == 0 and all(a.for_seconds > 0 for a in fm.alerts):
            errors.add(settings.where(f"failure_modes.{fm_id}.for"), "out-of-range",
                       f"failure_modes.{fm_id}.for: 0s is out of range (0s, inf): {fm_id} needs a hold "
                       f"(catalog: {', '.join(sorted({format_duration(a.for_seconds) for a in fm.alerts}))}), "
                       "or one bad sample pages someone")
    _check_hold_outlasts_detection(settings, catalog, errors)
    _check_slos(settings, catalog, errors)
    errors.raise_if_any()


def _check_hold_outlasts_detection(settings: Settings, catalog, errors: Collector) -> None:
    """A GPU dark for less than gpu_lost's stale_seconds is not gpu_lost yet: its other alerts must hold
    over that time (keep_firing_for), or they resolve before gpu_lost holds them (catalog/alertmanager.yaml
    silences, detected_within), and page again when it comes back."""
    for silence in catalog.routing.silences:
        if not silence.detected_within or settings.for_mode(silence.failure_mode).enabled is False:
            continue
        name = silence.detected_within
        dark = dict(settings.for_mode(silence.failure_mode).thresholds).get(
            name, catalog.failure_mode(silence.failure_mode).threshold(name).value)
        needed = int(dark) + 2 * settings.evaluation_interval
        if settings.keep_firing_for < needed:
            errors.add(settings.where("keep_firing_for"), "out-of-range",
                       f"keep_firing_for {format_duration(settings.keep_firing_for)} is shorter than "
                       f"{silence.failure_mode}'s {name} ({format_duration(int(dark))}) plus two evaluation intervals "
                       f"({format_duration(needed)}): a lost GPU's other alerts would resolve before {silence.failure_mode} "
                       "holds them, then page again")


def slo_group_labels(spec, settings: Settings) -> tuple[str, ...]:
    """The labels an SLO may be grouped by: a GPU's inventory labels, a training job's (cluster, namespace,
    workload), or a Kubernetes Job's (cluster, its namespace as kube-state-metrics names it)."""
    if spec.scope == "job":
        return (settings.cluster_label, settings.namespace_label, "workload")
    if spec.scope == "kube_job":
        return (settings.cluster_label, kube_state.NAMESPACE)
    return tuple(settings.gpu_labels)


def _check_slos(settings: Settings, catalog, errors: Collector) -> None:
    """`slos:` names SLOs and burn tiers of catalog/slos.yaml; a grouping keeps the cluster label (the SLO's
    counts are per cluster at least: a ruler over several clusters must not add them up unasked)."""
    ids = [s.id for s in catalog.slos]
    tiers = [t.name for t in catalog.burn_tiers]
    for user in settings.slos:
        if user.id not in ids:
            errors.add(user.where, "unknown-slo", f"slos: unknown SLO {user.id!r}{did_you_mean(user.id, ids)}"
                       f" (catalog/slos.yaml has: {', '.join(ids) or 'none'})")
            continue
        for name, _ in user.tiers:
            if name not in tiers:
                errors.add(user.tiers_where, "unknown-tier", f"slos.{user.id}.tiers: unknown burn tier {name!r}"
                           f"{did_you_mean(name, tiers)} (known: {', '.join(tiers)})")
        if user.group_by is not None and settings.cluster_label not in user.group_by:
            errors.add(user.where, "bad-value", f"slos.{user.id}.group_by must keep {settings.cluster_label!r}, the "
                       "cluster label: the counts of different clusters are not added up")
        spec = next(s for s in catalog.slos if s.id == user.id)
        allowed = slo_group_labels(spec, settings)
        unknown = [label for label in user.group_by or () if label not in allowed]
        if unknown:
            errors.add(user.where, "bad-value", f"slos.{user.id}.group_by: {', '.join(unknown)} is not a label of what "
                       f"the SLO counts (a {dict(job='job', kube_job='Kubernetes Job').get(spec.scope, 'GPU')}: {', '.join(allowed)})")
        if spec.scope == "job" and not settings.job_metrics.enabled:
            errors.add(user.where, "bad-value", f"slos.{user.id} counts training jobs from their own metrics, which "
                       "job_metrics.enabled: false turns off")
