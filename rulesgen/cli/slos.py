"""`rulesgen explain slo ID` (or `rulesgen explain ID` for an SLO id): an SLO traced like a failure mode: what it
counts, its objective and period as rulesgen.yaml sets them, each burn tier's windows, factor and alert, its
budget policy, and where its rules and OpenSLO document are written."""
from __future__ import annotations

import textwrap

import click

from ..builders.slos import active_slos, names, ratio_record, windows
from ..durations import format_duration
from ..model import conventions
from ..model.slos import SloSettings, absent_alert_name, alert_name, effective
from ..promql.text import format_number
from ..render.openslo import PATH as OPENSLO_PATH


def slo_facts(plan, slo_id: str) -> dict:
    """{id, title, unit, rendered, objective, period, budget, group_by, meaning, why, objective_source, tiers: [{name,
    class, alert, long, short, factor, budget_share}], absent_alert, records, policy: [{below, advice}], files}: the
    SLO as rendered, or as its catalog defaults would render it when rulesgen.yaml does not name it."""
    spec = next(s for s in plan.catalog.slos if s.id == slo_id)
    rendered = next((s for s in active_slos(plan.catalog, plan.settings) if s.id == slo_id), None)
    slo = rendered or effective(spec, plan.catalog.burn_tiers, SloSettings(id=slo_id), plan.settings.cluster_label)
    records = [r.record for f in plan.rules.files for g in f.groups if g.name.startswith(f"{conventions.GROUP_PREFIX}-slo-{slo_id.replace('_', '-')}")
               for r in g.rules if r.record] if rendered else []
    return {
        "id": slo.id, "title": spec.title, "unit": spec.unit, "rendered": rendered is not None,
        "objective": slo.objective, "period": format_duration(slo.period), "budget": slo.budget,
        "group_by": list(slo.group_by), "meaning": spec.meaning, "why": spec.why,
        "objective_source": " ".join(spec.objective_source.split()),
        "tiers": [{"name": t.name, "class": cls, "alert": alert_name(slo, cls), "long": format_duration(t.long),
                   "short": format_duration(t.short), "factor": round(t.factor(slo.period), 6), "budget_share": t.budget_share}
                  for t, cls in slo.tiers],
        "absent_alert": absent_alert_name(slo),
        "ratios": [ratio_record(slo, w) for w in windows(slo)],
        "counts": {"bad": names(slo)["bad"], "total": names(slo)["total"]},
        "records": records,
        "policy": [{"below": below, "advice": advice} for below, advice in spec.policy],
        "files": ["alerts/prometheus/slos.yaml", "runbooks/slo-burn.md", OPENSLO_PATH] if rendered else [],
    }


def echo_slo(facts: dict) -> None:
    wrap = lambda text: textwrap.fill(" ".join(text.split()), 100, initial_indent="  ", subsequent_indent="  ")  # noqa: E731
    click.echo(f"{facts['id']}: {facts['title']} SLO ({facts['unit']})\n")
    if facts["rendered"]:
        click.echo(f"  objective {format_number(facts['objective'])}% over {facts['period']}, per "
                   f"{', '.join(facts['group_by'])} (error budget {format_number(round(facts['budget'] * 100, 6))}%)\n")
    else:
        click.echo(wrap(f"not rendered: rulesgen.yaml names no slos.{facts['id']}. Its catalog defaults, shown below: "
                        f"objective {format_number(facts['objective'])}% over {facts['period']}. To render it: "
                        f"slos: {{{facts['id']}: {{objective: {format_number(facts['objective'])}}}}}") + "\n")
    click.echo(f"WHAT IT COUNTS\n{wrap(facts['meaning'])}\n\nWHY\n{wrap(facts['why'])}\n")
    click.echo(f"OBJECTIVE\n{wrap(facts['objective_source'])}\n")
    click.echo("BURN TIERS (the long window has spent budget_share of the period's budget; the short one still burns)")
    for t in facts["tiers"]:
        click.echo(f"  {t['name']:<11} {t['class']:<7} {t['long']:>3} and {t['short']:<3} above {format_number(t['factor'])}x "
                   f"({t['budget_share']:.0%} of the budget)  {t['alert']}")
    click.echo(f"  input gone: {facts['absent_alert']}\n")
    click.echo(f"SLI\n  bad / total, summed over each window: {facts['counts']['bad']} / {facts['counts']['total']}")
    click.echo(wrap("ratios: " + ", ".join(facts["ratios"])))
    if facts["policy"]:
        click.echo("\nBUDGET POLICY")
        for step in facts["policy"]:
            when = "budget spent" if step["below"] == 0 else f"under {format_number(step['below'])}% left"
            click.echo(wrap(f"{when}: {step['advice']}"))
    if facts["rendered"]:
        click.echo(f"\nPATH\n  {len(facts['records'])} recording rules and the alerts above -> " + ", ".join(facts["files"]))
