"""Commands that describe the catalog: list (what is active, blind or lacking input) and explain."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import click

from ..load import jobmetrics
from ..load.counters import parse_counters
from .app import catalog_option, config_option, emit_json, error, format_option, plan_or_fail, with_common


@click.command(name="list")
@catalog_option
@config_option
@click.option("--counters", "counters_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A dcgm-exporter counters CSV: report the failure modes it leaves blind.")
@click.option("--job-metrics", "job_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="What a training job exports (its /metrics page, e.g. `curl POD:9090/metrics`): report the "
                   "job failure modes inactive for it, for lack of input.")
@format_option
def list_cmd(catalog, config, counters_file, job_file, fmt):
    """Failure modes (active or not, and why) and metrics (which need profiling)."""
    from ..builders.coverage import coverage
    plan = plan_or_fail(catalog, config, None)
    inactive = dict(plan.rules.inactive)
    if job_file:
        exported = jobmetrics.exposition_names(Path(job_file).read_text(errors="replace"))
        for fm in plan.catalog.failure_modes:
            missing = jobmetrics.missing_inputs(plan.settings, fm.job_metrics, exported)
            if missing and fm.id not in inactive:
                inactive[fm.id] = f"no input: {job_file} exports no {' / '.join(missing)}"
    enabled = parse_counters(Path(counters_file).read_text()) if counters_file else None
    report = coverage(plan.catalog, plan.rules, enabled) if enabled is not None else {}
    # Against dcgm-exporter's default counters (catalog/metrics.yaml `default_enabled`): which active modes
    # a stock exporter leaves blind until the counters in exporter/ are deployed.
    stock = coverage(plan.catalog, plan.rules, {m.name for m in plan.catalog.metrics if m.default_enabled})
    if fmt == "json":
        emit_json(_list_json(plan, inactive, report, counters_file, job_file, stock))
        return
    click.echo("FAILURE MODES")
    opt_in = []
    for fm in plan.catalog.failure_modes:
        state = f"inactive: {inactive[fm.id]}" if fm.id in inactive else "active"
        if fm.id in report and report[fm.id].state != "covered":
            state = report[fm.id].describe()
        elif enabled is None and fm.id not in inactive and stock[fm.id].state == "blind":
            state = "active, needs opt-in counters (exporter/)"
            opt_in.append(fm.id)
        elif enabled is None and fm.id not in inactive and stock[fm.id].state == "partial":
            state = "active, some signals need opt-in counters (exporter/)"
        prof = " [needs profiling]" if fm.needs_profiling else ""
        if fm.job_metrics and fm.id not in inactive:  # optional input: quiet for jobs that do not export it
            names = ", ".join(jobmetrics.input_names(plan.settings, fm.job_metrics))
            prof += f" [needs job metrics: {names}; silent for jobs without them]"
        sev = "/".join(a.severity for a in fm.alerts)
        click.echo(f"  {fm.id:<26} {fm.group:<10} {sev:<24} {state}{prof}")
    if job_file:
        lacking = [fm.id for fm in plan.catalog.failure_modes if inactive.get(fm.id, "").startswith("no input:")]
        click.echo(f"\n{job_file}: {len(lacking)} job failure mode(s) inactive for lack of input: {', '.join(lacking) or 'none'}")
        click.echo("the job-metrics contract: README \"Job metrics\" (names and labels from job_metrics: in rulesgen.yaml)")
        return
    if enabled is not None:
        blind = [fm_id for fm_id, c in report.items() if c.state == "blind"]
        click.echo(f"\n{counters_file}: {len(blind)} failure mode(s) blind: {', '.join(blind) or 'none'}")
        click.echo("render exporter/dcgm-counters.csv (make render) for a counters file that enables every field the rules read")
        return
    if opt_in:
        click.echo(f"\nopt-in counters: dcgm-exporter's default counters leave {', '.join(opt_in)} blind. Deploy the counters "
                   "rulesgen renders in exporter/ first (Helm chart: dcgm-exporter-values.yaml; GPU Operator: "
                   "gpu-operator-dcgm-metrics-configmap.yaml + gpu-operator-clusterpolicy-patch.yaml); "
                   "`rulesgen list --counters FILE` checks your own file.")
    click.echo("\nMETRICS")
    for m in plan.catalog.metrics:
        flags = ", ".join(x for x in ("profiling" if m.profiling else "", "default" if m.default_enabled else "opt-in") if x)
        click.echo(f"  {m.name:<48} {m.type:<8} {m.unit:<10} {flags}")


def _list_json(plan, inactive, report, counters_file, job_file, stock) -> dict:
    """{"failure_modes": [{id, group, severities, active, state, reason, needs_profiling, job_metrics,
    opt_in_counters}], "metrics": [{name, type, unit, profiling, default_enabled}]}; state is active | inactive,
    or with --counters covered | partial | blind; reason explains a state other than active/covered;
    opt_in_counters: all | some | none of the fields the mode reads are off in dcgm-exporter's default counters."""
    modes = []
    for fm in plan.catalog.failure_modes:
        state, reason = ("inactive", inactive[fm.id]) if fm.id in inactive else ("active", None)
        if fm.id in report and report[fm.id].state != "covered":
            state, reason = report[fm.id].state, report[fm.id].describe()
        modes.append({"id": fm.id, "group": fm.group, "severities": [a.severity for a in fm.alerts],
                      "active": fm.id not in inactive, "state": state, "reason": reason,
                      "needs_profiling": fm.needs_profiling,
                      "job_metrics": list(jobmetrics.input_names(plan.settings, fm.job_metrics)) if fm.job_metrics else [],
                      "opt_in_counters": {"blind": "all", "partial": "some"}.get(stock[fm.id].state, "none")})
    metrics = [{"name": m.name, "type": m.type, "unit": m.unit, "profiling": m.profiling,
                "default_enabled": m.default_enabled} for m in plan.catalog.metrics]
    return {"failure_modes": modes, "metrics": metrics}


@click.command()
@click.argument("names", nargs=-1, required=True, metavar="FAILURE_MODE | RULE | slo ID")
@with_common
@format_option
def explain(names, catalog, config, scenarios, scenario_tests, fmt):
    """What FAILURE_MODE detects, its PromQL, thresholds, runbook, and its path to the output files.
    Given a recording rule or alert name instead: its tier (local, partial, global) and why.
    Given `slo ID` (or an SLO's id): what the SLO counts, its objective, burn tiers and budget policy."""
    plan = plan_or_fail(catalog, config, scenarios, scenario_tests=scenario_tests)
    slo_ids = [s.id for s in plan.catalog.slos]
    if names[0] == "slo" or (len(names) == 1 and names[0] in slo_ids):
        slo_id = names[-1]
        if slo_id not in slo_ids or len(names) > 2 or (names[0] == "slo" and len(names) != 2):
            from ..load.mapping import did_you_mean
            error(f"unknown SLO {' '.join(names[1:])!r}{did_you_mean(slo_id, slo_ids)} (catalog/slos.yaml has: {', '.join(slo_ids)})")
            sys.exit(2)
        from .slos import echo_slo, slo_facts
        facts = slo_facts(plan, slo_id)
        if fmt == "json":
            emit_json(facts)
        else:
            echo_slo(facts)
        return
    if len(names) != 1:
        error(f"explain takes one failure mode or rule name, or `slo ID`; got {' '.join(names)!r}")
        sys.exit(2)
    failure_mode = names[0]
    ids = [fm.id for fm in plan.catalog.failure_modes]
    rule_names = {r.record or r.alert for r in plan.rules.rules}
    if failure_mode not in ids and failure_mode in rule_names:
        _explain_rule(plan, failure_mode, fmt)
        return
    if failure_mode not in ids:
        from ..load.mapping import did_you_mean
        error(f"unknown failure mode {failure_mode!r}{did_you_mean(failure_mode, ids)}")
        sys.exit(2)
    fm = plan.catalog.failure_mode(failure_mode)
    if fmt == "json":
        emit_json(_explain_json(plan, fm))
        return
    wrap = lambda text: textwrap.fill(" ".join(text.split()), 100, initial_indent="  ", subsequent_indent="  ")  # noqa: E731
    click.echo(f"{fm.id}: {fm.title} ({fm.group}, scope {fm.scope})\n\n{wrap(fm.summary)}\n")
    click.echo(f"WHAT IT MEANS\n{wrap(fm.meaning)}\n\nWHY IT MATTERS\n{wrap(fm.why)}\n")
    click.echo("THRESHOLDS")
    for t in plan.resolved.mode(fm.id).thresholds:
        click.echo(f"  {t.name} = {t.value} {t.unit}{' (from rulesgen.yaml)' if t.from_config else ''}")
        click.echo(wrap("source: " + t.source))
    if not fm.thresholds:
        click.echo("  (none)")
    from ..builders.rules import limit_sources
    limits = limit_sources(plan.catalog, fm)
    if limits:
        click.echo("\nLIMITS (which source each GPU's limit comes from, first that applies)")
        for lim in limits:
            click.echo(f"  {lim['key']} ({lim['record']}):")
            for n, step in enumerate(lim["order"], 1):
                click.echo(wrap(f"{n}. {step}"))
    click.echo("\nALERTS")
    from ..promql.tiers import classify
    rules = list(plan.rules.rules)
    tiers = classify(rules, plan.settings)
    for i, rule in enumerate(rules):
        if rule.failure_mode == fm.id:
            labels = dict(rule.labels)
            click.echo(f"  {rule.alert}  severity={labels['severity']} action={labels['action']} for={rule.for_seconds}s "
                       f"tier={tiers.tiers[i].tier}")
            click.echo(textwrap.indent(rule.expr, "    "))
    if plan.resolved.mode(fm.id).inactive:
        click.echo(f"  inactive: {plan.resolved.mode(fm.id).inactive}")
    covered_by = {}
    for m in plan.catalog.failure_modes:
        for target, value in m.covers:
            if target == fm.id:
                covered_by.setdefault(m.id, []).append(value)
    if fm.covers or covered_by:
        click.echo("\nONE FAULT, ONE ALERT")
        for target in dict.fromkeys(t for t, _ in fm.covers):
            values = [v for t, v in fm.covers if t == target and v]
            click.echo(wrap(f"covers {target}" + (f" ({', '.join(values)})" if values else "") + " on the same GPU"))
        for source, values in covered_by.items():
            values = [v for v in values if v]
            click.echo(wrap(f"covered by {source}" + (f" ({', '.join(values)})" if values else "") + " on the same GPU"))
    health = plan.catalog.health
    if health is not None and health.failure_mode == fm.id:
        click.echo(f"\nDCGM CODES (catalog/dcgm_health.yaml, label {health.label})")
        click.echo(wrap("drain (critical on FAIL): " + ", ".join(c.code for c in health.codes if c.health_class == "drain")))
        normal = [c.code for c in health.codes if c.health_class == "normal"]
        if normal:
            click.echo(wrap("normal operation at a configured limit (never alerted): " + ", ".join(normal)))
        click.echo(wrap("every other code: warning, investigate"))
    click.echo("\nRUNBOOK\n  Check:")
    for line in fm.runbook.check:
        click.echo(f"   - {line}")
    click.echo("  Do:")
    for line in fm.runbook.act:
        click.echo(f"   - {line}")
    from .lineage import alert_path
    click.echo("\nPATH (catalog -> rules -> files)")
    for line in alert_path(plan, fm.id) or ["  (no alert rendered)"]:
        click.echo(line)


def _rule_tier(plan, name: str, classified=None) -> dict:
    """{name, kind, group, file, tier, why, node}: the rule's tier in a fleet sharded by node (tiers.py);
    `classified`: the rule set's classification when the caller has it already (the same for every rule)."""
    from ..promql.tiers import classify
    rules = list(plan.rules.rules)
    c = classify(rules, plan.settings) if classified is None else classified
    place = {id(r): (f.path, g.name) for f in plan.rules.files for g in f.groups for r in g.rules}
    i = next(i for i, r in enumerate(rules) if (r.record or r.alert) == name)
    t = c.tiers[i]
    path, group = place[id(rules[i])]
    out = {"name": name, "kind": "record" if rules[i].record else "alert", "group": group, "file": path,
           "tier": t.tier, "why": t.why, "node": t.node}
    if plan.sharded is not None:
        out["sharded_file"] = next((f.path for f in plan.sharded.shard_files + plan.sharded.global_files
                                    for g in f.groups for r in g.rules if (r.record or r.alert) == name), None)
    return out


def _explain_rule(plan, name: str, fmt: str) -> None:
    """`rulesgen explain RULE`: a recording rule's or alert's tier and the node of its tree that decided it."""
    info = _rule_tier(plan, name)
    if fmt == "json":
        emit_json(info)
        return
    rule = next(r for r in plan.rules.rules if (r.record or r.alert) == name)
    click.echo(f"{name}: {info['kind']} in group {info['group']} ({info['file']})\n")
    click.echo(textwrap.indent(rule.expr.rstrip("\n"), "  "))
    click.echo(f"\nTIER (README \"Sharded topology\")\n  {info['tier']}")
    wrap = lambda text: textwrap.fill(" ".join(text.split()), 100, initial_indent="  ", subsequent_indent="  ")  # noqa: E731
    click.echo(wrap(f"why: {info['why']}"))
    if info["node"]:
        click.echo(wrap(f"decided at: {info['node']}"))
    if info.get("sharded_file"):
        click.echo(f"  sharded: {info['sharded_file']}")


def _explain_json(plan, fm) -> dict:
    """{id, title, group, scope, summary, meaning, why, thresholds: [{name, value, unit, source, from_config}],
    limits: [{key, record, own_metric, default, order, source}], alerts: [{alert, severity, action, for_seconds, expr}],
    inactive (reason or null), covers: [{target, values}],
    covered_by: [{source, values}], runbook: {check, act}, path: [lines of the text PATH section]}."""
    from ..builders.rules import limit_sources
    from ..promql.tiers import classify
    from .lineage import alert_path
    tiers = classify(list(plan.rules.rules), plan.settings)
    covered_by: dict[str, list[str]] = {}
    for m in plan.catalog.failure_modes:
        for target, value in m.covers:
            if target == fm.id:
                covered_by.setdefault(m.id, []).extend([value] if value else [])
    targets = dict.fromkeys(t for t, _ in fm.covers)
    return {
        "id": fm.id, "title": fm.title, "group": fm.group, "scope": fm.scope,
        "summary": " ".join(fm.summary.split()), "meaning": " ".join(fm.meaning.split()), "why": " ".join(fm.why.split()),
        "thresholds": [{"name": t.name, "value": t.value, "unit": t.unit, "source": " ".join(t.source.split()),
                        "from_config": t.from_config} for t in plan.resolved.mode(fm.id).thresholds],
        "limits": limit_sources(plan.catalog, fm),
        "alerts": [{"alert": r.alert, "severity": dict(r.labels)["severity"], "action": dict(r.labels)["action"],
                    "for_seconds": r.for_seconds, "expr": r.expr, "tier": _rule_tier(plan, r.alert, tiers)["tier"]}
                   for r in plan.rules.rules if r.failure_mode == fm.id],
        "inactive": plan.resolved.mode(fm.id).inactive,
        "covers": [{"target": t, "values": [v for x, v in fm.covers if x == t and v]} for t in targets],
        "covered_by": [{"source": s, "values": v} for s, v in covered_by.items()],
        "runbook": {"check": list(fm.runbook.check), "act": list(fm.runbook.act)},
        "path": [line.strip() for line in alert_path(plan, fm.id)],
    }
