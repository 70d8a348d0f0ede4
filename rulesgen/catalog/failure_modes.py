"""failure_modes.yaml: ids, thresholds with sources, alerts, runbooks, and what each mode covers."""
from __future__ import annotations

import re

from ..durations import duration_seconds
from ..load import template_syntax
from ..load.jobmetrics import INPUTS
from ..load.mapping import Fields, did_you_mean
from ..load.yamlsource import where_of
from ..model.catalog import (
    ACTIONS, BASELINE_MODE, BASELINE_THRESHOLDS, GROUPS, SCOPES, SEVERITIES, AlertSpec, FailureMode, Range, Runbook,
    Threshold, Window)
from ..model.roles import ROLES
from .common import read_title, top_list, unique

# A failure mode's id and a threshold's name: snake_case words, never `__` (a threshold renders in a template
# as the placeholder __threshold__MODE__NAME__, model/thresholds.py: a double underscore would make two
# placeholders overlap).
NAME = r"[a-z][a-z0-9]*(_[a-z0-9]+)*"


def read_failure_modes(doc, errors, known_metrics, profiling_metrics, workload: str = ROLES["workload"].default[0]):
    """workload: the record of role `workload` (signals.yaml roles:), a failure mode's default workload_from."""
    items, wheres = top_list(doc, "failure_modes", errors, "failure_modes.yaml")
    out, seen = [], {}
    sourced, unsourced = [], []  # the positions of `for:` with and without a for_source
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "failure mode", fallback=w)
        fm_id = f.str("id", required=True, pattern=NAME) or "?"
        unique(f, "id", fm_id, seen, f"failure mode {fm_id!r}")
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
            name = tf.str("name", required=True, pattern=NAME) or "?"
            if name in tnames:
                errors.add(tf.at("name"), "duplicate-id", f"failure mode {fm_id}: threshold {name!r} defined twice")
            tnames.add(name)
            value = tf.num("value", required=True, default=0)
            valid = parse_range(tf.str("range", required=True), tf.at("range"), f"failure mode {fm_id} threshold {name}", errors)
            if value not in valid:
                errors.add(tf.at("value"), "out-of-range",
                           f"failure mode {fm_id} threshold {name}: {value:g} is out of its range {valid}")
            thresholds.append(Threshold(name=name, value=value,
                                        unit=tf.str("unit", required=True) or "", source=tf.str("source", required=True) or "",
                                        description=tf.str("description", default="") or "", range=valid,
                                        title=read_title(tf, f"failure mode {fm_id} threshold {name}")))
            tf.done()
        windows = read_windows(f, f"failure mode {fm_id}", errors)
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
            hold = af.duration("for", required=True, default=0)
            if hold == 0 and is_zero_duration(af.node.get("for")):
                errors.add(af.at("for"), "out-of-range",
                           f"failure mode {fm_id} alert.for must be above 0s: one bad sample would page someone")
            for_source = af.str("for_source", default="") or ""
            if for_source.strip():
                sourced.append((af.at("for_source"), fm_id, sev))
            else:
                unsourced.append((af.at("for"), fm_id, sev))
            alerts.append(AlertSpec(severity=sev, action=af.str("action", required=True, choices=ACTIONS) or "investigate",
                                    for_seconds=hold, for_source=for_source,
                                    expr=af.str("expr", required=True) or "",
                                    summary=af.str("summary", required=True) or "",
                                    description=af.str("description", required=True) or "", where=af.at("expr"),
                                    body=af.body_at("expr"), persists=af.str("persists", default="") or ""))
            af.done()
        used = {n for a in alerts for n in template_syntax.attributes_used(a.expr, "w")}
        for w in windows:
            if w.name not in used:
                errors.add(w.where, "unused-window", f"failure mode {fm_id}: window {w.name!r} is read by no alert")
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
            workload_from=f.str("workload_from", default=workload) or "", covers=tuple(covers),
            job_metrics=tuple(n for n in job_inputs if n in INPUTS), windows=windows, where=f.at("id")))
        f.done()
    check_for_sources(sourced, unsourced, errors)
    return out


def read_windows(f: Fields, owner: str, errors) -> tuple[Window, ...]:
    """`windows:` [{name, value (a duration), source}]: the ranges the expressions read as [[ w.NAME ]], each
    with why it is that long. owner: whose windows, in messages ("failure mode ID", "signals.yaml"); a
    window nothing reads is an error (a dead field), reported by the caller."""
    out, seen = [], {}
    items, wheres = f.list("windows")
    for item, w in zip(items, wheres):
        wf = Fields(item, errors, f"{owner} window", fallback=w)
        name = wf.str("name", required=True, pattern=r"[a-z][a-z0-9_]*") or "?"
        unique(wf, "name", name, seen, f"{owner}: window {name!r}")
        seconds = wf.duration("value", required=True, default=0)
        if seconds is not None and seconds <= 0 and wf.has("value"):
            errors.add(wf.at("value"), "out-of-range", f"{owner} window {name}: a range must be above 0s")
        out.append(Window(name=name, seconds=int(seconds or 0), source=wf.str("source", required=True) or "",
                          where=wf.at("name")))
        wf.done()
    return tuple(out)


def check_for_sources(sourced, unsourced, errors) -> None:
    """An alert's `for:` says why with `for_source:`, like a threshold's `source:`. A file that sources any
    `for:` (the bundled catalog) must source every one; a file that sources none (a catalog written before
    for_source existed) loads as it did."""
    if not sourced:
        return
    first = min(w.line for w, _, _ in sourced)
    for where, fm_id, sev in unsourced:
        errors.add(where, "missing-source",
                   f"failure mode {fm_id} ({sev}): `for:` has no for_source (why this duration); this file sources "
                   f"its for: values (line {first}), so every alert's needs one")


_RANGE = re.compile(r"([\[(])\s*(-inf|-?[0-9.]+(?:e-?[0-9]+)?)\s*,\s*(inf|-?[0-9.]+(?:e-?[0-9]+)?)\s*([\])])")


def parse_range(text, where, what, errors) -> Range:
    """"[0, 1]", "[0, inf)", "(0, inf)": brackets closed, parentheses open (infinity always open)."""
    if text is None:
        return Range()
    m = _RANGE.fullmatch(text.strip())
    try:
        low, high = (float(m.group(2)), float(m.group(3))) if m else (0.0, 0.0)
    except ValueError:
        m = None
    if not m or low > high or (m.group(1) == "[" and low == float("-inf")) or (m.group(4) == "]" and high == float("inf")):
        errors.add(where, "bad-value", f"{what}: range {text!r} is not an interval like [0, 1], [0, inf) or (1, inf)")
        return Range()
    return Range(low=low, high=high, low_open=m.group(1) == "(", high_open=m.group(4) == ")")


def is_zero_duration(raw) -> bool:
    """True for a duration that parses to 0 (0s, 0m): not for a missing or malformed one (reported already)."""
    try:
        return duration_seconds(raw) == 0
    except (ValueError, TypeError):
        return False


def check_covers(modes, baselines, health, errors) -> None:
    """`covers` names failure modes (and baseline signals, or DCGM health codes) that exist, and no mode
    covers itself."""
    ids = [m.id for m in modes]
    signals = [b.signal for b in baselines]
    codes = [n for c in health.codes for n in c.names] if health is not None else []
    for m in modes:
        for target, signal in m.covers:
            if target == m.id:
                errors.add(m.where, "unknown-failure-mode", f"failure mode {m.id} covers itself: name another failure mode")
            elif target not in ids:
                errors.add(m.where, "unknown-failure-mode",
                           f"failure mode {m.id} covers {target!r}: not another failure mode{did_you_mean(target, ids)}")
            if signal and health is not None and target == health.failure_mode:
                if signal not in codes:
                    errors.add(m.where, "unknown-signal",
                               f"failure mode {m.id} covers DCGM health code {signal!r}: not in dcgm_health.yaml{did_you_mean(signal, codes)}")
            elif signal and signal not in signals:
                errors.add(m.where, "unknown-signal",
                           f"failure mode {m.id} covers signal {signal!r}: not in baselines.yaml{did_you_mean(signal, signals)}")


def check_baseline_mode(doc, modes, baselines, errors) -> None:
    """The baseline alerts (one term per alerting signal of baselines.yaml) belong to the failure mode
    BASELINE_MODE and read its thresholds BASELINE_THRESHOLDS: failure_modes.yaml must have both."""
    fm = next((m for m in modes if m.id == BASELINE_MODE), None)
    if fm is None:
        if baselines:
            errors.add(where_of(doc, "failure_modes"), "unknown-failure-mode",
                       f"failure_modes.yaml: baselines.yaml has {len(baselines)} signal(s), whose alerts belong to the "
                       f"failure mode {BASELINE_MODE!r}: not in failure_modes.yaml{did_you_mean(BASELINE_MODE, [m.id for m in modes])}")
        return
    missing = [n for n in BASELINE_THRESHOLDS if n not in {t.name for t in fm.thresholds}]
    if missing:
        errors.add(fm.where, "unknown-threshold",
                   f"failure mode {fm.id}: the baseline alerts read its thresholds {', '.join(BASELINE_THRESHOLDS)} "
                   f"(missing: {', '.join(missing)})")
