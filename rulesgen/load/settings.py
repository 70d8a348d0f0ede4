"""User config (rulesgen.yaml) -> frozen Settings. Every key is optional."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..durations import format_duration
from ..errors import Collector, Where
from ..model import conventions
from ..model.catalog import GROUPS, SEVERITIES
from ..model.slos import SloSettings
from ..promql.text import selector_problems
from .jobmetrics import JobMetricsSettings
from .jobmetrics import parse_settings as _job_metrics_settings
from .mapping import Fields
from .settings_sections import (
    BaselineSettings, DashboardSettings, Outputs, ShardingSettings, parse_baselines, parse_dashboards, parse_outputs,
    parse_sharding, parse_slos)
from .yamlsource import load_file

DEFAULT_SELECTOR = 'job=~"(nvidia-)?dcgm-exporter"'
# PyTorchJob/MPIJob/JobSet style pod names: llm-pretrain-worker-3 -> llm-pretrain.
DEFAULT_WORKLOAD_REGEX = "(.+?)(?:-(?:master|worker|launcher|trainer))?-[0-9]+"


@dataclass(frozen=True)
class FailureModeSettings:
    enabled: bool | None = None
    for_seconds: int | None = None
    thresholds: tuple[tuple[str, float], ...] = ()
    severity: tuple[tuple[str, str], ...] = ()  # catalog severity -> new severity


@dataclass(frozen=True)
class AlertmanagerSettings:
    page_receiver: str = "gpu-pager"
    ticket_receiver: str = "gpu-tickets"
    null_receiver: str = "gpu-null"


MAX_KEEP_FIRING_FOR = 3600

# single: one server evaluates every rule (alerts/prometheus/); sharded: also the tiered files for shards
# split by node and a global evaluator (alerts/sharded/, README "Sharded topology").
TOPOLOGIES = ("single", "sharded")


# max_rules_per_group: 0 (no limit) or within these bounds. Each group is one more scheduled evaluation
# (and Mimir allows 70 groups per tenant by default); no engine needs groups above 1000 rules.
MIN_RULES_PER_GROUP = 5
MAX_RULES_PER_GROUP = 1000


@dataclass(frozen=True)
class Settings:
    selector: str = DEFAULT_SELECTOR
    host_label: str = "Hostname"
    # Host labels read into host_label: dcgm-exporter <= 4.8.2 emits Hostname, >= 4.8.3 hostname.
    host_sources: tuple[str, ...] = ("Hostname", "hostname")
    cluster_label: str = "cluster"
    namespace_label: str = "namespace"
    pod_label: str = "pod"
    workload_regex: str = DEFAULT_WORKLOAD_REGEX
    profiling: bool = True
    evaluation_interval: int = 60  # interval: of every group but the baselines; Prometheus' own default
    # Rules per group at most (0: no limit): Grafana Mimir's -ruler.max-rules-per-rule-group default (engine_fit.py).
    max_rules_per_group: int = 20
    topology: str = "single"  # single | sharded (TOPOLOGIES)
    sharding: ShardingSettings = ShardingSettings()  # topology: sharded: remote write, shard label, delay
    runbook_base_url: str = "https://github.com/rulesgen/rulesgen/blob/main/runbooks/"
    grafana_base_url: str = "http://grafana.example.com"
    extra_labels: tuple[tuple[str, str], ...] = ()
    disabled_groups: tuple[str, ...] = ()
    failure_modes: tuple[tuple[str, FailureModeSettings], ...] = ()
    scrape_interval: int = 60  # the longest supported (Prometheus' default): windows >= 4x it work at 15-60 s
    keep_firing_for: int = conventions.IDENTITY_HOLD_SECONDS  # of the identity alerts (health, baselines, fleet)
    outputs: Outputs = Outputs()
    alertmanager: AlertmanagerSettings = AlertmanagerSettings()
    dashboards: DashboardSettings = DashboardSettings()
    baselines: BaselineSettings = BaselineSettings()
    job_metrics: JobMetricsSettings = JobMetricsSettings()  # the training jobs' own metrics (jobmetrics.py)
    slos: tuple[SloSettings, ...] = ()  # `slos:`: the fleet SLOs to render (none unless named)
    source: str = "<defaults>"
    where_of_mode: tuple[tuple[str, object], ...] = field(default=(), compare=False)
    where_of_key: tuple[tuple[str, Where], ...] = field(default=(), compare=False)  # scrape_interval, failure_modes.X.for
    given_urls: tuple[str, ...] = field(default=(), compare=False)  # keys of its urls: section
    sharding_unused: bool = field(default=False, compare=False)  # a sharding: section beside topology: single

    def where(self, key: str) -> Where:
        return dict(self.where_of_key).get(key, Where(self.source))

    @property
    def placeholder_urls(self) -> tuple[tuple[str, str], ...]:
        """(urls key, default) for each link left at its default: this project's repository for runbooks, an
        example Grafana host for dashboards. Every alert's runbook_url / dashboard_url points there."""
        return tuple((key, value) for key, value in (("runbook_base", self.runbook_base_url), ("grafana_base", self.grafana_base_url))
                     if key not in self.given_urls and value == getattr(Settings, _URL_ATTRS[key]))

    @property
    def contract_labels(self) -> tuple[str, ...]:
        """Labels every alert sets itself: extra_labels may not name them (they would overwrite, or be overwritten)."""
        return ("severity", "failure_mode", "action", self.cluster_label, self.host_label, "gpu", "UUID", "modelName",
                self.namespace_label, self.pod_label)

    def for_mode(self, fm_id: str) -> FailureModeSettings:
        return dict(self.failure_modes).get(fm_id, FailureModeSettings())

    @property
    def host_aliases(self) -> tuple[str, ...]:
        """Input host labels other than the output one: copied into host_label wherever present."""
        return tuple(h for h in self.host_sources if h != self.host_label)

    @property
    def gpu_labels(self) -> tuple[str, ...]:
        return (self.cluster_label, self.host_label, "gpu", "UUID", "modelName")

    @property
    def gpu_identity(self) -> tuple[str, ...]:
        """Labels that identify one physical GPU (joins use these, not modelName)."""
        return (self.cluster_label, self.host_label, "gpu", "UUID")

    @property
    def model_labels(self) -> tuple[str, ...]:
        """Labels of one GPU model in one cluster: the model limits join on these."""
        return (self.cluster_label, "modelName")

    @property
    def node_labels(self) -> tuple[str, ...]:
        return (self.cluster_label, self.host_label)

    def scope_labels(self, scope: str) -> tuple[str, ...]:
        """The labels that name the subject of an alert of a catalog scope (README "Alert identity")."""
        return {"gpu": self.gpu_identity, "node": self.node_labels, "fleet": (self.cluster_label,)}[scope]

    @property
    def workload_labels(self) -> tuple[str, ...]:
        return (self.namespace_label, self.pod_label)


_LABEL = r"(?!__)[a-zA-Z_][a-zA-Z0-9_]*"  # names starting with __ are reserved by Prometheus
_URL_ATTRS = {"runbook_base": "runbook_base_url", "grafana_base": "grafana_base_url"}


def _has_comment(path: Path) -> bool:
    """A file of comments only is a deliberate choice of the defaults (`rulesgen init` writes one); an empty
    file is not."""
    try:
        return any(line.lstrip().startswith("#") for line in path.read_text(encoding="utf-8").splitlines())
    except OSError:
        return False


def _extra_labels(top: Fields, errors: Collector, kwargs: dict) -> tuple[tuple[str, str], ...]:
    """extra_labels: added to every alert; a label the alerts set themselves (severity, the GPU's identity,
    its workload) is an error at its line instead of being dropped or overwriting it."""
    pairs = top.str_map("extra_labels", "extra_labels")
    node = top.mapping("extra_labels")
    contract = Settings(**{k: v for k, v in kwargs.items() if k.endswith("_label")}).contract_labels
    out = []
    for key, value in pairs:
        if not re.fullmatch(_LABEL, str(key)):
            errors.add(node.key_where.get(key, top.at("extra_labels")), "bad-value", f"extra_labels: {key!r} is not a label name")
        elif key in contract:
            errors.add(node.key_where.get(key, top.at("extra_labels")), "contract-label",
                       f"extra_labels.{key}: every alert sets {key!r} itself (so do {', '.join(c for c in contract if c != key)}); "
                       + ("change a failure mode's with failure_modes.<id>.severity" if key == "severity" else "choose another label name"))
        else:
            out.append((key, value))
    return tuple(out)


_ROLES = (("cluster", "cluster_label"), ("host", "host_label"), ("namespace", "namespace_label"), ("pod", "pod_label"))
# Labels of a GPU's identity that no role may take: every rule reads them as they are.
_FIXED_LABELS = ("gpu", "UUID", "modelName")


def _distinct_roles(labels: Fields, errors: Collector, kwargs: dict) -> None:
    """Each label role its own label: two roles on one label (pod = namespace) would group by it twice
    (`group_left (x, x)`) and join a GPU's workload onto its identity; a role on gpu, UUID or modelName
    would overwrite the GPU's identity. An error at the later role's line (the set one, not a default)."""
    seen: dict[str, str] = {}
    for key, attr in _ROLES:
        value = kwargs.get(attr, getattr(Settings, attr))
        given = labels.has(key)
        if value in _FIXED_LABELS and given:
            errors.add(labels.at(key), "bad-value",
                       f"labels.{key}: {value!r} is a label of the GPU's identity every rule reads as it is "
                       f"({', '.join(_FIXED_LABELS)}): choose the label your series carry for the {key}")
        elif value in seen and (given or labels.has(seen[value])):
            other = seen[value]
            here, there = (key, other) if given else (other, key)
            errors.add(labels.at(here), "bad-value",
                       f"labels.{here}: {value!r} is also labels.{there}"
                       + ("" if labels.has(there) else " (its default)")
                       + f": each role needs a label of its own (the rules would group and join by {value} twice, "
                         f"e.g. `group_left ({value}, {value})`, and take the {here} for the {there})")
        seen.setdefault(value, key)
    roles = {kwargs.get(attr, getattr(Settings, attr)): key for key, attr in _ROLES if key != "host"}
    for i, name in enumerate(kwargs.get("host_sources", ())):
        if name in roles:
            errors.add(labels.at("host_sources"), "bad-value",
                       f"labels.host_sources[{i}]: {name!r} is labels.{roles[name]}: it would be copied into the host "
                       "label")


# Labels the shard label may not be: the series' own (their target, job, GPU identity, alert state).
_TAKEN_BY_SERIES = ("instance", "job", "alertname", "alertstate", "severity", "failure_mode", "action", "le", "quantile")


def _shard_label_free(sharding: Fields, errors: Collector, kwargs: dict) -> None:
    """sharding.label is added to every series a shard forwards and aggregated away by the global rules: a label
    the series carry themselves (a role's, the GPU's identity, the target's) would be overwritten."""
    label = kwargs["sharding"].label
    roles = {kwargs.get(attr, getattr(Settings, attr)): f"labels.{key}" for key, attr in _ROLES}
    roles.update({h: "labels.host_sources" for h in kwargs.get("host_sources", Settings.host_sources)})
    roles.update({name: "the GPU's identity" for name in _FIXED_LABELS})
    roles.update({name: "the series' own" for name in _TAKEN_BY_SERIES})
    if label in roles and sharding.has("label"):
        errors.add(sharding.at("label"), "bad-value",
                   f"sharding.label: {label!r} is {roles[label]}: the shard label must be a label no series carries "
                   "(each shard adds it to what it forwards, and the global rules drop it again)")


def load_settings(path: Path | None) -> Settings:
    if path is None:
        return Settings()
    shown = str(path)
    data = load_file(path, shown)
    errors = Collector()
    if data is None and not _has_comment(path):
        errors.add(Where(shown), "empty-config",
                   f"{shown} is empty: rendering it would mean every default (and remove the outputs it enabled); "
                   "restore it (git checkout), or delete it and run with --defaults to render the defaults")
        errors.raise_if_any()
    top = Fields(data, errors, "rulesgen.yaml")
    kwargs: dict = {"source": shown}
    sel = top.str("selector")
    if sel is not None:
        problems = selector_problems(sel)
        if problems:
            errors.add(top.at("selector"), "bad-selector",
                       f"selector {sel!r}: {problems[0]} (expected label matchers like job=~\"dcgm-exporter\")")
        else:
            kwargs["selector"] = sel
    labels = Fields(top.mapping("labels"), errors, "labels")
    for key, attr in (("host", "host_label"), ("cluster", "cluster_label"),
                      ("namespace", "namespace_label"), ("pod", "pod_label")):
        value = labels.label(key, _LABEL)
        if value is not None:
            kwargs[attr] = value
    sources = labels.label_list_problems("host_sources", _LABEL)
    if labels.has("host_sources"):
        kwargs["host_sources"] = tuple(sources)
    _distinct_roles(labels, errors, kwargs)
    labels.done()
    regex = top.str("workload_regex")
    if regex is not None:
        try:
            re.compile(regex)
            kwargs["workload_regex"] = regex
        except re.error as exc:
            errors.add(top.at("workload_regex"), "bad-regex", f"workload_regex {regex!r}: {exc}")
    prof = top.bool("profiling")
    if prof is not None:
        kwargs["profiling"] = prof
    interval = top.duration("evaluation_interval")
    if interval is not None:
        if interval <= 0:
            errors.add(top.at("evaluation_interval"), "bad-value", "evaluation_interval must be positive")
        else:
            kwargs["evaluation_interval"] = interval
    max_rules = top.num("max_rules_per_group", integer=True)
    if max_rules is not None:
        if max_rules != 0 and not MIN_RULES_PER_GROUP <= max_rules <= MAX_RULES_PER_GROUP:
            errors.add(top.at("max_rules_per_group"), "out-of-range",
                       f"max_rules_per_group: {max_rules} is out of range: 0 (no limit) or [{MIN_RULES_PER_GROUP}, "
                       f"{MAX_RULES_PER_GROUP}] (Grafana Mimir's default, -ruler.max-rules-per-rule-group, is 20)")
        else:
            kwargs["max_rules_per_group"] = max_rules
    topology = top.str("topology", choices=TOPOLOGIES)
    if topology is not None:
        kwargs["topology"] = topology
    sharding = Fields(top.mapping("sharding"), errors, "sharding")
    kwargs["sharding"] = parse_sharding(sharding, errors, _LABEL)
    # a sharding: section is a sharded deployment: it implies topology: sharded; beside an explicit topology: single
    # it is read and checked but unused, and render warns (sharding_unused)
    if top.has("sharding") and topology is None:
        kwargs["topology"] = "sharded"
    kwargs["sharding_unused"] = top.has("sharding") and topology == "single"
    _shard_label_free(sharding, errors, kwargs)
    scrape = top.duration("scrape_interval")
    if scrape is not None:
        if scrape <= 0:
            errors.add(top.at("scrape_interval"), "out-of-range", "scrape_interval must be above 0s")
        else:
            kwargs["scrape_interval"] = scrape
    hold = top.duration("keep_firing_for")
    if hold is not None:
        if not 0 < hold <= MAX_KEEP_FIRING_FOR:
            errors.add(top.at("keep_firing_for"), "out-of-range",
                       f"keep_firing_for {format_duration(hold)} is outside (0s, {format_duration(MAX_KEEP_FIRING_FOR)}]: "
                       "the hardware alerts must outlive a gap of a few scrapes, and resolve within the hour once repaired")
        else:
            kwargs["keep_firing_for"] = hold
    kwargs["outputs"] = parse_outputs(top.mapping("outputs"), errors)
    am = Fields(top.mapping("alertmanager"), errors, "alertmanager")
    kwargs["alertmanager"] = AlertmanagerSettings(**{
        k: am.str(k, default=getattr(AlertmanagerSettings(), k), pattern=r"[A-Za-z0-9_.-]+")
        for k in ("page_receiver", "ticket_receiver", "null_receiver")})
    am.done()
    urls = Fields(top.mapping("urls"), errors, "urls")
    for key, attr in (("runbook_base", "runbook_base_url"), ("grafana_base", "grafana_base_url")):
        value = urls.str(key, pattern=r"https?://\S+")
        if value is not None:
            kwargs[attr] = value
    urls.done()
    kwargs["extra_labels"] = _extra_labels(top, errors, kwargs)
    groups = top.mapping("groups")
    gfields = Fields(groups, errors, "groups")
    disabled = []
    for g in GROUPS:
        gf = Fields(gfields.mapping(g), errors, f"groups.{g}")
        if gf.bool("enabled") is False:
            disabled.append(g)
        gf.done()
    gfields.done()
    kwargs["disabled_groups"] = tuple(disabled)
    modes = top.mapping("failure_modes")
    mode_settings = []
    wheres = []
    wheres_for = []
    for fm_id, node in modes.items():
        mf = Fields(node, errors, f"failure_modes.{fm_id}", fallback=modes.key_where.get(fm_id))
        thresholds = mf.mapping("thresholds")
        tvals = mf.num_map("thresholds")
        sev = mf.mapping("severity")
        sf = Fields(sev, errors, f"failure_modes.{fm_id}.severity")
        svals = []
        for k in sev:
            if k not in SEVERITIES:
                errors.add(sev.key_where[k], "bad-value", f"failure_modes.{fm_id}.severity: {k!r} is not a severity ({', '.join(SEVERITIES)})")
                sf.seen.add(k)
                continue
            new = sf.str(k, choices=SEVERITIES)
            if new is not None:
                svals.append((k, new))
        sf.done()
        wheres_for.append((fm_id, mf.at("for")))
        mode_settings.append((fm_id, FailureModeSettings(
            enabled=mf.bool("enabled"), for_seconds=mf.duration("for"),
            thresholds=tvals, severity=tuple(sorted(svals)))))
        wheres.append((fm_id, (modes.key_where.get(fm_id), thresholds)))
        mf.done()
    kwargs["failure_modes"] = tuple(mode_settings)
    kwargs["where_of_mode"] = tuple(wheres)
    kwargs["where_of_key"] = (("scrape_interval", top.at("scrape_interval")), ("keep_firing_for", top.at("keep_firing_for")),
                              ("urls", top.at("urls")), ("sharding", top.at("sharding")),
                              *((f"failure_modes.{m}.for", w) for m, w in wheres_for))
    kwargs["given_urls"] = tuple(sorted(str(k) for k in urls.node))
    kwargs["dashboards"] = parse_dashboards(Fields(top.mapping("dashboards"), errors, "dashboards"), errors)
    kwargs["baselines"] = parse_baselines(Fields(top.mapping("baselines"), errors, "baselines"), errors)
    kwargs["slos"] = parse_slos(top.mapping("slos"), errors, _LABEL)
    kwargs["job_metrics"] = _job_metrics_settings(Fields(top.mapping("job_metrics"), errors, "job_metrics"), errors)
    top.done()
    errors.raise_if_any()
    return Settings(**kwargs)
