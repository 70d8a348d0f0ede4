"""Load catalog/*.yaml into a validated, frozen Catalog (all errors reported at once)."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from .builders import templates
from .errors import Collector, RulesgenError
from .fields import Fields, did_you_mean
from .jobmetrics import INPUTS
from .model import (ACTIONS, BASELINE_DIRECTIONS, GROUPS, HEALTH_CLASSES, RECEIVERS, SCOPES, SEVERITIES, SILENCE_SCOPES,
                    XID_CLASSES, AlertSpec, BaselineSignal, Catalog, FailureMode, Alias, GpuModel, HealthCode, HealthTable,
                    Metric, Routing, Runbook, SeverityRoute, Signal, Silence, Threshold, Xid)
from .yamlsource import load_file

CATALOG_FILES = ("metrics.yaml", "signals.yaml", "failure_modes.yaml", "xid.yaml", "gpu_models.yaml")
OPTIONAL_FILES = ("baselines.yaml",  # a catalog without it renders no baseline rules
                  "dcgm_health.yaml",  # without it DCGM's health verdict has no code classes and covers nothing
                  "alertmanager.yaml")  # without it: Alertmanager's default timings, no silences
RECORD_NAME = re.compile(r"^(gpu|node|job|fleet|model|rank):[a-z0-9_]+:[a-z0-9_]+$")
LEVELS = ("gpu", "node", "job", "fleet", "model", "rank")  # rank: one series per rank of a training job
METRIC_PREFIXES = ("DCGM_FI_", "DCGM_EXP_")  # dcgm-exporter's series names


def bundled_catalog_dir() -> Path:
    """The catalog shipped with rulesgen. Its one source is the repository's top-level catalog/ (a
    checkout or the editable install); the wheel carries it as package data, rulesgen/_catalog."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "_catalog", package.parent / "catalog"):
        if (candidate / "failure_modes.yaml").is_file():
            return candidate
    return package / "_catalog"


def load_catalog(directory: Path) -> Catalog:
    errors = Collector()
    docs = {}
    problems = []
    for name in CATALOG_FILES + tuple(n for n in OPTIONAL_FILES if (directory / n).exists()):
        try:
            docs[name] = load_file(directory / name, str(directory / name), collect=errors.items)
        except RulesgenError as exc:
            problems.extend(exc.diagnostics)
    if problems:  # a file that does not parse leaves nothing to cross-check
        raise RulesgenError(problems + errors.items)

    metrics = _metrics(docs["metrics.yaml"], errors)
    known_metrics = {n for m in metrics for n in m.names}
    signals = _signals(docs["signals.yaml"], errors, known_metrics)
    xids = _xids(docs["xid.yaml"], errors)
    default, models = _gpu_models(docs["gpu_models.yaml"], errors)
    modes = _failure_modes(docs["failure_modes.yaml"], errors, known_metrics, {n for m in metrics if m.profiling for n in m.names})
    baselines = _baselines(docs["baselines.yaml"], errors, known_metrics) if "baselines.yaml" in docs else []
    health = _health(docs["dcgm_health.yaml"], errors) if "dcgm_health.yaml" in docs else None
    if health is not None:
        modes = _with_health_covers(modes, health, errors)
    _check_covers(modes, baselines, health, errors)
    routing = _routing(docs["alertmanager.yaml"], errors, [m.id for m in modes]) if "alertmanager.yaml" in docs else Routing()
    errors.raise_if_any()
    return Catalog(metrics=tuple(metrics), signals=tuple(signals), failure_modes=tuple(modes), xids=tuple(xids),
                   gpu_default=default, gpu_models=tuple(models), baselines=tuple(baselines), health=health,
                   routing=routing)


def _routing(doc, errors, mode_ids: list[str]) -> Routing:
    """catalog/alertmanager.yaml: route timings, a receiver per severity, and the silencing failure modes."""
    top = Fields(doc, errors, "alertmanager.yaml")
    route = Fields(top.mapping("route", required=True), errors, "alertmanager.yaml route", fallback=top.at("route"))
    timings = {}
    for key in ("group_wait", "group_interval", "repeat_interval"):
        tf = Fields(route.mapping(key, required=True), errors, f"route {key}", fallback=route.at(key))
        timings[key] = tf.duration("value", required=True) or getattr(Routing(), key)
        tf.str("source", required=True)
        tf.done()
    route.done()
    severities = []
    items, wheres = top.list("severities", required=True)
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "severity route", fallback=w)
        severities.append(SeverityRoute(
            severity=f.str("severity", required=True, choices=SEVERITIES) or "info",
            receiver=f.str("receiver", required=True, choices=RECEIVERS) or "none",
            repeat_interval=f.duration("repeat_interval"), source=f.str("source", required=True) or ""))
        f.done()
    missing = sorted(set(SEVERITIES) - {r.severity for r in severities})
    if missing:
        errors.add(top.at("severities"), "missing-key", f"alertmanager.yaml: no route for severity {', '.join(missing)}")
    silences = []
    items, wheres = top.list("silences")
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "silence", fallback=w)
        mode = f.str("failure_mode", required=True) or "?"
        if mode != "?" and mode not in mode_ids:
            errors.add(f.at("failure_mode"), "unknown-failure-mode",
                       f"alertmanager.yaml: silence names failure mode {mode!r}: not in failure_modes.yaml{did_you_mean(mode, mode_ids)}")
        silences.append(Silence(failure_mode=mode, scope=f.str("scope", required=True, choices=SILENCE_SCOPES) or "gpu",
                                source=f.str("source", required=True) or "", where=f.at("failure_mode")))
        f.done()
    top.done()
    return Routing(severities=tuple(severities), silences=tuple(silences), **timings)


def _top_list(doc, key, errors, what):
    top = Fields(doc, errors, what)
    items, wheres = top.list(key, required=True)
    top.done()
    return items, wheres


def _metrics(doc, errors):
    items, wheres = _top_list(doc, "metrics", errors, "metrics.yaml")
    out, seen = [], {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "metric", fallback=w)
        name = f.str("name", required=True, pattern=r"DCGM_[A-Z0-9_]+")
        unit = f.str("unit", required=True) or ""
        m = Metric(
            name=name or "?",
            field_id=f.num("field_id", integer=True, minimum=0),
            type=f.str("type", required=True, choices=("gauge", "counter", "label")) or "gauge",
            unit=unit,
            help=f.str("help", required=True) or "",
            profiling=bool(f.bool("profiling", required=True)),
            default_enabled=bool(f.bool("default_enabled", required=True)),
            aliases=_aliases(f, unit),
            exporter_1x_name=f.str("exporter_1x_name"),
            valid_max=float(f.num("valid_max", default=9.0e18, minimum=1)),
            max_plausible=f.num("max_plausible", minimum=0),
            description=f.str("description", default="") or "",
            where=f.where,
        )
        # Accepted for catalogs that still carry it; nothing reads it (panels take the signal's unit).
        f.str("grafana_unit")
        f.done()
        for n in m.names:
            if n in seen:
                errors.add(f.at("name"), "duplicate-id", f"metric name {n!r} already defined on line {seen[n].line}")
            else:
                seen[n] = f.at("name")
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


def _check_covers(modes, baselines, health, errors) -> None:
    """`covers` names failure modes (and baseline signals, or DCGM health codes) that exist, and no mode
    covers itself."""
    ids = [m.id for m in modes]
    signals = [b.signal for b in baselines]
    codes = [n for c in health.codes for n in c.names] if health is not None else []
    for m in modes:
        for target, signal in m.covers:
            if target not in ids or target == m.id:
                errors.add(m.where, "unknown-failure-mode",
                           f"failure mode {m.id} covers {target!r}: not another failure mode{did_you_mean(target, ids)}")
            if signal and health is not None and target == health.failure_mode:
                if signal not in codes:
                    errors.add(m.where, "unknown-signal",
                               f"failure mode {m.id} covers DCGM health code {signal!r}: not in dcgm_health.yaml{did_you_mean(signal, codes)}")
            elif signal and signal not in signals:
                errors.add(m.where, "unknown-signal",
                           f"failure mode {m.id} covers signal {signal!r}: not in baselines.yaml{did_you_mean(signal, signals)}")


def _health(doc, errors) -> HealthTable:
    """catalog/dcgm_health.yaml: DCGM health error codes, their class and the failure modes that see them."""
    top = Fields(doc, errors, "dcgm_health.yaml")
    mode = top.str("failure_mode", required=True, pattern=r"[a-z][a-z0-9_]*") or "?"
    label = top.str("label", required=True, pattern=r"[a-zA-Z_][a-zA-Z0-9_]*") or "health_error_code"
    watches = []
    w_items, w_wheres = top.list("watches", required=True)
    for item, w in zip(w_items, w_wheres):
        wf = Fields(item, errors, "health watch", fallback=w)
        watches.append((wf.str("name", required=True) or "?", wf.str("meaning", required=True) or ""))
        wf.done()
    codes, seen = [], {}
    items, wheres = top.list("codes", required=True)
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "health code", fallback=w)
        code = f.str("code", required=True, pattern=r"DCGM_FR_[A-Z0-9_]+") or "?"
        aliases = tuple(f.str_list("aliases"))
        for name in (code, *aliases):
            if name in seen:
                errors.add(f.at("code"), "duplicate-id", f"DCGM health code {name} already defined on line {seen[name].line}")
            seen[name] = f.at("code")
        codes.append(HealthCode(
            code=code, number=int(f.num("number", required=True, integer=True, minimum=0) or 0), aliases=aliases,
            dcgm_severity=f.str("dcgm_severity", required=True) or "", category=f.str("category", required=True) or "",
            nvsentinel_action=f.str("nvsentinel_action"), next_step=f.str("next_step"),
            health_class=f.str("class", required=True, choices=HEALTH_CLASSES) or "investigate",
            failure_modes=tuple(f.str_list("failure_modes")), source=f.str("source", required=True) or "",
            where=f.at("failure_modes") if f.has("failure_modes") else f.where))
        f.done()
    where = top.at("failure_mode")
    top.done()
    return HealthTable(failure_mode=mode, label=label, watches=tuple(watches), codes=tuple(codes), where=where)


def _with_health_covers(modes, health: HealthTable, errors) -> list:
    """The health table says which failure modes see the fault behind each DCGM code: each of them covers
    DCGM's verdict with that code (the covers mechanism, matched on the table's label). The mode that
    alerts on the verdict matches covers on that label."""
    ids = [m.id for m in modes]
    if health.failure_mode not in ids:
        errors.add(health.where, "unknown-failure-mode",
                   f"dcgm_health.yaml: failure_mode {health.failure_mode!r} is not a failure mode{did_you_mean(health.failure_mode, ids)}")
    extra: dict[str, list[tuple[str, str]]] = {}
    for c in health.codes:
        for fm in c.failure_modes:
            if fm not in ids or fm == health.failure_mode:
                errors.add(c.where, "unknown-failure-mode",
                           f"dcgm_health.yaml: code {c.code} names failure mode {fm!r}: not another failure mode{did_you_mean(fm, ids)}")
                continue
            extra.setdefault(fm, []).extend((health.failure_mode, n) for n in c.names)
    out = []
    for m in modes:
        if m.id in extra:
            m = replace(m, covers=m.covers + tuple(extra[m.id]))
        if m.id == health.failure_mode:
            m = replace(m, cover_label=health.label)
        out.append(m)
    return out


def _signals(doc, errors, known_metrics):
    items, wheres = _top_list(doc, "signals", errors, "signals.yaml")
    out, seen = [], {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "signal", fallback=w)
        record = f.str("record", required=True) or "?"
        if record != "?" and not RECORD_NAME.match(record):
            errors.add(f.at("record"), "bad-name",
                       f"recording rule name {record!r} must follow level:metric:operations with level one of {', '.join(LEVELS)}")
        if record in seen:
            errors.add(f.at("record"), "duplicate-id", f"signal {record!r} already defined on line {seen[record].line}")
        seen[record] = f.at("record")
        expr = f.str("expr", required=True) or ""
        used = tuple(sorted(n for n in templates.names_used(expr) if n.startswith(METRIC_PREFIXES)))
        for name in used:
            if name not in known_metrics:
                errors.add(f.at("expr"), "unknown-metric",
                           f"signal {record}: expression names unknown metric {name!r}{did_you_mean(name, known_metrics)}")
        out.append(Signal(record=record, expr=expr, unit=f.str("unit", required=True) or "short",
                          description=f.str("description", required=True) or "", metrics=used, where=f.at("expr")))
        f.done()
    return out


def _xids(doc, errors):
    items, wheres = _top_list(doc, "xids", errors, "xid.yaml")
    out, seen = [], {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "xid", fallback=w)
        code = f.num("code", required=True, integer=True, minimum=1)
        if code in seen:
            errors.add(f.at("code"), "duplicate-id", f"XID {code} already defined on line {seen[code].line}")
        seen[code] = f.at("code")
        out.append(Xid(code=code or 0, name=f.str("name", required=True) or "", mnemonic=f.str("mnemonic"),
                       nvidia_action=f.str("nvidia_action"),
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


def _gpu_models(doc, errors):
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
    top.done()
    return default, models


def _failure_modes(doc, errors, known_metrics, profiling_metrics):
    items, wheres = _top_list(doc, "failure_modes", errors, "failure_modes.yaml")
    out, seen = [], {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "failure mode", fallback=w)
        fm_id = f.str("id", required=True, pattern=r"[a-z][a-z0-9_]*") or "?"
        if fm_id in seen:
            errors.add(f.at("id"), "duplicate-id", f"failure mode {fm_id!r} already defined on line {seen[fm_id].line}")
        seen[fm_id] = f.at("id")
        metric_items, metric_wheres = f.list("metrics", required=True)
        metrics = []
        for mi, mw in zip(metric_items, metric_wheres):
            if not isinstance(mi, str):
                errors.add(mw, "bad-type", f"failure mode {fm_id}: metrics items must be metric names")
            elif mi not in known_metrics:
                errors.add(mw, "unknown-metric", f"failure mode {fm_id}: unknown metric {mi!r}{did_you_mean(mi, known_metrics)}")
            else:
                metrics.append(mi)
        thresholds = []
        t_items, t_wheres = f.list("thresholds")
        tnames = set()
        for ti, tw in zip(t_items, t_wheres):
            tf = Fields(ti, errors, f"failure mode {fm_id} threshold", fallback=tw)
            name = tf.str("name", required=True, pattern=r"[a-z][a-z0-9_]*") or "?"
            if name in tnames:
                errors.add(tf.at("name"), "duplicate-id", f"failure mode {fm_id}: threshold {name!r} defined twice")
            tnames.add(name)
            thresholds.append(Threshold(name=name, value=tf.num("value", required=True, default=0),
                                        unit=tf.str("unit", required=True) or "", source=tf.str("source", required=True) or "",
                                        description=tf.str("description", default="") or ""))
            tf.done()
        alerts = []
        a_items, a_wheres = f.list("alerts", required=True)
        severities = set()
        for ai, aw in zip(a_items, a_wheres):
            af = Fields(ai, errors, f"failure mode {fm_id} alert", fallback=aw)
            sev = af.str("severity", required=True, choices=SEVERITIES) or "warning"
            if sev in severities:
                errors.add(af.at("severity"), "duplicate-severity",
                           f"failure mode {fm_id}: more than one alert with severity {sev!r} (combine them with 'or')")
            severities.add(sev)
            alerts.append(AlertSpec(severity=sev, action=af.str("action", required=True, choices=ACTIONS) or "investigate",
                                    for_seconds=af.duration("for", required=True, default=0),
                                    expr=af.str("expr", required=True) or "",
                                    summary=af.str("summary", required=True) or "",
                                    description=af.str("description", required=True) or "", where=af.at("expr")))
            af.done()
        if not a_items and f.has("alerts"):
            errors.add(f.at("alerts"), "missing-alert", f"failure mode {fm_id}: at least one alert is required")
        covers = []
        c_items, c_wheres = f.list("covers")
        for ci, cw in zip(c_items, c_wheres):
            cf = Fields(ci, errors, f"failure mode {fm_id} covers", fallback=cw)
            covers.append((cf.str("failure_mode", required=True) or "", cf.str("signal", default="") or ""))
            cf.done()
        job_inputs = f.str_list("job_metrics")
        for name in job_inputs:
            if name not in INPUTS:
                errors.add(f.at("job_metrics"), "bad-value",
                           f"failure mode {fm_id}: job_metrics {name!r} is not a job-metric input ({', '.join(INPUTS)})")
        rb = Fields(f.mapping("runbook", required=True), errors, f"failure mode {fm_id} runbook")
        runbook = Runbook(check=tuple(rb.str_list("check", required=True)), act=tuple(rb.str_list("do", required=True)))
        rb.done()
        out.append(FailureMode(
            id=fm_id, title=f.str("title", required=True) or "", group=f.str("group", required=True, choices=GROUPS) or "health",
            scope=f.str("scope", required=True, choices=SCOPES) or "gpu", summary=f.str("summary", required=True) or "",
            meaning=f.str("meaning", required=True) or "", why=f.str("why", required=True) or "",
            metrics=tuple(metrics), thresholds=tuple(thresholds), alerts=tuple(alerts), runbook=runbook,
            needs_profiling=any(m in profiling_metrics for m in metrics),
            workload_from=f.str("workload_from", default="gpu:dcgm_workload:info") or "", covers=tuple(covers),
            job_metrics=tuple(n for n in job_inputs if n in INPUTS), where=f.at("id")))
        f.done()
    return out


def _baselines(doc, errors, known_metrics):
    items, wheres = _top_list(doc, "baselines", errors, "baselines.yaml")
    out, seen, guards = [], {}, []
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "baseline", fallback=w)
        name = f.str("signal", required=True, pattern=r"[a-z][a-z0-9_]*") or "?"
        if name in seen:
            errors.add(f.at("signal"), "duplicate-id", f"baseline signal {name!r} already defined on line {seen[name].line}")
        seen[name] = f.at("signal")
        metric = f.str("metric", required=True) or "?"
        if metric != "?" and metric not in known_metrics:
            errors.add(f.at("metric"), "unknown-metric", f"baseline {name}: unknown metric {metric!r}{did_you_mean(metric, known_metrics)}")
        unit = f.str("unit", required=True) or "short"
        limits = {}
        for key in ("floor", "min_delta"):
            lf = Fields(f.mapping(key, required=True), errors, f"baseline {name} {key}", fallback=f.at(key))
            value = lf.num("value", required=True, default=1)
            if key == "floor" and value is not None and value <= 0:
                errors.add(lf.at("value"), "bad-value", f"baseline {name}: floor must be above 0 (it divides)")
            limits[key] = Threshold(name=key, value=float(value or 1), unit=unit,
                                    source=lf.str("source", required=True) or "")
            lf.done()
        same_load = f.str("same_load")
        if same_load is not None:
            guards.append((name, same_load, f.at("same_load")))
        out.append(BaselineSignal(
            signal=name, metric=metric, unit=unit,
            description=f.str("description", required=True) or "", value=f.str("value", required=True) or "",
            busy_only=bool(f.bool("busy_only", required=True)),
            direction=f.str("direction", required=True, choices=BASELINE_DIRECTIONS) or "up",
            alert=bool(f.bool("alert", required=True)), floor=limits["floor"], min_delta=limits["min_delta"],
            same_load=same_load, peers=bool(f.bool("peers", default=True)),
            reads_peers=bool(f.bool("reads_peers", default=False)), alert_signal=f.str("alert_signal"),
            where=f.at("value")))
        if out[-1].alert_signal is not None:
            guards.append((name, out[-1].alert_signal, f.at("alert_signal")))
        if out[-1].reads_peers and out[-1].peers:
            errors.add(f.at("reads_peers"), "bad-value",
                       f"baseline {name}: a signal that reads its peers is compared with its own history only (set peers: false)")
        f.done()
    by_name = {b.signal: b for b in out}
    for name, guard, where in guards:
        if guard not in by_name:
            errors.add(where, "unknown-signal", f"baseline {name}: names unknown baseline signal {guard!r}{did_you_mean(guard, list(by_name))}")
        elif guard == name:
            errors.add(where, "bad-value", f"baseline {name}: same_load and alert_signal cannot name the signal itself")
    return out
