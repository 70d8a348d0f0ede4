"""catalog/slos.yaml: the burn-rate tiers and the SLOs rulesgen can count."""
from __future__ import annotations

from ..load.mapping import Fields
from ..model.slos import ALERT_CLASSES, PERIODS, SCOPES, TIER_CHOICES, BurnTier, SloSpec

KNOWN_SLOS = ("gpu_capacity", "training_time", "job_success")  # the SLIs builders/slos.py can count


def read_slos(doc, errors) -> tuple[tuple[BurnTier, ...], tuple[SloSpec, ...]]:
    top = Fields(doc, errors, "slos.yaml")
    tiers = []
    items, wheres = top.list("burn_tiers", required=True)
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "burn tier", fallback=w)
        name = f.str("name", required=True, pattern=r"[a-z][a-z0-9_]*") or "?"
        long, short = f.duration("long", required=True) or 3600, f.duration("short", required=True) or 300
        if short >= long:
            errors.add(f.at("short"), "bad-value", f"slos.yaml burn tier {name}: short ({short}s) must be below long ({long}s)")
        tiers.append(BurnTier(name=name, alert=f.str("alert", required=True, choices=ALERT_CLASSES) or "ticket",
                              long=long, short=short,
                              budget_share=f.num("budget_share", required=True, minimum=0.0001, maximum=1) or 0.1,
                              where=f.at("name")))
        f.done()
    names = [t.name for t in tiers]
    for t in tiers:
        if names.count(t.name) > 1:
            errors.add(t.where, "duplicate-id", f"slos.yaml: burn tier {t.name!r} is listed twice")
    slos = []
    items, wheres = top.list("slos", required=True)
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "slo", fallback=w)
        slo_id = f.str("id", required=True, choices=KNOWN_SLOS) or "?"
        period = f.duration("period", required=True) or PERIODS[-1]
        if period not in PERIODS:
            errors.add(f.at("period"), "bad-value", f"slos.yaml {slo_id}: period must be 7d, 28d or 30d")
        runbook = Fields(f.mapping("runbook"), errors, f"slo {slo_id} runbook", fallback=f.at("runbook"))
        own = Fields(f.mapping("tiers"), errors, f"slo {slo_id} tiers", fallback=f.at("tiers"))
        own_tiers = []
        for tier in names:
            value = own.str(tier, choices=TIER_CHOICES)
            if value is not None:
                own_tiers.append((tier, value))
        own.done()
        policy = []
        steps, step_wheres = f.list("budget_policy")
        for step, sw in zip(steps, step_wheres):
            pf = Fields(step, errors, f"slo {slo_id} budget_policy", fallback=sw)
            below = pf.num("below", required=True, minimum=0, maximum=100)
            advice = pf.str("advice", required=True)
            if below is not None and advice:
                policy.append((below, " ".join(advice.split())))
            pf.done()
        slos.append(SloSpec(
            id=slo_id, title=f.str("title", required=True) or slo_id,
            alert_prefix=f.str("alert_prefix", required=True, pattern=r"[A-Z][A-Za-z0-9]*") or "SLO",
            objective=f.num("objective", required=True, minimum=50, maximum=99.999) or 99.5,
            objective_source=f.str("objective_source", required=True) or "", period=period,
            input_absent_for=f.duration("input_absent_for", required=True) or 900,
            meaning=" ".join((f.str("meaning", required=True) or "").split()),
            why=" ".join((f.str("why", required=True) or "").split()),
            unit=f.str("unit") or "GPU-minutes", scope=f.str("scope", choices=SCOPES) or "gpu", tiers=tuple(own_tiers),
            policy=tuple(sorted(policy)),
            check=tuple(runbook.str_list("check")), do=tuple(runbook.str_list("do")), where=f.at("id")))
        runbook.done()
        f.done()
    top.done()
    return tuple(tiers), tuple(slos)
