"""Fleet SLOs -> recording rules and burn-rate alerts (alerts/prometheus/slos.yaml; docs/slos.md).

The GPU capacity SLI is an exact ratio of counted GPU-minutes, never an average of ratios: at every
evaluation each GPU of the inventory adds one to the total and, when bad, one to the bad count; a window's
ratio is the bad count summed over the window over the total summed over it. Windows under a day sum the
per-evaluation counts; a day or more sums hourly sums (a 30-day window is 720 samples a series, not 43,200:
promtool's 10,000-sample limit and a real server's cost). A GPU is bad while a drain-class alert fires on it,
or its gpu_lost alert, or its node's exporter_down alert: those alerts' own `for:` absorbs a missed scrape or
an exporter restart, so a restart spends nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..durations import format_duration
from ..load import jobmetrics
from ..load.settings import Settings
from ..model import conventions, kube_state, training_operator
from ..model.catalog import Catalog
from ..model.output import Rule, RuleFile, RuleGroup
from ..model.slos import ALERT_CLASSES, SLO_FAILURE_MODE, Slo, absent_alert_name, alert_name, effective
from ..promql.text import by, format_number
from .metric_selectors import selector

RULE_FILE = conventions.rule_file("slos")
DAY = 86400
HOUR = 3600
# The alerts whose subjects leave the inventory only when they resolve: a lost GPU, a node's exporter down.
LOST_GPU, DOWN_NODE = "gpu_lost", "exporter_down"
GHOST_LOSS = "ghost_loss"  # training_time reports the GPU-minutes of jobs while it fires
# training_time: a job that made no new step for this long is stalled. Longer than the slowest step of a
# large model (tens of seconds), a 60 s scrape missed twice, or a checkpoint saved asynchronously; a pause
# longer than this (a synchronous checkpoint, an evaluation pass, a hang) counts from its first minute on.
STALL_WINDOW = 300
# How long a job's high-water step is remembered: a restart from a checkpoint older than this, or a job gone
# for longer, is counted as a new run (docs/slos.md).
HIGH_WATER_WINDOW = 6 * HOUR
# job_success: how long a Job seen running, or seen finished, is remembered. A Job counts when it finishes after
# being seen running within this time; one seen finished within it is not counted again (a kube-state-metrics
# restart or gap).
FINISH_MEMORY = 6 * HOUR
# How far back a backfill looks for a lost GPU's last report and driver: the live rules remember them for as long
# as an alert holds the GPU; a backfill cannot read its own past, so a GPU lost for longer leaves its count.
BACKFILL_MEMORY = DAY


def active_slos(catalog: Catalog, settings: Settings) -> tuple[Slo, ...]:
    specs = {s.id: s for s in catalog.slos}
    return tuple(effective(specs[u.id], catalog.burn_tiers, u, settings.cluster_label) for u in settings.slos if u.id in specs)


def build_slo_file(catalog: Catalog, settings: Settings) -> RuleFile | None:
    slos = active_slos(catalog, settings)
    if not slos:
        return None
    modes = {fm.id for fm in catalog.failure_modes}
    groups = []
    for slo in slos:
        if slo.id == "training_time":
            counts = _training_time(slo, settings, catalog.named("workload"), catalog.named("tensor_active_per_gpu"),
                                    GHOST_LOSS in modes)
        elif slo.id == "job_success":
            counts = _job_success(slo, settings)
        else:
            counts = _gpu_capacity(slo, settings, modes, catalog.named("reporting"), _driver_of_each_gpu(catalog, settings),
                                   _driver_of_each_gpu(catalog, settings, remembered=True))
        fast, hourly = _budget(slo, settings, counts)
        groups += [RuleGroup(f"{conventions.GROUP_PREFIX}-slo-{slo.id.replace('_', '-')}", fast, settings.evaluation_interval),
                   RuleGroup(f"{conventions.GROUP_PREFIX}-slo-{slo.id.replace('_', '-')}-hourly", hourly, HOUR)]
    return RuleFile(path=RULE_FILE, groups=tuple(groups),
                    description="Fleet SLOs: good and bad minutes, burn rates, error budgets and burn-rate alerts.")


@dataclass(frozen=True)
class Breakdown:
    """The bad count split by one cause: a record of the count per group and cause, each evaluation."""
    dimension: str  # the spent_by_<dimension> record's suffix: failure_mode, node, model, reason, job
    key: str  # its role in names()
    labels: tuple[str, ...]  # the labels that name the cause, beside the SLO's group


@dataclass(frozen=True)
class Counts:
    """What an SLI counts at each evaluation: its records up to the total and bad counts (names() "total",
    "bad") and the breakdowns of the bad count; the rest (ratios, budget, alerts) is the same for every SLI."""
    rules: tuple[Rule, ...]
    breakdowns: tuple[Breakdown, ...]
    absent: Rule
    spending: Breakdown  # the breakdown the burn alerts' text lists
    # Report-only indicators beside the SLI (no alert reads them): their records, and the names() keys of those
    # the hourly group sums.
    report: tuple[Rule, ...] = ()
    report_hourly: tuple[str, ...] = ()


def names(slo: Slo) -> dict[str, str]:
    """The records of an SLO, by role."""
    s = slo.id
    hourly = conventions.HOURLY_SUM_OPERATION
    out = {"total": f"slo:{s}_total:count", "bad": f"slo:{s}_bad:count",
           "total_1h": f"slo:{s}_total:{hourly}", "bad_1h": f"slo:{s}_bad:{hourly}",
           "remaining": f"slo:{s}_error_budget:remaining", "exhaustion": f"slo:{s}_error_budget:exhaustion_seconds"}
    if slo.spec.scope == "job":
        out.update({"step": "job:training_step:max", "gpus": f"job:slo_{s}:gpus", "seen_at": f"job:slo_{s}:seen_at",
                    "productive": f"job:slo_{s}:productive", "missed": f"job:slo_{s}:missed_evaluations",
                    "job_total": f"job:slo_{s}_total:count", "job_bad": f"job:slo_{s}_bad:count",
                    "cause": f"job:slo_{s}_bad:reason", "redo": "job:training_redo:steps",
                    "at_risk": "job:training_progress_at_risk:steps",
                    "by_reason": f"slo:{s}_bad_by_reason:count",
                    "tensor": "job:training_tensor_active:avg", "ghost": f"job:slo_{s}_ghost_loss:gpus",
                    "ghost_count": f"slo:{s}_ghost_loss:count", "ghost_share": f"slo:{s}_ghost_loss:ratio_{period(slo)}"})
    elif slo.spec.scope == "kube_job":
        out.update({"gpus": "job:kube_job_gpus:sum", "running": "job:kube_job_running:gpu",
                    "finished": "job:kube_job_finished:outcome", "new": f"job:slo_{s}:finished",
                    "operator": "namespace:training_operator_jobs_finished:count",
                    "by_namespace": f"slo:{s}_bad_by_namespace:count",
                    "pending": "namespace:kube_pending_gpus:sum", "oldest": "namespace:kube_pending_gpu_pod:oldest_seconds",
                    "waited": f"namespace:kube_pending_gpus:gpu_hours_{period(slo)}"})
    else:
        out.update({"inventory": f"gpu:slo_{s}:inventory", "cause": f"gpu:slo_{s}_bad:cause",
                    "by_mode": f"slo:{s}_bad_by_failure_mode:count", "by_node": f"node:slo_{s}_bad:count",
                    "by_model": f"model:slo_{s}_bad:count", "driver": f"gpu:slo_{s}:driver",
                    "driver_now": f"gpu:slo_{s}:driver_reported",
                    "by_driver": f"slo:{s}_bad_by_driver:count",
                    "interruptions": f"model:slo_{s}_interruptions:count", "model_total": f"model:slo_{s}_total:count",
                    "per_1000": f"model:slo_{s}_interruptions:per_1000_gpu_days"})
    for key in [k for k in out if k.startswith("by_") or k in ("job_bad", "interruptions", "model_total", "ghost_count",
                                                               "pending")]:
        out[f"{key}_1h"] = out[key].rsplit(":", 1)[0] + f":{hourly}"
    return out


def period(slo: Slo) -> str:
    return format_duration(slo.period)


def spent_record(slo: Slo, dimension: str) -> str:
    """The share of the period's error budget spent by each value of `dimension` (failure_mode, node, model)."""
    return f"slo:{slo.id}_error_budget:spent_by_{dimension}"


def ratio_record(slo: Slo, seconds: int) -> str:
    return f"slo:{slo.id}:ratio_{format_duration(seconds)}"


def windows(slo: Slo) -> list[int]:
    """Every window a burn tier of the SLO reads, shortest first."""
    return sorted({w for tier, _ in slo.tiers for w in (tier.long, tier.short)})


def _driver_of_each_gpu(catalog: Catalog, settings: Settings, remembered: bool = False) -> str | None:
    """One series per GPU (cluster, UUID) with its driver version as `driver`, from the catalog's inventory metric
    under whichever of the driver field's label names the exporter uses (4.9 renamed it); None when the catalog
    names no driver field. topk: while a driver is replaced, the old series stay for the lookback. remembered:
    the driver each GPU reported last within BACKFILL_MEMORY (the backfill's stand-in for the driver memory)."""
    if catalog.named("driver_version") is None or catalog.named("inventory") is None:
        return None
    expr = selector(catalog.metric(catalog.named("inventory")), settings.selector)
    for name in reversed(catalog.metric(catalog.named("driver_version")).names):
        expr = f'label_replace({expr}, "driver", "$1", "{name}", "(.+)")'
    key = by((settings.cluster_label, "UUID"))
    if remembered:
        last = (f"last_over_time(max by ({key}, driver) (timestamp({expr}))"
                f"[{format_duration(BACKFILL_MEMORY)}:{format_duration(settings.evaluation_interval)}])")
        return f"topk by ({key}) (1, {last})"
    return f"topk by ({key}) (1, group by ({key}, driver) ({expr}))"


def _gpu_capacity(slo: Slo, settings: Settings, modes: set[str], reporting: str, driver: str | None,
                  driver_remembered: str | None) -> Counts:
    """reporting: the record with one series per reporting GPU (catalog role `reporting`); driver: each GPU's
    driver version (_driver_of_each_gpu), for the budget spent by driver. The two memories (a lost GPU stays in
    the inventory, with its driver) read their own past; their backfill forms read the stored series instead:
    a GPU that reported within BACKFILL_MEMORY while an alert names it."""
    n = names(slo)
    gpu, node, ident = by(settings.gpu_labels), by(settings.node_labels), by(settings.gpu_identity)
    group = by(slo.group_by)
    kept = []  # the lost subjects the inventory remembers
    if LOST_GPU in modes:
        kept.append(f'and on ({ident}) group by ({ident}) (ALERTS{{failure_mode="{LOST_GPU}"}})')
    if DOWN_NODE in modes:
        kept.append(f'and on ({node}) group by ({node}) (ALERTS{{failure_mode="{DOWN_NODE}"}})')
    def reporting_or_kept(held: str) -> str:
        """The reporting GPUs, and those of `held` while an alert names them (kept)."""
        return f"group by ({gpu}) ({reporting})" + "".join(f"\nor (\n  {held}\n    {k}\n)" for k in kept)
    inventory = reporting_or_kept(f"last_over_time({n['inventory']}[10m] offset 1s)")
    inventory_backfill = reporting_or_kept(f"group by ({gpu}) (last_over_time({reporting}[{format_duration(BACKFILL_MEMORY)}]))")
    cause = (f'group by ({ident}, failure_mode) (ALERTS{{alertstate="firing", action="drain"}})\n'
             f"  * on ({ident}) group_left ({_extra(settings.gpu_labels, settings.gpu_identity)}) {n['inventory']}")
    if DOWN_NODE in modes:
        cause += (f"\nor {n['inventory']}\n  * on ({node}) group_left (failure_mode) group by ({node}, failure_mode) "
                  f'(ALERTS{{alertstate="firing", failure_mode="{DOWN_NODE}"}})')
    per_node = by(dict.fromkeys((*slo.group_by, settings.host_label)))
    per_model = by(dict.fromkeys((*slo.group_by, "modelName")))
    bad_gpus = f"group by ({gpu}) ({n['cause']})"
    rules = (
        Rule(record=n["inventory"], expr=inventory, backfill_expr=inventory_backfill),
        Rule(record=n["cause"], expr=cause),
        Rule(record=n["total"], expr=f"count by ({group}) ({n['inventory']})"),
        Rule(record=n["bad"], expr=f"count by ({group}) ({bad_gpus})\nor {n['total']} * 0"),
        Rule(record=n["by_mode"], expr=f"count by ({group}, failure_mode) ({n['cause']})"),
        Rule(record=n["by_node"], expr=f"count by ({per_node}) ({bad_gpus})"),
        Rule(record=n["by_model"], expr=f"count by ({per_model}) ({bad_gpus})"),
    )
    by_mode = Breakdown("failure_mode", "by_mode", ("failure_mode",))
    breakdowns = (by_mode, Breakdown("node", "by_node", (settings.host_label,)), Breakdown("model", "by_model", ("modelName",)))
    if driver is not None:
        # A GPU's driver, remembered while the GPU stays in the inventory after it stops reporting (lost GPUs).
        per_uuid = by((settings.cluster_label, "UUID"))
        now = f"group by ({ident}, driver) (\n  {n['inventory']}\n  * on ({per_uuid}) group_left (driver) {driver}\n)"

        def reported_or(held: str) -> str:
            """The driver each GPU reports now, else the one `held` for it."""
            return f"{n['driver_now']}\nor (\n  {held}\n    unless on ({ident}) {n['driver_now']}\n)"
        rules += (Rule(record=n["driver_now"], expr=now),
                  Rule(record=n["driver"],
                       expr=reported_or(f"last_over_time({n['driver']}[10m] offset 1s)\n    and on ({ident}) {n['inventory']}"),
                       backfill_expr=reported_or(f"group by ({ident}, driver) (\n    {n['inventory']}\n"
                                                 f"    * on ({per_uuid}) group_left (driver) {driver_remembered}\n  )")),
                  Rule(record=n["by_driver"], expr=f"count by ({by(dict.fromkeys((*slo.group_by, 'driver')))}) (\n"
                                                   f"  {bad_gpus}\n  * on ({ident}) group_left (driver) {n['driver']}\n)"))
        breakdowns += (Breakdown("driver", "by_driver", ("driver",)),)
    # Report only: interruptions per 1,000 GPU-days by model. A GPU counts once when a hardware cause starts to
    # hold it (a drain-class alert, gpu_lost; not its node's exporter down): it had none at the last evaluation.
    hardware = f'{n["cause"]}{{failure_mode!="{DOWN_NODE}"}}'
    onsets = (f"group by ({gpu}) ({hardware})\n  unless on ({ident}) group by ({ident}) "
              f"({hardware} offset {format_duration(settings.evaluation_interval)})")
    report = (
        Rule(record=n["model_total"], expr=f"count by ({per_model}) ({n['inventory']})"),
        Rule(record=n["interruptions"], expr=f"count by ({per_model}) (\n  {onsets}\n)\nor {n['model_total']} * 0"),
        Rule(record=n["per_1000"], expr=f"sum_over_time({n['interruptions_1h']}[{period(slo)}])\n"
                                        f"/ sum_over_time({n['model_total_1h']}[{period(slo)}])\n"
                                        f"* {format_number(1000 * DAY / settings.evaluation_interval)}"),
    )
    return Counts(rules, breakdowns, _absent_alert(slo, settings, n), by_mode, report, ("interruptions", "model_total"))


def _finite(selector: str) -> str:
    """The samples that are a step count: one +Inf would be every later step's high-water for HIGH_WATER_WINDOW
    (all of it re-done), one NaN a job neither moving nor stalled. Without them the job is unseen at that
    evaluation, and counted once, as a restart, when it is seen again."""
    return f"{selector} >= 0 < Inf"


def _training_time(slo: Slo, settings: Settings, workload: str, tensor: str | None, ghost_loss: bool) -> Counts:
    """Effective training time (ETTR): a job's GPU-minutes in which it advanced past every step it had
    reached before (its high-water), over its GPU-minutes in the fleet. Re-doing steps after a restart from
    a checkpoint, or making no new step for STALL_WINDOW, is unproductive; the evaluations a job was gone in
    between two sightings (a crash and its restart) are added, as unproductive, when it comes back. A job
    that ends is not counted after its end. workload: the record of the pod on each GPU (catalog role); tensor: each
    GPU's tensor-pipe activity (catalog role), the job's program goodput proxy; ghost_loss: whether to report the
    GPU-minutes of jobs under a ghost-loss alert."""
    n = names(slo)
    ctx = jobmetrics.context(settings)
    job = by((settings.cluster_label, settings.namespace_label, "workload"))
    group = by(slo.group_by)
    step_every = format_duration(settings.evaluation_interval)
    stall = format_duration(max(STALL_WINDOW, 2 * settings.evaluation_interval))
    memory = format_duration(HIGH_WATER_WINDOW)
    high_water = f"max_over_time({n['step']}[{memory}] offset {stall})"
    pods = by((settings.cluster_label, settings.namespace_label, settings.pod_label))
    gpus = (f"count by ({job}) (\n  {workload}{{{settings.pod_label}!=\"\"}}\n"
            f"    and on ({pods}) group by ({pods}) ({ctx['step']})\n)\n"
            f"or count by ({job}) ({ctx['step']})")
    productive = f"{n['step']} > bool ({high_water} or {n['step']} * 0 - 1)"
    missed = (f"(time() - last_over_time({n['seen_at']}[{memory}] offset {step_every})) / {settings.evaluation_interval} - 1 > 0")
    moved = f"max_over_time({n['step']}[{stall}]) > bool min_over_time({n['step']}[{stall}])"
    behind = f"{n['gpus']} * on ({job}) ({n['productive']} == bool 0)"
    reasons = (f'label_replace({behind} * on ({job}) ({moved}) > 0, "reason", "redo", "", "")\n'
               f'or label_replace({behind} * on ({job}) (1 - ({moved})) > 0, "reason", "stalled", "", "")\n'
               f'or label_replace({n["missed"]} * on ({job}) {n["gpus"]}, "reason", "restart", "", "")')
    rules = (
        Rule(record=n["step"], expr=f"max by ({job}) ({_finite(ctx['step'])})"),
        Rule(record=n["gpus"], expr=gpus),
        Rule(record=n["productive"], expr=productive),
        Rule(record=n["missed"], expr=missed),
        Rule(record=n["seen_at"], expr=f"{n['step']} * 0 + time()"),
        Rule(record=n["cause"], expr=reasons),
        Rule(record=n["job_total"], expr=f"{n['gpus']} * (1 + ({n['missed']} or {n['gpus']} * 0))"),
        Rule(record=n["job_bad"], expr=f"sum by ({job}) ({n['cause']})\nor {n['job_total']} * 0"),
        Rule(record=n["total"], expr=f"sum by ({group}) ({n['job_total']})"),
        Rule(record=n["bad"], expr=f"sum by ({group}) ({n['job_bad']})"),
        Rule(record=n["by_reason"], expr=f"sum by ({group}, reason) ({n['cause']})"),
        Rule(record=n["redo"], expr=f"{high_water} - {n['step']} > 0"),
        Rule(record=n["at_risk"], expr=f"{n['step']} - max by ({job}) ({_finite(ctx['checkpoint_step'])}) >= 0"),
    )
    by_reason = Breakdown("reason", "by_reason", ("reason",))
    breakdowns = (by_reason, Breakdown("job", "job_bad", (settings.namespace_label, "workload")))
    report, hourly = (), ()
    if tensor is not None:  # program goodput proxy: the job's GPUs' mean tensor-pipe activity
        ident = by(settings.gpu_identity)
        owner = by((settings.namespace_label, "workload"))
        report += (Rule(record=n["tensor"], expr=(
            f"avg by ({job}) (\n  {tensor}\n  * on ({ident}) group_left ({owner})\n"
            f"    group by ({ident}, {owner}) ({workload}{{{settings.pod_label}!=\"\"}})\n)\nand on ({job}) {n['gpus']}")),)
    if ghost_loss:  # a lower bound of the time trained on corrupted state: from detection on
        report += (
            Rule(record=n["ghost"], expr=(f"{n['gpus']}\nand on ({job}) group by ({job}) "
                                          f'(ALERTS{{alertstate="firing", failure_mode="{GHOST_LOSS}"}})')),
            Rule(record=n["ghost_count"], expr=f"sum by ({group}) ({n['ghost']})\nor {n['total']} * 0"),
            Rule(record=n["ghost_share"], expr=(f"sum_over_time({n['ghost_count_1h']}[{period(slo)}])\n"
                                                f"/ sum_over_time({n['total_1h']}[{period(slo)}])")))
        hourly = ("ghost_count",)
    return Counts(rules, breakdowns, _job_absent_alert(slo, settings, n, job, workload), by_reason, report, hourly)


def _job_success(slo: Slo, settings: Settings) -> Counts:
    """Job success (M9): finished GPU Jobs that succeeded over all finished, from kube-state-metrics. A Job
    counts once, at the evaluation its Complete or Failed condition appears, if it was seen running (active
    pods that request GPUs) within FINISH_MEMORY before: the Jobs Kubernetes still keeps when the rules are
    deployed are not counted, and a kube-state-metrics restart (new series, a gap) counts nothing again."""
    n = names(slo)
    cluster, ns, name = settings.cluster_label, kube_state.NAMESPACE, kube_state.JOB_LABEL
    job = by((cluster, ns, name))
    pod = by((cluster, ns, "pod"))
    group = by(slo.group_by)
    memory = format_duration(FINISH_MEMORY)
    step_every = format_duration(settings.evaluation_interval)
    gpus = (f'sum by ({job}) (\n  label_replace(sum by ({pod}) ({kube_state.REQUESTS}{{resource="{kube_state.GPU_RESOURCE}"}})\n'
            f'    * on ({pod}) group_left (owner_name) max by ({pod}, owner_name) ({kube_state.POD_OWNER}{{owner_kind="Job"}}),\n'
            f'  "{name}", "$1", "owner_name", "(.+)")\n) > 0')
    finished = (f'label_replace(max by ({job}) ({kube_state.JOB_COMPLETE}{{condition="true"}} == 1), "outcome", "succeeded", "", "")\n'
                f'or label_replace(max by ({job}) ({kube_state.JOB_FAILED}{{condition="true"}} == 1), "outcome", "failed", "", "")')
    new = (f"{n['finished']}\nunless on ({job}) max_over_time({n['finished']}[{memory}] offset {step_every})\n"
           f"and on ({job}) max_over_time({n['running']}[{memory}] offset {step_every})")
    def both(grouping: str, outcome: str = "") -> str:
        """The Kubernetes Jobs and the training operator's jobs that finished at this evaluation, summed; the
        source label keeps the two apart in the `or`."""
        only = f'{{outcome="{outcome}"}}' if outcome else ""
        return (f'sum by ({grouping}) (\n  label_replace(count by ({grouping}) ({n["new"]}{only}), "source", "job", "", "")\n'
                f'  or label_replace(sum by ({grouping}) ({n["operator"]}{only}), "source", "operator", "", "")\n)')

    rules = (
        Rule(record=n["gpus"], expr=gpus),
        Rule(record=n["running"], expr=f"max by ({job}) ({kube_state.JOB_ACTIVE} > 0) and on ({job}) {n['gpus']}"),
        Rule(record=n["finished"], expr=finished),
        Rule(record=n["new"], expr=new),
        Rule(record=n["operator"], expr=_operator_finished(settings)),
        Rule(record=n["total"], expr=both(group)),
        Rule(record=n["bad"], expr=f'{both(group, "failed")}\nor {n["total"]} * 0'),
        Rule(record=n["by_namespace"], expr=both(by(dict.fromkeys((*slo.group_by, ns))), "failed")),
    )
    by_namespace = Breakdown("namespace", "by_namespace", (ns,))
    # Report only: the GPU queue (M12), per namespace: GPUs requested by pending pods, the longest wait now, and
    # the GPU-hours waited over the period.
    per_ns = by((cluster, ns))
    requests = f'sum by ({pod}) ({kube_state.REQUESTS}{{resource="{kube_state.GPU_RESOURCE}"}})'
    pending = f'max by ({pod}) ({kube_state.POD_PHASE}{{phase="Pending"}} == 1)'
    report = (
        Rule(record=n["pending"], expr=f"sum by ({per_ns}) (\n  {requests}\n  * on ({pod}) group_left () {pending}\n)"),
        Rule(record=n["oldest"], expr=(f"max by ({per_ns}) (\n  time() - max by ({pod}) ({kube_state.POD_CREATED})\n"
                                       f"  and on ({pod}) {requests} > 0\n  and on ({pod}) {pending}\n)")),
        Rule(record=n["waited"], expr=(f"sum_over_time({n['pending_1h']}[{period(slo)}])\n"
                                       f"/ {format_number(HOUR / settings.evaluation_interval)}")),
    )
    return Counts(rules, (by_namespace,), _kube_absent_alert(slo, settings, n), by_namespace, report, ("pending",))


def _operator_finished(settings: Settings) -> str:
    """The Kubeflow training operator's jobs that finished at this evaluation, per namespace and outcome: each
    counter's increase since the last evaluation (a reset, the operator restarted, counts nothing). A counter
    series seen for the first time counts its value when the operator was already scraped at the last
    evaluation (its first job of a namespace and framework), and nothing when it was not (Prometheus has just
    begun to scrape an operator that has run for months)."""
    cluster, before = settings.cluster_label, f"offset {format_duration(settings.evaluation_interval)}"
    target = by((cluster, "instance"))
    seen = f'group by ({target}) ({{__name__=~"{training_operator.ANY}"}} {before})'
    per_ns = by((cluster, training_operator.NAMESPACE))
    parts = []
    for counter, outcome in ((training_operator.SUCCEEDED, "succeeded"), (training_operator.FAILED, "failed")):
        increase = (f"({counter} - {counter} {before} >= 0)\n"
                    f"      or ({counter} unless {counter} {before}) and on ({target}) {seen}")
        parts.append(f'label_replace(sum by ({per_ns}) (\n      {increase}\n    ) > 0, "outcome", "{outcome}", "", "")')
    return (f"sum by ({by((cluster, kube_state.NAMESPACE, 'outcome'))}) (\n  label_replace(\n    "
            + "\n    or ".join(parts)
            + f',\n    "{kube_state.NAMESPACE}", "$1", "{training_operator.NAMESPACE}", "(.*)")\n)')


def _cluster_counted_lately_unless(settings: Settings, n: dict, present: str) -> str:
    """The clusters the SLO counted within the day that have no series of `present` now."""
    cluster = settings.cluster_label
    return (f"group by ({cluster}) (max_over_time({n['total_1h']}[1d]))\n"
            f"unless on ({cluster}) group by ({cluster}) ({present})")


def _kube_absent_alert(slo: Slo, settings: Settings, n: dict) -> Rule:
    """A cluster whose GPU Jobs finished within the day has no kube-state-metrics Job series now."""
    cluster = settings.cluster_label
    return _absent_rule(
        slo, settings, expr=_cluster_counted_lately_unless(settings, n, kube_state.JOB_ACTIVE),
        summary=f"{{{{ $labels.{cluster} }}}}: {slo.spec.title} SLO has lost its input: no Kubernetes Job is seen",
        description=(f"{kube_state.JOB_ACTIVE} has no series for cluster {{{{ $labels.{cluster} }}}}, where GPU Jobs finished "
                     f"within the day: kube-state-metrics is not scraped there any more, so the {slo.spec.title} SLO "
                     "counts nothing. Check its deployment and its ServiceMonitor."))


def _budget(slo: Slo, settings: Settings, counts: Counts) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
    """An SLI's counts -> its ratios over every window a tier reads, the error budget left and spent by
    cause, the burn alerts and the input-absent alert (the fast group); the hourly sums (the hourly group)."""
    n = names(slo)
    group = by(slo.group_by)
    fast = list(counts.rules) + list(counts.report)
    windows_read = windows(slo)
    for w in windows_read + ([slo.period] if slo.period not in windows_read else []):
        if w < DAY:
            expr = f"sum_over_time({n['bad']}[{format_duration(w)}])\n/ sum_over_time({n['total']}[{format_duration(w)}])"
        else:
            expr = _hourly_ratio(n, w)
        fast.append(Rule(record=ratio_record(slo, w), expr=expr))
    budget = format_number(slo.budget)
    period = format_duration(slo.period)
    # The budget spent over the period by cause: a subject bad for two causes counts in each.
    for b in counts.breakdowns:
        fast.append(Rule(record=spent_record(slo, b.dimension),
                         expr=f"sum_over_time({n[b.key + '_1h']}[{period}])\n/ on ({group}) group_left ()\n"
                              f"  (sum_over_time({n['total_1h']}[{period}]) * {budget})"))
    fast.append(Rule(record=n["remaining"], expr=f"1 - {ratio_record(slo, slo.period)} / {budget}"))
    fastest = min((t for t, _ in slo.tiers), key=lambda t: t.long, default=None)
    if fastest is not None:
        fast.append(Rule(record=n["exhaustion"],
                         expr=f"clamp_min({n['remaining']}, 0) * {slo.period}\n"
                              f"/ clamp_min({ratio_record(slo, fastest.long)} / {budget}, 0.001)"))
    fast += [_burn_alert(slo, settings, cls, counts.spending) for cls in ALERT_CLASSES if any(c == cls for _, c in slo.tiers)]
    fast.append(counts.absent)
    hourly = tuple(Rule(record=n[f"{key}_1h"], expr=f"sum_over_time({n[key]}[1h])")
                   for key in ("bad", "total", *(b.key for b in counts.breakdowns), *counts.report_hourly))
    return tuple(fast), hourly


def _extra(labels, identity) -> str:
    return by(label for label in labels if label not in identity)


def _hourly_ratio(n: dict, seconds: int) -> str:
    w = format_duration(seconds)
    return f"sum_over_time({n['bad_1h']}[{w}])\n/ sum_over_time({n['total_1h']}[{w}])"


def _burn_alert(slo: Slo, settings: Settings, cls: str, spending: Breakdown) -> Rule:
    budget = format_number(slo.budget)
    branches = []
    for tier, c in slo.tiers:
        if c != cls:
            continue
        factor = format_number(round(tier.factor(slo.period), 6))
        branches.append(f"(\n  {ratio_record(slo, tier.long)} / {budget} > {factor}\n"
                        f"  and {ratio_record(slo, tier.short)} / {budget} > {factor}\n)")
    tiers = ", ".join(f"{t.name} ({format_duration(t.long)} and {format_duration(t.short)} above "
                      f"{format_number(round(t.factor(slo.period), 2))}x)" for t, c in slo.tiers if c == cls)
    severity = "critical" if cls == "page" else "warning"
    labels = {**dict(settings.extra_labels), "severity": severity, "failure_mode": SLO_FAILURE_MODE,
              "action": "investigate", "slo": slo.id, "burn_tier": cls}
    scope = " ".join(f"{{{{ $labels.{label} }}}}" for label in slo.group_by)
    n = names(slo)
    selector = _selector(slo)
    args = " ".join(f"$labels.{label}" for label in slo.group_by)
    period = format_duration(slo.period)
    description = (
        f"{slo.spec.title} (objective {format_number(slo.objective)}% of {slo.spec.unit} over {period}) burns its error "
        f"budget {{{{ $value | printf \"%.1f\" }}}}x as fast as the objective allows (tiers: {tiers}). "
        f"{{{{ with query (printf `{n['exhaustion']}{selector}` {args}) }}}}At this rate the budget left is gone in "
        f"{{{{ . | first | value | humanizeDuration }}}}. {{{{ end }}}}"
        f"{{{{ with query (printf `{n['remaining']}{selector}` {args}) }}}}Budget left: "
        f"{{{{ . | first | value | humanizePercentage }}}}. {_policy(slo)}{{{{ end }}}}"
        f"Spending it now (by {spending.dimension.replace('_', ' ')}): "
        f"{{{{ range query (printf `sort_desc({n[spending.key]}{selector})` {args}) }}}}"
        + "/".join(f"{{{{ .Labels.{label} }}}}" for label in spending.labels) + " {{ .Value }}; {{ end }}")
    annotations = {
        "summary": f"{scope}: {slo.spec.title} SLO burning its error budget {{{{ $value | printf \"%.1f\" }}}}x too fast",
        "description": description,
        "runbook_url": conventions.runbook_url(settings.runbook_base_url, SLO_FAILURE_MODE),
        "dashboard_url": conventions.dashboard_url(settings.grafana_base_url, "fleet",
                                                   tuple((conventions.CLUSTER_VARIABLE, label) for label in slo.group_by
                                                         if label == settings.cluster_label)),
    }
    return Rule(alert=alert_name(slo, cls), expr="\nor ".join(branches), labels=tuple(sorted(labels.items())),
                annotations=tuple(sorted(annotations.items())), failure_mode=SLO_FAILURE_MODE)


def _policy(slo: Slo) -> str:
    """The catalog's budget policy as template text inside `with query (remaining)`: the tightest step whose
    threshold the budget left is under."""
    if not slo.spec.policy:
        return ""
    # a float literal: Go's templates refuse to compare a sample's float64 with an int (`lt 1.5 0`)
    branches = [f"{{{{ {'if' if i == 0 else 'else if'} lt (. | first | value) {float(below / 100)!r} }}}}"
                f"Budget policy ({'budget spent' if below == 0 else f'under {format_number(below)}% left'}): {advice} "
                for i, (below, advice) in enumerate(slo.spec.policy)]
    return "".join(branches) + "{{ end }}"


def _selector(slo: Slo) -> str:
    return "{" + ", ".join(f"{label}=%q" for label in slo.group_by) + "}"


def _absent_rule(slo: Slo, settings: Settings, expr: str, summary: str, description: str) -> Rule:
    """An SLO's input-absent alert: warning, investigate, held input_absent_for, the slo_burn runbook and the
    fleet dashboard; what is absent (expr and text) is the SLI's."""
    labels = {**dict(settings.extra_labels), "severity": "warning", "failure_mode": SLO_FAILURE_MODE,
              "action": "investigate", "slo": slo.id}
    annotations = {"summary": summary, "description": description,
                   "runbook_url": conventions.runbook_url(settings.runbook_base_url, SLO_FAILURE_MODE),
                   "dashboard_url": conventions.dashboard_url(settings.grafana_base_url, "fleet",
                                                              ((conventions.CLUSTER_VARIABLE, settings.cluster_label),))}
    return Rule(alert=absent_alert_name(slo), expr=expr, for_seconds=slo.spec.input_absent_for,
                labels=tuple(sorted(labels.items())), annotations=tuple(sorted(annotations.items())),
                failure_mode=SLO_FAILURE_MODE)


def _job_absent_alert(slo: Slo, settings: Settings, n: dict, job: str, workload: str) -> Rule:
    """A job that exported its steps within the day, whose pods hold GPUs now, exports none: the SLO is blind
    to it (its metrics endpoint, PodMonitor or selector broke, or a restart hangs before its first step)."""
    ns, pod = settings.namespace_label, settings.pod_label
    return _absent_rule(
        slo, settings,
        expr=(f"group by ({job}) ({workload}{{{pod}!=\"\"}})\n"
              f"and on ({job}) group by ({job}) (max_over_time({n['job_bad_1h']}[1d]))\n"
              f"unless on ({job}) {n['step']}"),
        summary=(f"{{{{ $labels.{ns} }}}}/{{{{ $labels.workload }}}}: {slo.spec.title} SLO has lost its input: "
                 "the job holds GPUs and exports no training step"),
        description=(f"Job {{{{ $labels.workload }}}} in {{{{ $labels.{ns} }}}} exported {settings.job_metrics.step} within "
                     "the day and its pods hold GPUs now, but no step reaches this evaluator: the "
                     f"{slo.spec.title} SLO cannot count it. Check the job's metrics endpoint and PodMonitor, and "
                     "whether a restart hangs before its first step."))


def _absent_alert(slo: Slo, settings: Settings, n: dict) -> Rule:
    """A cluster counted within the day whose inventory is gone: the SLO counts nothing there (its exporters'
    targets removed, a selector that no longer matches). pyrra's SLOMetricAbsent, per cluster."""
    cluster = settings.cluster_label
    return _absent_rule(
        slo, settings, expr=_cluster_counted_lately_unless(settings, n, n["total"]),
        summary=f"{{{{ $labels.{cluster} }}}}: {slo.spec.title} SLO has lost its input: no GPU is counted",
        description=(f"{n['total']} has no series for cluster {{{{ $labels.{cluster} }}}}, which had GPUs "
                     f"within the day: no GPU of it reaches this evaluator through dcgm-exporter, so the {slo.spec.title} "
                     "SLO counts nothing there and its burn alerts cannot fire. Check the exporters' targets and the "
                     "rules' selector; a cluster taken out of service resolves this within a day."))
