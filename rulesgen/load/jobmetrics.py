"""The training jobs' own metrics: an optional input (issue 14, part 3).

DCGM cannot see every fault: a driver bug that corrupts a run shows only in its training loss, a bad
optical transceiver only in its ranks' step times. Jobs that export the metric contract below get the
`jobs` failure modes (catalog/failure_modes.yaml, group jobs); jobs that export none of it cost nothing
and nothing fires for them.

The contract (README "Job metrics"), names and labels configurable under `job_metrics:` in rulesgen.yaml:

    training_loss{namespace, pod, rank}                    gauge: the loss of the rank's last step
    training_step_duration_seconds{namespace, pod, rank}   gauge: the rank's last step time, or a
                                                           histogram/summary of that name (_sum, _count)
    training_step{namespace, pod, rank}                    gauge: the optimizer step the rank last completed
                                                           (the training_time SLO, docs/slos.md)
    training_checkpoint_step{namespace, pod, rank}         gauge: the step of the last durable checkpoint

`namespace`/`pod` are the training pod's (a PodMonitor or the usual pod scrape config adds them); they
join the job to its GPUs through gpu:dcgm_workload:info, and the pod name gives the job (`workload`)
through `workload_regex`, as for the DCGM job rules.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..durations import format_duration
from ..errors import Collector
from ..model.thresholds import numeric
from ..promql.text import selector_problems
from ..promql.tree import PromQLSyntaxError, recorded_names
from .mapping import Fields

DEFAULT_LOSS = "training_loss"
DEFAULT_STEP = "training_step_duration_seconds"
DEFAULT_PROGRESS = "training_step"
DEFAULT_CHECKPOINT = "training_checkpoint_step"
# The keys a catalog failure mode lists under `job_metrics:` (the inputs it needs).
INPUTS = ("loss", "step_duration")
# Suffixes of a histogram or summary of the step duration (read when no gauge of that name exists).
HISTOGRAM_SUFFIXES = ("_sum", "_count", "_bucket")
# Window of the rate() that turns a step-duration histogram into a mean step time.
STEP_RATE_WINDOW = "5m"
# The output label of the rank, whatever the input calls it.
RANK = "rank"

_METRIC = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"


@dataclass(frozen=True)
class JobMetricsSettings:
    """The `job_metrics:` section of rulesgen.yaml."""
    enabled: bool = True
    selector: str = ""  # extra label matchers on the job series, e.g. job="training"
    loss: str = DEFAULT_LOSS
    step_duration: str = DEFAULT_STEP
    step: str = DEFAULT_PROGRESS  # the training_time SLO's input
    checkpoint_step: str = DEFAULT_CHECKPOINT  # report-only: the progress a failure now would lose
    namespace_label: str = "namespace"
    pod_label: str = "pod"
    rank_label: str = RANK

    def metric_of(self, key: str) -> str:
        return {"loss": self.loss, "step_duration": self.step_duration, "step": self.step,
                "checkpoint_step": self.checkpoint_step}[key]

    @property
    def names(self) -> tuple[str, ...]:
        """Every series name the rules read from the jobs (histogram parts included)."""
        return (self.loss, self.step_duration, *(self.step_duration + s for s in HISTOGRAM_SUFFIXES), self.step,
                self.checkpoint_step)


def parse_settings(fields: Fields, errors: Collector) -> JobMetricsSettings:
    """`job_metrics:` -> JobMetricsSettings; every problem names rulesgen.yaml:line."""
    kwargs: dict = {}
    enabled = fields.bool("enabled")
    if enabled is not None:
        kwargs["enabled"] = enabled
    sel = fields.str("selector")
    if sel is not None and sel.strip():
        problems = selector_problems(sel)
        if problems:
            errors.add(fields.at("selector"), "bad-selector",
                       f"job_metrics.selector {sel!r}: {problems[0]} (expected label matchers like job=\"training\")")
        else:
            kwargs["selector"] = sel.strip()
    for key in ("loss", "step_duration", "step", "checkpoint_step"):
        value = fields.str(key, pattern=_METRIC)
        if value is not None:
            kwargs[key] = value
    labels = Fields(fields.mapping("labels"), errors, "job_metrics.labels")
    for key, attr in (("namespace", "namespace_label"), ("pod", "pod_label"), ("rank", "rank_label")):
        value = labels.label(key, _LABEL)
        if value is not None:
            kwargs[attr] = value
    labels.done()
    out = JobMetricsSettings(**kwargs)
    keys = ("loss", "step_duration", "step", "checkpoint_step")
    for i, key in enumerate(keys):
        for other in keys[i + 1:]:
            if out.metric_of(key) == out.metric_of(other):
                errors.add(fields.at(other) if fields.has(other) else fields.at(key), "bad-value",
                           f"job_metrics: {key} and {other} are both {out.metric_of(key)!r}; they must be different series")
    fields.done()
    return out


def context(settings) -> dict:
    """Template helpers for catalog expressions ([[ jm.NAME ]]): the job series normalised to the
    configured output labels (namespace, pod as in labels: of rulesgen.yaml; rank as `rank`) and
    labelled with their job (`workload`, from the pod name by workload_regex)."""
    jm: JobMetricsSettings = settings.job_metrics
    ns, pod = settings.namespace_label, settings.pod_label
    regex = settings.workload_regex.replace("\\", "\\\\").replace('"', '\\"')

    def select(name: str) -> str:
        return f"{name}{{{jm.selector}}}" if jm.selector else name

    def normalised(expr: str) -> str:
        for source, target in ((jm.namespace_label, ns), (jm.pod_label, pod), (jm.rank_label, RANK)):
            if source != target:
                expr = f'label_replace({expr}, "{target}", "$1", "{source}", "(.+)")'
        return f'label_replace({expr}, "workload", "$1", "{pod}", "{regex}")'

    step = jm.step_duration
    step_expr = (f"{select(step)}\n  or rate({select(step + '_sum')}[{STEP_RATE_WINDOW}])"
                 f" / rate({select(step + '_count')}[{STEP_RATE_WINDOW}])")

    def window(seconds, factor=1) -> str:
        return f"[{duration(seconds, factor)}]"

    def duration(seconds, factor=1) -> str:
        """A threshold in seconds (times factor) as a PromQL duration (1h)."""
        return format_duration(int(numeric(seconds) * factor))

    def evaluations(seconds) -> str:
        """How many evaluations a window holds at evaluation_interval, less two for a missed one."""
        return str(max(1, int(numeric(seconds)) // settings.evaluation_interval - 2))

    def samples(seconds, share) -> str:
        """The fewest samples a recorded per-evaluation series must hold in a window of `seconds` for a
        statistic over it to count: `share` of what the window can hold (one sample per evaluation, and a
        gauge changes at most once per scrape), at least 3 (never one sample, never an average of two)."""
        most = int(numeric(seconds)) // max(settings.scrape_interval, settings.evaluation_interval)
        return str(max(3, math.ceil(most * numeric(share) - 1e-9)))

    return {
        "samples": samples,
        "loss": normalised(select(jm.loss)),
        "step": normalised(select(jm.step)),
        "checkpoint_step": normalised(select(jm.checkpoint_step)),
        "step_seconds": normalised(f"(\n  {step_expr}\n)"),
        "rank": RANK,
        "pod_by": ", ".join((settings.cluster_label, ns, pod)),
        "rank_by": ", ".join((settings.cluster_label, ns, pod, RANK, "workload")),
        "window": window,
        "duration": duration,
        "evaluations": evaluations,
        "loss_name": jm.loss,
        "step_name": jm.step_duration,
    }


def job_signal_records(direct: set[str], expressions: dict[str, str]) -> set[str]:
    """Recording rules that read the job metrics: `direct` (their templates use `jm`), and every record
    that reads one of them, transitively (`expressions`: record -> its rendered expression)."""
    reads = {name: _records_read(expr) for name, expr in expressions.items()}
    found = set(direct)
    changed = True
    while changed:
        changed = False
        for name, names in reads.items():
            if name not in found and found.intersection(names):
                found.add(name)
                changed = True
    return found


def _records_read(expr: str) -> tuple[str, ...]:
    """The recording rules an expression reads, from its syntax tree."""
    try:
        return recorded_names(expr) if expr else ()
    except PromQLSyntaxError:
        return ()  # build_rules reports it


_EXPOSED = re.compile(r"^(?:#\s*(?:TYPE|HELP)\s+)?([a-zA-Z_:][a-zA-Z0-9_:]*)", re.M)


def exposition_names(text: str) -> set[str]:
    """Series names in a Prometheus text exposition (a training pod's /metrics page)."""
    return {m.group(1) for m in _EXPOSED.finditer(text) if m.group(1) not in ("TYPE", "HELP")}


def missing_inputs(settings, keys, exported: set[str]) -> list[str]:
    """The configured names of the inputs (loss, step_duration) that `exported` lacks; a histogram or
    summary of the step duration counts."""
    jm: JobMetricsSettings = settings.job_metrics
    out = []
    for key in keys:
        name = jm.metric_of(key)
        present = name in exported or (key == "step_duration" and {name + "_sum", name + "_count"} <= exported)
        if not present:
            out.append(name)
    return out


def input_names(settings, keys) -> list[str]:
    """The configured series names of contract keys (loss, step_duration)."""
    return [settings.job_metrics.metric_of(k) for k in keys]
