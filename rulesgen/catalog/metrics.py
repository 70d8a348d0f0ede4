"""metrics.yaml, signals.yaml, xid.yaml and gpu_models.yaml: the inputs the failure modes read."""
from __future__ import annotations

import re

from ..load import template_syntax
from ..load.mapping import Fields, did_you_mean
from ..load.yamlsource import where_in
from ..model.catalog import XID_CLASSES, Alias, GpuModel, Metric, OwnLimit, Signal, Window, Xid
from .common import LEVELS, METRIC_PREFIXES, RECORD_NAME, read_title, read_unit, top_list, unique
from .failure_modes import read_windows
from .policy import read_bits
from .roles import generated


def read_metrics(doc, errors):
    items, wheres = top_list(doc, "metrics", errors, "metrics.yaml", also=("roles",))
    out, seen = [], {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "metric", fallback=w)
        name = f.str("name", required=True, pattern=r"DCGM_[A-Z0-9_]+")
        unit = f.str("unit", required=True) or ""
        bits, bits_source, bits_label = read_bits(f, name or "?", unit)
        m = Metric(
            name=name or "?",
            field_id=f.num("field_id", integer=True, minimum=0),
            type=f.str("type", required=True, choices=("gauge", "counter", "label")) or "gauge",
            unit=unit,
            help=f.str("help", required=True) or "",
            profiling=bool(f.bool("profiling", required=True)),
            default_enabled=bool(f.bool("default_enabled", required=True)),
            aliases=_aliases(f, unit),
            valid_max=float(f.num("valid_max", default=9.0e18, minimum=1)),
            max_plausible=f.num("max_plausible", minimum=0),
            description=f.str("description", default="") or "",
            bits=bits,
            bits_source=bits_source,
            bits_label=bits_label,
            where=f.where,
        )
        f.done()
        for n in m.names:
            unique(f, "name", n, seen, f"metric name {n!r}")
        out.append(m)
    return out


def _aliases(f: Fields, unit: str) -> tuple[Alias, ...]:
    """`aliases:` items are a name (same unit) or {name, unit, scale, since, source}. An alias in
    another unit must say how to convert: a threshold in MHz applied to Hz would never fire."""
    items, wheres = f.list("aliases")
    out = []
    for item, w in zip(items, wheres):
        if isinstance(item, str):
            out.append(Alias(name=item, unit=unit))
            continue
        af = Fields(item, f.errors, f"{f.what} alias", fallback=w)
        name = af.str("name", required=True, pattern=r"DCGM_[A-Z0-9_]+")
        alias_unit = af.str("unit", default=unit) or unit
        scale = af.num("scale")
        since = af.str("since", default="") or ""
        source = af.str("source")
        if alias_unit != unit and scale is None:
            f.errors.add(af.where, "alias-scale-missing",
                         f"alias {name} is in {alias_unit!r}, the metric in {unit!r}: give `scale` (factor to {unit})")
        if scale is not None and scale <= 0:
            f.errors.add(af.at("scale"), "bad-value", f"alias {name}: scale must be positive, got {scale!r}")
        if scale is not None and scale != 1 and not source:
            f.errors.add(af.where, "missing-source", f"alias {name}: a unit change needs `source` (where it is documented)")
        af.done()
        if name:
            out.append(Alias(name=name, unit=alias_unit, scale=float(scale or 1.0), since=since))
    return tuple(out)


def read_signals(doc, errors, known_metrics):
    items, wheres = top_list(doc, "signals", errors, "signals.yaml", also=("roles", "windows"))
    out, seen = [], {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "signal", fallback=w)
        record = f.str("record", required=True) or "?"
        if record != "?" and not RECORD_NAME.match(record):
            errors.add(f.at("record"), "bad-name",
                       f"recording rule name {record!r} must follow level:metric:operations with level one of {', '.join(LEVELS)}")
        elif generated(record):
            errors.add(f.at("record"), "reserved-name",
                       f"signal {record}: rulesgen writes this record itself (rulesgen/model/conventions.py); choose another name")
        unique(f, "record", record, seen, f"signal {record!r}")
        expr = f.str("expr", required=True) or ""
        used = tuple(sorted(n for n in template_syntax.names_used(expr) if n.startswith(METRIC_PREFIXES)))
        for name in used:
            if name not in known_metrics:
                errors.add(f.at("expr"), "unknown-metric",
                           f"signal {record}: expression names unknown metric {name!r}{did_you_mean(name, known_metrics)}")
        out.append(Signal(record=record, expr=expr, unit=read_unit(f, f"signal {record}"),
                          description=f.str("description", required=True) or "", metrics=used, where=f.at("expr"),
                          body=f.body_at("expr"), title=read_title(f, f"signal {record}")))
        f.done()
    return out


def read_signal_windows(doc, errors, signals) -> tuple[Window, ...]:
    """signals.yaml `windows:`: the ranges, offsets and counter-macro windows the expressions read as
    [[ w.NAME ]], each with its source. A name no window declares is an error where the expression names it;
    a window no signal reads is an error on its line."""
    windows = read_windows(Fields(doc, errors, "signals.yaml"), "signals.yaml", errors)
    declared = [w.name for w in windows]
    used = set()
    for s in signals:
        for name in sorted(template_syntax.attributes_used(s.expr, "w")):
            used.add(name)
            if name not in declared:
                errors.add(where_in(s.where, s.body, s.expr, f"w.{name}"), "unknown-window",
                           f"signal {s.record}: unknown window {name!r}{did_you_mean(name, declared)} "
                           f"(signals.yaml windows: {', '.join(declared) or 'none'})")
    for w in windows:
        if w.name not in used:
            errors.add(w.where, "unused-window", f"signals.yaml: window {w.name!r} is read by no signal")
    return windows


def check_bits_used(signals, metrics, errors) -> None:
    """The bits the signals read ([[ bit.METRIC.NAME ]], bit_matcher("METRIC", "NAME", ...)) are bits of that
    metric's `bits:` table (metrics.yaml), and bit_matcher's metric names their label: a typo fails at load, on
    the line that names it. An unknown metric is read_signals' error."""
    by_name = {n: m for m in metrics for n in m.names}
    for s in signals:
        seen = set()
        for metric, bit, matcher in template_syntax.bits_used(s.expr):
            m = by_name.get(metric)
            if m is None or (metric, bit, matcher) in seen:
                continue
            seen.add((metric, bit, matcher))
            names = [b.name for b in m.bits]
            if not m.bits:
                errors.add(where_in(s.where, s.body, s.expr, metric), "unknown-bit",
                           f"signal {s.record}: metric {metric} has no `bits:` table (metrics.yaml)")
            elif bit not in names:
                errors.add(where_in(s.where, s.body, s.expr, bit), "unknown-bit",
                           f"signal {s.record}: {bit!r} is not a bit of {metric}{did_you_mean(bit, names)} "
                           f"(metrics.yaml bits: {', '.join(names)})")
            elif matcher and not m.bits_label:
                errors.add(where_in(s.where, s.body, s.expr, metric), "unknown-bit",
                           f"signal {s.record}: bit_matcher needs the label {metric}'s bits are named with "
                           f"(metrics.yaml bits: label)")


def read_xids(doc, errors):
    items, wheres = top_list(doc, "xids", errors, "xid.yaml", also=("drain",))
    out, seen = [], {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "xid", fallback=w)
        code = f.num("code", required=True, integer=True, minimum=1)
        unique(f, "code", code, seen, f"XID {code}")
        out.append(Xid(code=code or 0, name=f.str("name", required=True) or "",
                       dcgm_health=f.str("dcgm_health", default="none", choices=("fail", "warn", "none")) or "none",
                       xid_class=f.str("class", required=True, choices=XID_CLASSES) or "investigate",
                       source=f.str("source", required=True) or ""))
        f.done()
    return out


def _gpu_model(node, errors, where, keys, is_default):
    what = "gpu_models.default" if is_default else "gpu model"
    f = Fields(node, errors, what, fallback=where)
    model_id = "default" if is_default else (f.str("id", required=True, pattern=r"[a-z0-9_]+") or "?")
    name = f.str("name", required=True) or ""
    match = None if is_default else f.str("match", required=True)
    if match is not None:
        try:
            re.compile(match)
        except re.error as exc:
            errors.add(f.at("match"), "bad-regex", f"gpu model {model_id}: match {match!r} is not a valid regex: {exc}")
    source = f.str("source", required=True) or ""
    limits = []
    for key in (keys if keys is not None else [k for k in f.node if k not in ("id", "name", "match", "source")]):
        value = f.num(key, required=True)
        limits.append((key, float(value) if value is not None else 0.0))
    f.done()
    return GpuModel(id=model_id, name=name, match=match, limits=tuple(limits), source=source)


def read_gpu_models(doc, errors, known_metrics=None):
    top = Fields(doc, errors, "gpu_models.yaml")
    default = _gpu_model(top.mapping("default", required=True), errors, top.where, None, True)
    keys = [k for k, _ in default.limits]
    items, wheres = top.list("models", required=True)
    models, seen = [], {}
    for item, w in zip(items, wheres):
        model = _gpu_model(item, errors, w, keys, False)
        if model.id in seen:
            errors.add(w, "duplicate-id", f"gpu model {model.id!r} already defined on line {seen[model.id].line}")
        seen[model.id] = w
        models.append(model)
    own = _own_limits(top, errors, keys, known_metrics)
    top.done()
    return default, models, own


def _own_limits(top, errors, keys, known_metrics):
    """own_limits: the DCGM field through which each GPU reports a limit of the table itself."""
    items, wheres = top.list("own_limits")
    out, seen = [], {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "own limit", fallback=w)
        key = f.str("key", required=True, choices=tuple(keys)) or "?"
        unique(f, "key", key, seen, f"own limit {key}")
        metric = f.str("metric", required=True) or "?"
        if known_metrics is not None and metric not in known_metrics:
            errors.add(f.at("metric"), "unknown-metric",
                       f"own limit {key}: unknown metric {metric!r}{did_you_mean(metric, known_metrics)}")
        out.append(OwnLimit(key=key, metric=metric,
                            fallback=f.str("fallback", default="default", choices=("default", "model")) or "default",
                            source=f.str("source", required=True) or "", where=w))
        f.done()
    return out
