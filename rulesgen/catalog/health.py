"""dcgm_health.yaml: DCGM's health error codes, their class, and the failure modes that cover them."""
from __future__ import annotations

from dataclasses import replace

from ..load.mapping import Fields, did_you_mean
from ..model.catalog import HEALTH_CLASSES, HealthCode, HealthTable
from .common import unique


def read_health(doc, errors) -> HealthTable:
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
            unique(f, "code", name, seen, f"DCGM health code {name}")
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


def with_health_covers(modes, health: HealthTable, errors) -> list:
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
