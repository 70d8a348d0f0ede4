"""dashboards.yaml: the hand-made dashboard panels and rows, and the failure modes and thresholds they read."""
from __future__ import annotations

from ..panel_specs import PANELS, ROW
from ..fields import Fields, did_you_mean
from ..model import FailureMode, HandMadePanel
from .common import top_list


def read_dashboards(doc, errors, modes: list[FailureMode]) -> list[HandMadePanel]:
    """catalog/dashboards.yaml: each entry names a panel builder rulesgen knows, the failure mode it reads, the
    thresholds of that mode it draws (by the builder's role for each) and the modes whose alerts it shows."""
    items, wheres = top_list(doc, "panels", errors, "dashboards.yaml")
    by_id = {m.id: m for m in modes}
    out, seen, rows = [], {}, {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "dashboards.yaml panel", fallback=w)
        panel = f.str("panel", required=True) or "?"
        f.what = f"dashboards.yaml panel {panel}"  # the keys' errors name the panel
        spec = PANELS.get(panel)
        if panel != "?" and spec is None:
            errors.add(f.at("panel"), "unknown-panel",
                       f"dashboards.yaml: rulesgen has no hand-made panel {panel!r}{did_you_mean(panel, PANELS)}"
                       f" (known: {', '.join(PANELS)})")
        if panel in seen:
            errors.add(f.at("panel"), "duplicate-id", f"dashboards.yaml: panel {panel} already declared on line {seen[panel].line}")
        seen[panel] = f.at("panel")
        fm_id = f.str("failure_mode", required=True) or "?"
        fm = _mode(fm_id, f.at("failure_mode"), panel, by_id, errors)
        if spec is not None and spec.kind == ROW and fm is not None:
            if fm_id in rows:
                errors.add(f.at("failure_mode"), "duplicate-id",
                           f"dashboards.yaml: failure mode {fm_id} already has a hand-made row (line {rows[fm_id].line})")
            rows[fm_id] = f.at("failure_mode")
        thresholds = _thresholds(f, panel, spec, fm, errors)
        alerts_of = []
        if spec is None or spec.alerts_of:  # a builder that shows no other mode's alerts: alerts_of is an unknown key
            a_items, a_wheres = f.list("alerts_of", required=spec is not None)
            for name, aw in zip(a_items, a_wheres):
                if _mode(name, aw, panel, by_id, errors) is not None:
                    alerts_of.append(name)
        out.append(HandMadePanel(panel=panel, failure_mode=fm_id, thresholds=thresholds, alerts_of=tuple(alerts_of),
                                 where=f.at("panel")))
        f.done()
    return out


def _mode(name, where, panel, by_id, errors) -> FailureMode | None:
    if not isinstance(name, str):
        errors.add(where, "bad-type", f"dashboards.yaml: panel {panel}: a failure mode id must be a string, got {name!r}")
        return None
    if name in by_id:
        return by_id[name]
    if name != "?":
        errors.add(where, "unknown-failure-mode",
                   f"dashboards.yaml: panel {panel} reads failure mode {name!r}: not in failure_modes.yaml"
                   f"{did_you_mean(str(name), list(by_id))}")
    return None


def _thresholds(f: Fields, panel, spec, fm, errors) -> tuple[tuple[str, str], ...]:
    """(role, threshold name) for each role the builder draws: every role given, each a threshold of fm."""
    node = f.mapping("thresholds")
    tf = Fields(node, errors, f"panel {panel} thresholds", fallback=f.at("thresholds"))
    out = []
    for role in spec.roles if spec is not None else list(node):
        name = tf.str(role, required=True)
        if name is None:
            continue
        known = [t.name for t in fm.thresholds] if fm is not None else []
        if fm is not None and name not in known:
            errors.add(tf.at(role), "unknown-threshold",
                       f"dashboards.yaml: panel {panel} reads threshold {name!r} of failure mode {fm.id}: no such "
                       f"threshold{did_you_mean(name, known)} (known: {', '.join(known) or 'none'})")
        out.append((role, name))
    tf.done()
    return tuple(out)
