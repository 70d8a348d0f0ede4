"""Fill the catalog's expression and annotation templates ([[ ]] placeholders).

Jinja2 runs sandboxed with StrictUndefined: a typo such as [[ t.trheshold ]] or [[ m.DCGM_FI_NOPE ]]
is an error naming the catalog line, never an empty string in a rule. A threshold renders as its placeholder
(model/thresholds.py): `render` keeps each threshold's place, and its `.filled()` is the text a rule writes.
"""
from __future__ import annotations

from ..durations import format_duration
from ..errors import Collector, Where
from ..load import jobmetrics, template_syntax
from ..load.mapping import did_you_mean
from ..load.resolved import ModeView, Resolved, resolve
from ..load.settings import Settings
from ..load.template_syntax import WindowRange
from ..model import conventions
from ..model.catalog import HEALTH_CLASSES, XID_CLASSES, Catalog
from ..model.thresholds import Marked, ThresholdValue, numeric
from ..promql import text as promql
from . import metric_selectors


def _length(window) -> str:
    """A macro's window argument as a PromQL duration: a named window ([[ rate("X", w.NAME) ]]) or a literal "5m"."""
    return window if isinstance(window, str) else format_duration(int(numeric(window)))


class _Lookup(dict):
    """A mapping whose missing keys raise a readable error (with did-you-mean)."""

    def __init__(self, what: str, items: dict):
        super().__init__(items)
        self.what = what

    def __getattr__(self, key):
        if key.startswith("__"):
            raise AttributeError(key)
        return self[key]

    def __missing__(self, key):
        raise KeyError(f"unknown {self.what} {key!r}{did_you_mean(key, list(self))}")


# dcgm-exporter labels NVLink-entity series (one per link) with gpu_uuid and model_name where GPU
# series say UUID and modelName (render_metrics.go, 4.4-4.8).
NVLINK_ENTITY_LABELS = (("UUID", "gpu_uuid"), ("modelName", "model_name"))


def base_context(catalog: Catalog, settings: Settings, resolved: Resolved | None = None) -> dict:
    resolved = resolved or resolve(catalog, settings)
    sel = settings.selector
    metrics = {n: m for m in catalog.metrics for n in m.names}

    def metric(name):
        if name not in metrics:
            raise KeyError(f"unknown metric {name!r}{did_you_mean(name, list(metrics))}")
        return metrics[name]

    def host(expr, name=None):
        """Input labels normalised: the host label, and on NVLink fields (which dcgm-exporter may
        send per link, as NVLink entities labelled gpu_uuid and model_name) UUID and modelName."""
        if name is not None and "_NVLINK_" in name:
            for target, source in NVLINK_ENTITY_LABELS:
                expr = promql.with_host(expr, target, (source,))
        return promql.with_host(expr, settings.host_label, settings.host_aliases)

    def matchers(extra=""):
        return sel + (", " + extra if extra else "")

    def series(name, extra=""):
        return host(metric_selectors.selector(metric(name), matchers(extra)), name)

    def series_matching(matchers):
        """Raw dcgm-exporter series by label matchers alone (e.g. every DCGM_FI_* name)."""
        return host(f"{{{matchers}, {sel}}}")

    def timestamp(name):
        """Sample timestamps of every name of a metric (timestamp() must wrap the selector itself:
        of any other expression it gives the evaluation time)."""
        return host(f"timestamp({metric_selectors.selector(metric(name), sel)})")

    def counter_fn(fn):
        """rate()/increase() over every name of a counter, in the metric's unit, dropping windows
        that hold a sentinel and series younger than the window (MetricsQL counts a new series'
        first value as an increase, so a pod change on a GPU with old errors would look like new
        errors; Prometheus does not, and the guard keeps both engines equal).

        Each name is its own term joined with `or`: a regex on __name__ inside rate() would yield
        duplicate series (the name is dropped) if an exporter sent both names at once."""
        def apply(name, window, extra=""):
            window = _length(window)
            m = metric(name)
            selected = matchers(extra)
            terms = []
            for n in m.names:
                scale = m.scale_of(n)
                limit = promql.format_number(m.valid_max)
                term = (f"({fn}({n}{{{selected}}}[{window}]) and max_over_time({n}{{{selected}}}[{window}]) < {limit}"
                        f" and {n}{{{selected}}} offset {window})")
                terms.append(term if scale == 1 else f"({term} * {promql.format_number(scale)})")
            return host(" or ".join(terms), name)
        return apply

    def born(name, window, label, extra=""):
        """Series of an event counter that appeared within `window` on a GPU that was reporting
        before it: dcgm-exporter creates DCGM_EXP_*_TOTAL series at the first event, so the birth is
        an event that increase() cannot see (a window holding one sample gives it nothing). Matching
        on the GPU and `label` only, a pod-label change (same count, new series) is not an event."""
        window = _length(window)
        on = promql.by((*settings.gpu_identity, label))
        now = series(name, extra)
        before = host(f"{metric_selectors.selector(metric(name), matchers(extra))} offset {window}", name)
        return (f"((({now} > 0) unless on ({on}) {before})"
                f" and on ({promql.by(settings.gpu_identity)}) ({catalog.named('reporting')} offset {window}))")

    # XID codes by class, and of the classes the catalog drains (xid.yaml drain:), for xid matchers.
    xid = {cls: catalog.xid_codes(cls) for cls in XID_CLASSES}
    xid["drain"] = catalog.xid_codes(*catalog.xid_drain)
    # A bitmask metric's bits by name (metrics.yaml bits:), for bit tests: floor(x / [[ bit.METRIC.NAME ]]) % 2.
    bits = {m.name: _Lookup(f"bit of {m.name} (metrics.yaml bits:)", {b.name: str(b.value) for b in m.bits})
            for m in catalog.metrics if m.bits}
    def bit_matcher(name, *bit_names):
        """A label matcher for bits of a bitmask metric by their names, in the label its `bits:` declare
        (metrics.yaml): bit_matcher("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "sw_thermal", "hw_thermal") ->
        clock_event=~"sw_thermal|hw_thermal"; one name: clock_event="hw_power_brake"."""
        m = metric(name)
        if not m.bits_label:
            raise KeyError(f"metric {name} declares no bits label (metrics.yaml bits: label)")
        for b in bit_names:
            bits[m.name][b]  # an unknown bit raises, with did-you-mean
        if len(bit_names) == 1:
            return f'{m.bits_label}="{bit_names[0]}"'
        return f'{m.bits_label}=~"{"|".join(bit_names)}"'

    # DCGM health error codes by class (catalog/dcgm_health.yaml), for health_error_code matchers.
    health = {cls: catalog.health.regex(cls) if catalog.health else "NONE" for cls in HEALTH_CLASSES}

    return {
        "sel": sel,
        "m": _Lookup("metric", {n: host(metric_selectors.selector(m, sel), n) for n, m in metrics.items()}),
        "v": _Lookup("metric", {n: host(metric_selectors.valid(m, sel), n) for n, m in metrics.items()}),
        "series": series,
        "timestamp": timestamp,
        "series_matching": series_matching,
        "no_host": ", ".join(f'{h}=""' for h in (settings.host_label, *settings.host_aliases)),
        "born": born,
        "rate": counter_fn("rate"),
        "increase": counter_fn("increase"),
        "gpu": promql.by(settings.gpu_labels),
        "gpu_id": promql.by(settings.gpu_identity),
        "node": promql.by(settings.node_labels),
        "model": promql.by(settings.model_labels),
        "fleet": settings.cluster_label,
        "job": promql.by((settings.cluster_label, settings.namespace_label, "workload")),
        "host": settings.host_label,
        "cluster": settings.cluster_label,
        "ns": settings.namespace_label,
        "pod": settings.pod_label,
        "workload_regex": settings.workload_regex.replace("\\", "\\\\").replace('"', '\\"'),
        "limit": _Lookup("gpu model limit", {k: conventions.limit_record(k) for k in catalog.limit_keys}),
        # A GPU's effective limit (its own DCGM report, else the table): one series per GPU, join `on ([[ gpu_id ]]) group_left ()`.
        "gpu_limit": _Lookup("limit a GPU reports itself (gpu_models.yaml own_limits)",
                             {o.key: conventions.gpu_limit_record(o.key) for o in catalog.own_limits}),
        "xid": _Lookup("XID class", xid),
        # signals.yaml `windows:` ([[ w.NAME ]]); a failure mode's own windows replace them (mode_context).
        "w": _Lookup("window of signals.yaml", {w.name: WindowRange(w.seconds) for w in catalog.signal_windows}),
        "bit": _Lookup("metric with bits (metrics.yaml bits:)", bits),
        "bit_matcher": bit_matcher,
        "health": _Lookup("DCGM health class", health),
        "jm": _Lookup("job-metrics helper", jobmetrics.context(settings)),
        "active": lambda fm_id: resolved.mode(fm_id).active,
        # The DCGM fields a failure mode is about (its `metrics:`), for modes that watch other modes' input.
        "fields_of": lambda fm_id: list(catalog.failure_mode(fm_id).metrics),
        # Every failure mode's thresholds (with rulesgen.yaml overrides), for expressions shared by modes.
        "thresholds": _Lookup("failure mode", {m.fm.id: _Lookup(f"threshold of {m.fm.id}", mode_thresholds(m))
                                               for m in resolved.modes}),
    }


def mode_thresholds(view: ModeView) -> dict[str, ThresholdValue]:
    """A failure mode's thresholds as templates read them: each renders as its placeholder (Marked.filled
    writes the value), so a rendering keeps which number is which threshold."""
    return {name: ThresholdValue(view.fm.id, name, float(value)) for name, value in view.values().items()}


def marked(text: str, context: dict) -> Marked:
    """Text rendered from `context` (a template, or code given its thresholds), each threshold at its place."""
    return Marked.of(text, [t for mode in context["thresholds"].values() for t in mode.values()])


def render(template: str, context: dict, where: Where, errors: Collector, what: str) -> Marked:
    """A catalog template rendered (once): Marked.filled is the text a rule writes."""
    return marked(template_syntax.render(template, context, where, errors, what), context)


def mode_context(base: dict, view: ModeView) -> dict:
    fm = view.fm
    return {**base, "t": base["thresholds"][fm.id],
            "w": _Lookup(f"window of {fm.id}", {w.name: WindowRange(w.seconds) for w in fm.windows})}
