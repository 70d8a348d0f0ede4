"""Catalog + Settings -> recording and alerting rule groups (pure; errors carry catalog positions)."""
from __future__ import annotations

from dataclasses import replace

from ..catalog.common import METRIC_PREFIXES
from ..errors import Collector, Diagnostic
from ..load import jobmetrics, template_syntax
from ..load.mapping import did_you_mean
from ..load.resolved import ModeView, Resolved, resolve
from ..load.settings import Settings
from ..load.yamlsource import where_in
from ..model import conventions
from ..model.catalog import BASELINE_MODE, BASELINE_THRESHOLDS, IDENTITY_GROUPS, Catalog, FailureMode
from ..model.output import Rule, RuleFile, RuleGroup, RuleSet
from ..model.thresholds import Marked
from ..promql import graph as rule_graph
from ..promql import printer as promql_print
from ..promql import text as promql
from ..promql import tree as promql_tree
from . import baselines, covers, engine_fit, slos, templates

RULE_FILES = (
    ("recording", "Recording rules the alerts read: normalised per-GPU signals, model limits, job and peer statistics."),
    ("aggregates", "Recording rules for dashboards: node, job and fleet aggregates (no alert reads them)."),
    ("health", "Health alerts: hardware failure modes (drain / investigate)."),
    ("efficiency", "Efficiency alerts: how well jobs use their GPUs (optimize)."),
    ("baselines", "Baseline alerts: GPUs far from their peers or their own history."),
    ("jobs", "Job alerts: the training jobs' own metrics (loss, step time) and their GPUs' hardware alerts."),
    ("fleet", "Fleet alerts: guards over the other alerts (reads ALERTS)."),
)


def build_rules(catalog: Catalog, settings: Settings, resolved: Resolved | None = None) -> RuleSet:
    errors = Collector()
    resolved = resolved or resolve(catalog, settings)
    base = templates.base_context(catalog, settings, resolved)
    recorded = ({s.record for s in catalog.signals} | {conventions.limit_record(k) for k in catalog.limit_keys}
                | {conventions.gpu_limit_record(o.key) for o in catalog.own_limits}
                | {conventions.MODEL_GPUS} | conventions.BASELINE_RECORDS)
    known_metrics = {n for m in catalog.metrics for n in m.names}

    recording: list[Rule] = []
    limit_keys = _used_limit_keys(catalog)
    signals = {s.record: _rendered_signal(s, base) for s in catalog.signals}
    # Without job metrics (job_metrics.enabled: false) the records that read them are not written.
    skipped = set() if settings.job_metrics.enabled else job_signal_records(catalog, {r: m.filled() for r, (m, _) in signals.items()})
    for signal in catalog.signals:
        if signal.record in skipped:
            continue
        marked, problems = signals[signal.record]
        errors.extend(problems)
        expr = marked.filled()
        _check_expr(expr, signal.where, errors, f"signal {signal.record}", recorded, known_metrics,
                    required=not problems, body=(signal.body, signal.expr))
        _check_placed(marked, signal.where, errors, f"signal {signal.record}")
        recording.append(Rule(record=signal.record, expr=expr, source=signal.where, template_expr=marked))
        if signal.record == catalog.named("reporting"):  # the model limits are written on it
            recording.extend(_model_limit_rules(catalog, settings, limit_keys))
            recording.extend(_gpu_limit_rules(catalog, settings, base))

    alert_groups: dict[str, list[Rule]] = {}
    baseline_recording: list[Rule] = []
    baseline_slow: tuple[RuleGroup, ...] = ()
    for fm in catalog.failure_modes:
        view = resolved.mode(fm.id)
        if not view.active:
            continue
        context = templates.mode_context(base, view)
        if fm.id == BASELINE_MODE:
            missing = [n for n in BASELINE_THRESHOLDS if n not in context["t"]]
            if missing or not catalog.baselines:
                errors.add(fm.where, "missing-baselines",
                           f"failure mode {fm.id} needs catalog/baselines.yaml with at least one signal and the thresholds "
                           f"{', '.join(BASELINE_THRESHOLDS)}" + (f" (missing: {', '.join(missing)})" if missing else ""))
                continue
            above = [f"{low} ({context['t'][low].value:g}) is above {high} ({context['t'][high].value:g})"
                     for low, high in (("z_release", "z"), ("peer_z_release", "peer_z"))
                     if context["t"][low].value > context["t"][high].value]
            if above:
                errors.add(fm.where, "bad-value", f"failure mode {fm.id}: a release threshold holds the alert below its "
                           f"entry threshold, so it must not be above it: {'; '.join(above)}")
                continue
            baseline_recording, baseline_slow = _baseline_recording(catalog, settings, base, context, errors, recorded,
                                                                    known_metrics)
            context = {**context, "baseline_alert": baselines.alert_expr(catalog, settings, context["t"])}
        workload_from = templates.render(fm.workload_from, context, fm.where, errors,
                                         f"failure mode {fm.id} workload_from").filled()
        _check_expr(workload_from, fm.where, errors, f"failure mode {fm.id} workload_from", recorded, known_metrics)
        for spec in fm.alerts:
            what = f"failure mode {fm.id} ({spec.severity})"
            reported = len(errors.items)
            marked = templates.render(spec.expr, context, spec.where, errors, what)
            expr = marked.filled()
            severity = view.severity(spec.severity)
            covering = _cover_conditions(fm, severity, catalog, settings, resolved)
            expr = _unless_covered(expr, covering)
            alertname = conventions.alert_name(fm.id, spec.severity, len(fm.alerts))
            rule_labels = ("severity", "failure_mode", "action", *dict(settings.extra_labels))
            if spec.persists:
                persists = templates.render(spec.persists, context, spec.where, errors, what + " persists").filled()
                expr = _persisting(expr, alertname, persists, rule_labels)
            if fm.group in IDENTITY_GROUPS:
                expr = _held_while_silenced(expr, alertname, _silence_conditions(fm, catalog, settings) + covering,
                                            rule_labels)
            _check_expr(expr, spec.where, errors, what, recorded, known_metrics, required=len(errors.items) == reported,
                        body=(spec.body, spec.expr))
            _check_placed(marked, spec.where, errors, what)
            summary = templates.render(spec.summary, context, spec.where, errors, what + " summary").filled()
            description = templates.render(spec.description, context, spec.where, errors, what + " description").filled()
            alert_groups.setdefault(fm.group, []).append(
                replace(_alert_rule(view, spec, expr, summary, description, workload_from, settings), template_expr=marked))

    errors.raise_if_any()
    alert_rules = [r for rules in alert_groups.values() for r in rules]
    needed = _needed_records(recording, alert_rules + baseline_recording + [r for g in baseline_slow for r in g.rules])
    files = []
    for kind, description in RULE_FILES:
        # Every group runs at evaluation_interval but the baselines': the "now" values, peers and the
        # alert at the baseline interval (<= 5m), the hourly history and daily sums hourly, the history
        # mean and stddev every 6 hours.
        interval = settings.evaluation_interval
        extra: tuple[RuleGroup, ...] = ()
        if kind == "recording":
            name, rules = conventions.recording_group("gpu"), tuple(r for r in recording if r.record in needed)
        elif kind == "aggregates":
            name, rules = conventions.recording_group("aggregate"), tuple(r for r in recording if r.record not in needed)
        elif kind == "baselines":
            name, rules = conventions.BASELINE_GROUP, tuple(baseline_recording) + tuple(alert_groups.get(kind, []))
            interval = settings.baselines.interval
            extra = baseline_slow
        else:
            name, rules = conventions.alert_group(kind), tuple(alert_groups.get(kind, []))
        if rules:
            files.append(RuleFile(path=conventions.rule_file(kind), groups=(RuleGroup(name, rules, interval), *extra),
                                  description=description))
    slo_file = slos.build_slo_file(catalog, settings)
    if slo_file is not None:
        files.append(slo_file)
    # Engine fit: no group above max_rules_per_group, the rules reading ALERTS in groups of their own.
    return RuleSet(files=engine_fit.fit(files, settings.max_rules_per_group), inactive=resolved.inactive)


def _baseline_recording(catalog, settings, base, context, errors, recorded, known_metrics) -> tuple[list[Rule], tuple[RuleGroup, ...]]:
    short = conventions.BASELINE_SHORT
    values = {**base, "short": short, "short_range": f"[{short}]", "t": context["t"],
              "now": lambda signal: baselines.recent(conventions.BASELINE_VALUE, settings, f'signal="{signal}"'),
              "node_median": lambda signal: baselines.recent(conventions.baseline_peers("node", "median"), settings,
                                                             f'signal="{signal}"')}

    def render(template, where):
        expr = templates.render(template, values, where, errors, "baseline value")
        _check_expr(expr.filled(), where, errors, "baseline value", recorded, known_metrics)
        return expr.text

    def filled(rule: Rule) -> Rule:  # the builder wrote the thresholds of `t` at their places
        marked = templates.marked(rule.expr, base)
        return replace(rule, expr=marked.filled(), template_expr=marked)
    fast, slow = baselines.recording_rules(catalog, settings, render, context["t"])
    return [filled(r) for r in fast], tuple(replace(g, rules=tuple(map(filled, g.rules))) for g in slow)


def _rendered_signal(signal, base: dict) -> tuple[Marked, list[Diagnostic]]:
    """A signal's expression, rendered once, and its template's problems (reported when the signal is written)."""
    problems = Collector()
    return templates.render(signal.expr, base, signal.where, problems, f"signal {signal.record}"), problems.items


def job_signal_records(catalog: Catalog, expressions: dict[str, str]) -> set[str]:
    """The catalog's recording rules that read the training jobs' own metrics, directly (their template uses
    `jm`) or through another such record (`expressions`: record -> its expression as build_rules renders it)."""
    direct = {s.record for s in catalog.signals if template_syntax.attributes_used(s.expr, "jm")}
    return jobmetrics.job_signal_records(direct, {s.record: expressions.get(s.record, "") for s in catalog.signals})


def _needed_records(recording: list[Rule], alert_rules: list[Rule]) -> set[str]:
    """Recording rules the alerts read, directly or through other recording rules. The rest only
    feed dashboards: they go to aggregates.yaml, which scenario tests need not evaluate."""
    return set(rule_graph.Graph(recording).records_read(a.expr for a in alert_rules))


def _expr_templates(catalog: Catalog) -> list[str]:
    return ([s.expr for s in catalog.signals] + [a.expr for fm in catalog.failure_modes for a in fm.alerts]
            + [b.value for b in catalog.baselines])


def used_gpu_limit_keys(catalog: Catalog) -> list[str]:
    """The limits some expression reads per GPU ([[ gpu_limit.KEY ]]), in own_limits order."""
    used = {key for t in _expr_templates(catalog) for key in template_syntax.attributes_used(t, "gpu_limit")}
    return [o.key for o in catalog.own_limits if o.key in used]


def _used_limit_keys(catalog: Catalog) -> list[str]:
    """Only the limits some expression reads (directly, or as the fallback of a GPU's own limit): each
    costs a selector per model at every evaluation."""
    used = {key for t in _expr_templates(catalog) for key in template_syntax.attributes_used(t, "limit")}
    used |= set(used_gpu_limit_keys(catalog))
    return [k for k in catalog.limit_keys if k in used]


def limit_sources(catalog: Catalog, fm: FailureMode) -> list[dict]:
    """The limits a failure mode's alerts compare with and where each comes from, in the order the rules
    try them (for explain and the runbooks): the GPU's own DCGM field, the model table, the default."""
    texts = [a.expr for a in fm.alerts]
    per_gpu = {k for t in texts for k in template_syntax.attributes_used(t, "gpu_limit")}
    per_model = {k for t in texts for k in template_syntax.attributes_used(t, "limit")}
    out = []
    for key in catalog.limit_keys:
        own = catalog.own_limit(key) if key in per_gpu else None
        if key not in per_gpu and key not in per_model:
            continue
        default = catalog.gpu_default.limit(key)
        chain = []
        if own is not None:
            chain.append(f"the GPU's own {own.metric} where exported (0, a blank sentinel or an implausible value: not exported)")
        chain.append(f"its model's {key} in gpu_models.yaml ({len(catalog.gpu_models)} models)")
        if own is None or own.fallback == "default":
            chain.append(f"the default {promql.format_number(default)} for a model the table does not list")
        else:
            chain.append("none for a model the table does not list: the clause stays silent on it")
        out.append({"key": key, "record": conventions.gpu_limit_record(key) if own else conventions.limit_record(key),
                    "own_metric": own.metric if own else None, "default": default if own is None or own.fallback == "default" else None,
                    "order": chain, "source": " ".join(own.source.split()) if own else ""})
    return out


def _gpu_limit_rules(catalog: Catalog, settings: Settings, base: dict) -> list[Rule]:
    """One series per GPU and limit an alert reads: the GPU's own DCGM report of it where exported (0,
    DCGM's blank sentinels and implausible values count as not exported), else its model's table value
    (model:dcgm_limit_KEY:value), else, for limits whose own_limits entry says `fallback: default`, the
    table's default. `or` keeps the first term a GPU has; all terms carry the GPU's labels."""
    rules = []
    gpu, model = promql.by(settings.gpu_labels), promql.by(settings.model_labels)
    known = [m.match for m in catalog.gpu_models]
    for key in used_gpu_limit_keys(catalog):
        own = catalog.own_limit(key)
        carrier = catalog.named("reporting")
        if own.fallback == "model":
            carrier += f'{{modelName=~"{_escape("|".join(known))}"}}'
        expr = (f"max by ({gpu}) ({base['v'][own.metric]} > 0)\n"
                f"or {carrier} * 0 + on ({model}) group_left () {conventions.limit_record(key)}")
        rules.append(Rule(record=conventions.gpu_limit_record(key), expr=expr, source=own.where))
    return rules


def _model_limit_rules(catalog: Catalog, settings: Settings, keys: list[str]) -> list[Rule]:
    """One series per cluster, modelName and limit key (not per GPU: a limit is the model's): the
    value of the gpu_models.yaml entry whose regex matches the modelName, else the default. Models
    sharing a value share one selector (patterns are mutually exclusive; tests check that)."""
    if not keys:
        return []
    carrier = conventions.MODEL_GPUS
    rules = [Rule(record=carrier, expr=f"count by ({promql.by(settings.model_labels)}) ({catalog.named('reporting')})")]
    for key in keys:
        by_value: dict[float, list[str]] = {}
        for m in catalog.gpu_models:
            by_value.setdefault(m.limit(key), []).append(m.match)
        terms = [f'{carrier}{{modelName=~"{_escape("|".join(patterns))}"}} * 0 + {promql.format_number(value)}'
                 for value, patterns in by_value.items()]
        terms.append(f"{carrier} * 0 + {promql.format_number(catalog.gpu_default.limit(key))}")
        rules.append(Rule(record=conventions.limit_record(key), expr="\n  or ".join(f"({t})" for t in terms)))
    return rules


def _escape(regex: str) -> str:
    return regex.replace("\\", "\\\\").replace('"', '\\"')


def _dashboard_variables(fm: FailureMode, settings: Settings) -> tuple[tuple[str, str], ...]:
    """The dashboard variables an alert's link sets, as (variable, label): its cluster, host and GPU, those of them
    its scope carries (a node's alert has no gpu label, a cluster's neither: the link would set them to nothing).
    Without the cluster, two clusters' nodes of one name would both be drawn."""
    variables = {settings.cluster_label: conventions.CLUSTER_VARIABLE, settings.host_label: settings.host_label, "gpu": "gpu"}
    return tuple((variables[label], label) for label in settings.scope_labels(fm.scope) if label in variables)


def _alert_rule(view: ModeView, spec, expr: str, summary: str, description: str, workload_from: str,
                settings: Settings) -> Rule:
    fm = view.fm
    severity = view.severity(spec.severity)
    identity = fm.group in IDENTITY_GROUPS
    if fm.scope == "gpu" and not identity:
        expr = _with_workload(expr, workload_from, settings)
    if identity and fm.scope == "gpu" and workload_from:
        summary, description = (_naming_job(text, workload_from, settings) for text in (summary, description))
    labels = {**dict(settings.extra_labels), "severity": severity, "failure_mode": fm.id, "action": spec.action}
    annotations = {
        "summary": summary,
        "description": description,
        "runbook_url": conventions.runbook_url(settings.runbook_base_url, fm.id),
        "dashboard_url": conventions.dashboard_url(settings.grafana_base_url, fm.group, _dashboard_variables(fm, settings),
                                                   conventions.failure_mode_panel_id(view.index_in_group)),
    }
    return Rule(
        alert=conventions.alert_name(fm.id, spec.severity, len(fm.alerts)), expr=expr,
        for_seconds=view.for_seconds(spec),
        keep_firing_for_seconds=settings.keep_firing_for if identity else 0,
        labels=tuple(sorted(labels.items())), annotations=tuple(sorted(annotations.items())), failure_mode=fm.id,
        source=spec.where)


def _cover_conditions(fm: FailureMode, severity: str, catalog: Catalog, settings: Settings,
                      resolved: Resolved) -> list[tuple[str, str]]:
    """(on-labels, ALERTS condition) pairs, one per way a failure mode that `covers` fm (catalog) can be
    pending or firing on the same GPU. Covers of some of fm's alerts match on fm.cover_label
    (baseline_deviation: signal; dcgm_health: the DCGM code). A covering mode that also alerts less
    severely counts only with its alerts at least as severe as this one (rulesgen/builders/covers.py)."""
    groups = covers.covering(fm, catalog)
    on = promql.by(settings.gpu_identity)

    def alerts(sources):
        plain, filtered = [], {}
        for source in sources:
            allowed = covers.strong_enough(resolved.mode(source), severity)
            if allowed is None:
                plain.append(source)
            elif allowed:
                filtered.setdefault(allowed, []).append(source)
        parts = [f'ALERTS{{alertstate=~"pending|firing", failure_mode=~"{"|".join(sorted(plain))}"}}'] if plain else []
        parts += [f'ALERTS{{alertstate=~"pending|firing", failure_mode=~"{"|".join(sorted(ms))}", severity=~"{"|".join(sev)}"}}'
                  for sev, ms in sorted(filtered.items())]
        return " or ".join(parts)

    out = []
    per_value = [(g, alerts(g.sources)) for g in sorted(groups, key=lambda g: g.value) if g.value]
    per_value = [(g, a) for g, a in per_value if a]
    if per_value:
        label = per_value[0][0].label
        out.append((f"{on}, {label}", "(\n  " + "\n  or ".join(
            f'label_replace({a}, "{label}", "{g.value}", "", "")' for g, a in per_value) + "\n)"))
    whole = next((g for g in groups if not g.value), None)
    if whole is not None:
        a = alerts(whole.sources)
        if a:
            out.append((on, a if " or " not in a else f"({a})"))
    return out


def _unless_covered(expr: str, conditions: list[tuple[str, str]]) -> str:
    """One alert per fault: quiet while a failure mode that covers this one is pending or firing on the
    same GPU, e.g. the HBM-temperature baseline while memory_overheat holds."""
    if not expr or not conditions:
        return expr
    return f"(\n{_indent(expr.strip(), 2)}\n)" + "".join(f"\nunless on ({on}) {cond}" for on, cond in conditions)


def _held_while_silenced(expr: str, alertname: str, conditions: list[tuple[str, str]], rule_labels) -> str:
    """A firing identity alert stays firing while an alert that inhibits it in Alertmanager (conditions:
    its subject's gpu_lost or exporter_down, a covering failure mode) is pending or firing. Its inputs
    vanish or it is `unless`-ed then, and an alert that resolves while inhibited never gets its RESOLVED
    sent (Alertmanager drops a muted notification; prometheus/alertmanager#2754): the page would stay
    open. Held, it resolves only after what silenced it, its RESOLVED unmuted. It reads its own ALERTS
    series, so it never starts this way; without the labels the rule sets (and vmalert's alertgroup), whose
    copies would make a second series of the same alert beside the expression's own."""
    if not expr or not conditions:
        return expr
    own = _own_firing(alertname, rule_labels)
    held = "\nor ".join(f"{own}\n  and on ({on}) {_indent(cond, 2).strip()}" for on, cond in conditions)
    return f"(\n{_indent(expr.strip(), 2)}\n)\nor (\n{_indent(held, 2)}\n)"


def _own_firing(alertname: str, rule_labels) -> str:
    """The alert's own firing series with the labels the rule sets (and vmalert's alertgroup) dropped, so that
    `or`-ing it to the expression continues the same identity instead of making a second series."""
    dropped = promql.by(("alertname", "alertstate", "alertgroup", *rule_labels))
    return f'max without ({dropped}) (ALERTS{{alertname="{alertname}", alertstate="firing"}})'


def _persisting(expr: str, alertname: str, condition: str, rule_labels) -> str:
    """A fault with no natural end (a GPU off the bus) pages until it ends, not until the expression's
    memory of it does: the firing alert stays firing while `condition` (catalog persists:, continuing its
    own ALERTS series) holds. It reads its own ALERTS, so it never starts this way; its cost is one series
    per firing alert, however long the fault has lasted."""
    if not expr or not condition.strip():
        return expr
    held = f"{_own_firing(alertname, rule_labels)}\n{condition.strip()}"
    return f"(\n{_indent(expr.strip(), 2)}\n)\nor (\n{_indent(held, 2)}\n)"


def _silence_conditions(fm: FailureMode, catalog: Catalog, settings: Settings) -> list[tuple[str, str]]:
    """(on-labels, ALERTS condition) of the failure modes whose alert silences fm's subject in Alertmanager
    (catalog/alertmanager.yaml silences: gpu_lost a GPU, exporter_down a node)."""
    scopes = {"gpu": settings.gpu_identity, "node": settings.node_labels}
    applies = {"gpu": ("gpu", "node"), "node": ("node",)}.get(fm.scope, ())
    return [(promql.by(scopes[s.scope]), f'ALERTS{{alertstate=~"pending|firing", failure_mode="{s.failure_mode}"}}')
            for s in catalog.routing.silences if s.scope in applies and s.failure_mode != fm.id]


def _with_workload(expr: str, workload_from: str, settings: Settings) -> str:
    """Attach namespace/pod of the job on the GPU (when there is one) so the alert names the job.
    gpu:dcgm_workload:info has one series per reporting GPU, so the join drops nothing."""
    on = promql.by(settings.gpu_identity)
    wl = promql.by(settings.workload_labels)
    inner = _indent(expr.strip(), 2)
    return f"(\n{inner}\n)\n* on ({on}) group_left ({wl}) {workload_from}"


def _naming_job(text: str, workload_from: str, settings: Settings) -> str:
    """An identity alert names the job on its GPU in its annotations, not its labels (a pod deleted or
    rescheduled must not resolve the alert or open a second one): when the template reads $job, it is
    prefixed with a query of workload_from for this GPU (its identity matchers added to every selector),
    whose first answer's labels become $job ($job.namespace, $job.pod; empty when no pod holds it).
    Prometheus and vmalert expand annotations with `query` at every evaluation, so the annotation
    follows the job while the label set stays."""
    var = conventions.JOB_VARIABLE
    if var + "." not in text:
        return text
    marker = "\x00"
    query = promql_print.with_matchers(workload_from, lambda s: [f"{label}={marker}" for label in settings.gpu_identity])
    query = query.replace("%", "%%").replace(marker, "%q")
    args = " ".join(f'(index $labels "{label}")' for label in settings.gpu_identity)
    return (f"{{{{ {var} := $labels }}}}{{{{ with query (printf `{query}` {args}) }}}}"
            f"{{{{ {var} = (index . 0).Labels }}}}{{{{ end }}}}{text}")


def _indent(text: str, n: int) -> str:
    return "\n".join((" " * n + line) if line else line for line in text.splitlines())


def _check_placed(marked: Marked, where, errors: Collector, what: str) -> None:
    """Each threshold of an expression that parses stands apart in its tree (Marked.unplaced)."""
    problem = marked.thresholds and not promql_tree.problems(marked.filled()) and marked.unplaced()
    if problem:
        errors.add(where, "threshold-placement", f"{what}: {problem}")


def _check_expr(expr, where, errors: Collector, what, recorded, known_metrics, required: bool = False,
                body=(None, "")) -> None:
    """Report what would make the rule fail to load, by its catalog position (an unknown name on the line of
    its template that names it: body = (the literal block's first line, the template)). An empty expression
    is a problem only where one is required and its template rendered (a template error is reported)."""
    if not expr:
        if required:
            errors.add(where, "promql-syntax", f"{what}: empty expression")
        return
    problems = promql.syntax_problems(expr) or promql_tree.problems(expr)
    for problem in problems:
        errors.add(where, "promql-syntax", f"{what}: {problem}")
    if problems:
        return
    for name in sorted(set(promql_tree.recorded_names(expr)) - recorded):
        errors.add(where_in(where, *body, name), "unknown-signal", f"{what}: unknown recording rule {name!r}{did_you_mean(name, recorded)}")
    exporter = {n for n in promql_tree.metric_names(expr) if n.startswith(METRIC_PREFIXES)}
    for name in sorted(exporter - known_metrics):
        errors.add(where_in(where, *body, name), "unknown-metric", f"{what}: unknown metric {name!r}{did_you_mean(name, known_metrics)}")
