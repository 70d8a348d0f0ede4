"""alertmanager.yaml: route timings, a receiver per severity, and the silencing failure modes."""
from __future__ import annotations

from ..load.mapping import Fields, did_you_mean
from ..model.catalog import RECEIVERS, SEVERITIES, SILENCE_SCOPES, Routing, SeverityRoute, Silence


def read_routing(doc, errors, modes) -> Routing:
    """catalog/alertmanager.yaml: route timings, a receiver per severity, and the silencing failure modes."""
    mode_ids = [m.id for m in modes]
    thresholds = {m.id: [t.name for t in m.thresholds] for m in modes}
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
        severity = f.str("severity", required=True, choices=SEVERITIES) or "info"
        group_wait = None
        if f.has("group_wait"):  # the severity's own group_wait, with its own source
            gw = Fields(f.mapping("group_wait"), errors, f"severity {severity} group_wait", fallback=f.at("group_wait"))
            group_wait = gw.duration("value", required=True)
            gw.str("source", required=True)
            gw.done()
        severities.append(SeverityRoute(
            severity=severity,
            receiver=f.str("receiver", required=True, choices=RECEIVERS) or "none",
            repeat_interval=f.duration("repeat_interval"), source=f.str("source", required=True) or "",
            group_wait=group_wait))
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
        detected = f.str("detected_within") or ""
        if detected and mode in thresholds and detected not in thresholds[mode]:
            errors.add(f.at("detected_within"), "unknown-threshold",
                       f"alertmanager.yaml: silence {mode} detected_within names {detected!r}, not a threshold of {mode}"
                       f"{did_you_mean(detected, thresholds[mode])} (known: {', '.join(thresholds[mode]) or 'none'})")
        silences.append(Silence(failure_mode=mode, scope=f.str("scope", required=True, choices=SILENCE_SCOPES) or "gpu",
                                source=f.str("source", required=True) or "", where=f.at("failure_mode"),
                                detected_within=detected))
        f.done()
    top.done()
    return Routing(severities=tuple(severities), silences=tuple(silences), **timings)
