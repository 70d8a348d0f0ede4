"""The sections of rulesgen.yaml that are formats and places rather than rules: `outputs:` (the delivery
formats), `dashboards:` (Grafana folder, provisioning path, prices) and `baselines:` (history length and
interval): their frozen settings and their readers."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..durations import format_duration
from ..errors import Collector
from ..model.output import KubeOutput
from ..model.slos import PERIODS, TIER_CHOICES, SloSettings
from .mapping import Fields


@dataclass(frozen=True)
class Outputs:
    prometheus_rule: KubeOutput = KubeOutput()
    vmrule: KubeOutput = KubeOutput()
    dashboard_configmaps: KubeOutput = KubeOutput()
    grafana_operator: KubeOutput = KubeOutput()
    alertmanager: bool = True
    runbooks: bool = True
    exporter_counters: bool = True
    scenario_tests: bool = True  # tests/promtool/ and tests/vmalert/: one unit test per scenario


@dataclass(frozen=True)
class DashboardSettings:
    """The `dashboards:` section: where dashboards go in Grafana and what a GPU-hour costs."""
    folder: str = "GPU"  # `rulesgen push` and the file-provisioning provider
    provisioning_path: str = "/var/lib/grafana/dashboards/rulesgen"
    currency_unit: str = "currencyUSD"  # a Grafana unit id
    price_default: float = 2.0  # per GPU-hour, for models no price pattern matches
    prices: tuple[tuple[str, float], ...] = ()  # (anchored modelName regex, price per GPU-hour); first match wins


@dataclass(frozen=True)
class BaselineSettings:
    """The `baselines:` section: how much downsampled history each GPU is compared with."""
    window: int = 14 * 86400  # long window of the per-GPU mean and stddev
    min_history: int = 7 * 86400  # days of downsampled history a GPU needs before its own baseline alerts
    seasonality: str = "none"  # none | weekly: compare with the same hour one week earlier
    interval: int = 300  # evaluation interval of the baseline groups

    @property
    def min_days(self) -> int:
        return self.min_history // 86400


SEASONALITY = ("none", "weekly")


_KUBE_FORMATS = ("prometheus_rule", "vmrule", "dashboard_configmaps", "grafana_operator")


def parse_outputs(node, errors: Collector) -> Outputs:
    f = Fields(node, errors, "outputs")
    kube = {}
    for name in _KUBE_FORMATS:
        kf = Fields(f.mapping(name), errors, f"outputs.{name}")
        default = KubeOutput()
        kube[name] = KubeOutput(
            enabled=bool(kf.bool("enabled", default=False)),
            namespace=kf.str("namespace", default=default.namespace, pattern=r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"),
            labels=kf.str_map("labels"),
            folder=kf.str("folder", default=default.folder) if name in ("dashboard_configmaps", "grafana_operator") else default.folder,
            instance_selector=(kf.str_map("instance_selector") or default.instance_selector) if name == "grafana_operator" else default.instance_selector,
            eval_delay=_eval_delay(kf, errors) if name == "vmrule" else default.eval_delay,
        )
        kf.done()
    out = Outputs(**kube, alertmanager=bool(f.bool("alertmanager", default=True)),
                  runbooks=bool(f.bool("runbooks", default=True)),
                  exporter_counters=bool(f.bool("exporter_counters", default=True)),
                  scenario_tests=bool(f.bool("scenario_tests", default=True)))
    f.done()
    return out


# outputs.vmrule.eval_delay: at least a second (victoria-metrics refuses latency_offset=0s; vmalert reads a group's
# eval_delay of 0 as unset), at most what sharding.evaluation_delay allows (MAX_EVALUATION_DELAY).
MIN_VMRULE_EVAL_DELAY = 1


def _eval_delay(kf: Fields, errors: Collector) -> int:
    default = KubeOutput().eval_delay
    delay = kf.duration("eval_delay", default=default)
    if delay is not None and not MIN_VMRULE_EVAL_DELAY <= delay <= MAX_EVALUATION_DELAY:
        errors.add(kf.at("eval_delay"), "out-of-range",
                   f"outputs.vmrule.eval_delay is outside [{MIN_VMRULE_EVAL_DELAY}s, {MAX_EVALUATION_DELAY // 60}m]: "
                   "vmalert evaluates this far in the past, so that the newest scrape has been written (at least the "
                   "scrape's duration, at most its scrape_timeout) and an alert is still on time")
        return default
    return default if delay is None else delay


def parse_dashboards(fields: Fields, errors: Collector) -> DashboardSettings:
    kwargs: dict = {}
    for key, attr, pattern in (("folder", "folder", r"\S.*"), ("provisioning_path", "provisioning_path", r"/\S*"),
                               ("currency", "currency_unit", r"[A-Za-z0-9_:.-]+")):
        value = fields.str(key, pattern=pattern)
        if value is not None:
            kwargs[attr] = value
    if _is_number(fields.node.get("price_per_gpu_hour")):  # `price_per_gpu_hour: 3`: the price of every model
        value = fields.num("price_per_gpu_hour", minimum=0)
        if value is not None:
            kwargs["price_default"] = float(value)
        fields.done()
        return DashboardSettings(**kwargs)
    raw = fields.node.get("price_per_gpu_hour")
    if raw is not None and not isinstance(raw, dict):
        fields.seen.add("price_per_gpu_hour")
        errors.add(fields.at("price_per_gpu_hour"), "bad-type",
                   "dashboards.price_per_gpu_hour must be a number (per GPU-hour, every model) or a mapping "
                   f"(default, models), got {raw!r}")
        fields.done()
        return DashboardSettings(**kwargs)
    price = Fields(fields.mapping("price_per_gpu_hour"), errors, "dashboards.price_per_gpu_hour")
    default = price.num("default", minimum=0)
    if default is not None:
        kwargs["price_default"] = float(default)
    models = price.mapping("models")
    model_fields = Fields(models, errors, "dashboards.price_per_gpu_hour.models")
    prices = []
    for pattern in models:
        value = model_fields.num(pattern, minimum=0)
        try:
            re.compile(pattern)
        except re.error as exc:
            errors.add(models.key_where[pattern], "bad-regex", f"dashboards.price_per_gpu_hour.models: {pattern!r}: {exc}")
            continue
        if value is not None:
            prices.append((pattern, float(value)))
    model_fields.done()
    price.done()
    fields.done()
    return DashboardSettings(**kwargs, prices=tuple(prices))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_baselines(fields: Fields, errors: Collector) -> BaselineSettings:
    default = BaselineSettings()
    day = 86400
    window = fields.duration("window", default=default.window)
    if window is not None and not (7 * day <= window <= 28 * day and window % day == 0):
        errors.add(fields.at("window"), "bad-value",
                   "baselines.window must be whole days from 7d to 28d (14d by default): the history each GPU is compared with")
        window = default.window
    history = fields.duration("min_history", default=default.min_history)
    if history is not None and not (day <= history <= (window or default.window) and history % day == 0):
        errors.add(fields.at("min_history"), "bad-value",
                   f"baselines.min_history must be whole days from 1d up to the window ({(window or default.window) // day}d)")
        history = default.min_history
    interval = fields.duration("interval", default=default.interval)
    if interval is not None and (interval % 60 or not 60 <= interval <= 300):
        errors.add(fields.at("interval"), "bad-value",
                   "baselines.interval must be 1m to 5m in whole minutes (long-window groups run at interval <= 5m)")
        interval = default.interval
    seasonality = fields.str("seasonality", default=default.seasonality, choices=SEASONALITY)
    fields.done()
    return BaselineSettings(window=window or default.window, min_history=history or default.min_history,
                            seasonality=seasonality or default.seasonality, interval=interval or default.interval)


# Where each shard's value of the shard label comes from (`sharding.source`, docs/sharding.md "Deploying"):
# static: a list, one Prometheus each; prometheus-operator: the Operator's shard number, `$(SHARD)` in the
# Prometheus CR's externalLabels (its config reloader substitutes it per shard); vmagent: the shard's
# -promscrape.cluster.memberNum.
SHARD_SOURCES = ("static", "prometheus-operator", "vmagent")
MAX_SHARDS = 1000
MAX_EVALUATION_DELAY = 600  # the global tier's query delay at most: 10 minutes late is no longer an alert


@dataclass(frozen=True)
class ShardingSettings:
    """The `sharding:` section (topology: sharded): where the shards remote-write, the shard label and where
    each shard's value comes from, and how far in the past the global tier evaluates."""
    write_url: str | None = None  # the global store's remote-write endpoint; None: a placeholder (render warns)
    label: str = "shard"  # the external label naming a shard; the global rules aggregate it away
    source: str = "static"  # SHARD_SOURCES
    values: tuple[str, ...] = ()  # static: one value per Prometheus; () means shard-0 ... shard-<shards-1>
    shards: int = 2  # how many shards (static: len(values) when given)
    evaluation_delay: int = 60  # s: the global groups' query_offset / eval_delay (remote write's lag)
    # True: also render the single server's rule objects (deploy/prometheus-operator/, deploy/victoriametrics-operator/,
    # labelled rulesgen.io/tier: single) beside the tiers', to compare or migrate; False (default): the tiers' only
    single_server_objects: bool = False

    PLACEHOLDER_URL = "http://global-tsdb.example:8428/api/v1/write"

    @property
    def url(self) -> str:
        return self.write_url or self.PLACEHOLDER_URL

    @property
    def shard_values(self) -> tuple[str, ...]:
        """The label's value on each shard, in shard order."""
        if self.source == "static":
            return self.values or tuple(f"shard-{i}" for i in range(self.shards))
        return tuple(str(i) for i in range(self.shards))  # the Operator's $(SHARD), vmagent's memberNum


def parse_sharding(fields: Fields, errors: Collector, label_pattern: str) -> ShardingSettings:
    default = ShardingSettings()
    kwargs: dict = {}
    url = fields.str("write_url", pattern=r"https?://\S+")
    if url is not None:
        kwargs["write_url"] = url
    label = fields.label("label", label_pattern)
    if label is not None:
        kwargs["label"] = label
    source = fields.str("source", choices=SHARD_SOURCES)
    if source is not None:
        kwargs["source"] = source
    shards = fields.num("shards", integer=True)
    if shards is not None and not 1 <= shards <= MAX_SHARDS:
        errors.add(fields.at("shards"), "out-of-range", f"sharding.shards: {shards} is out of range [1, {MAX_SHARDS}]")
    elif shards is not None:
        kwargs["shards"] = shards
    values = fields.str_list("values")
    if fields.has("values"):
        if (source or default.source) != "static":
            errors.add(fields.at("values"), "bad-value",
                       f"sharding.values: only with source: static (source {source!r} numbers its shards itself: "
                       "set sharding.shards)")
        elif not values:
            errors.add(fields.at("values"), "bad-value", "sharding.values: give one value per Prometheus shard")
        else:
            bad = [v for v in values if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", v)]
            twice = sorted({v for v in values if values.count(v) > 1})
            if bad or twice:
                errors.add(fields.at("values"), "bad-value",
                           f"sharding.values: {bad[0]!r} is not a plain value (letters, digits, _ . -)" if bad else
                           f"sharding.values: {twice[0]!r} is given twice: each shard needs a value of its own (two "
                           "shards writing the same series would overwrite each other's parts)")
            elif len(values) > MAX_SHARDS:
                errors.add(fields.at("values"), "out-of-range", f"sharding.values: more than {MAX_SHARDS} shards")
            elif shards is not None and shards != len(values):
                errors.add(fields.at("shards"), "bad-value",
                           f"sharding.shards: {shards}, but sharding.values lists {len(values)}: leave shards out")
            else:
                kwargs["values"] = tuple(values)
                kwargs["shards"] = len(values)
    delay = fields.duration("evaluation_delay")
    if delay is not None and not 0 <= delay <= MAX_EVALUATION_DELAY:
        errors.add(fields.at("evaluation_delay"), "out-of-range",
                   f"sharding.evaluation_delay is outside [0s, {MAX_EVALUATION_DELAY // 60}m]: the global tier must "
                   "wait for the shards' remote write, and no longer than an alert can be late")
    elif delay is not None:
        kwargs["evaluation_delay"] = delay
    single = fields.bool("single_server_objects")
    if single is not None:
        kwargs["single_server_objects"] = single
    fields.done()
    return ShardingSettings(**kwargs)


def parse_slos(node, errors: Collector, label_pattern: str) -> tuple[SloSettings, ...]:
    """`slos:` by SLO id; each value range-checked at its line (the ids and tier names against the catalog
    in resolved.check_against_catalog)."""
    out = []
    for slo_id in node:
        f = Fields(node[slo_id], errors, f"slos.{slo_id}", fallback=node.key_where.get(slo_id))
        objective = f.num("objective", minimum=50, maximum=99.999)
        period = f.duration("period")
        if period is not None and period not in PERIODS:
            errors.add(f.at("period"), "bad-value", f"slos.{slo_id}.period: {format_duration(period)} is not a supported period (7d, 28d or 30d)")
            period = None
        tiers_node = f.mapping("tiers")
        tf = Fields(tiers_node, errors, f"slos.{slo_id}.tiers", fallback=f.at("tiers"))
        tiers = []
        for name in tiers_node:
            if tiers_node[name] is False:  # YAML 1.1 reads a bare `off` as false
                tf.seen.add(name)
                tiers.append((str(name), "off"))
            else:
                tiers.append((str(name), tf.str(name, choices=TIER_CHOICES) or "off"))
        tiers = tuple(tiers)
        tf.done()
        group_by = tuple(f.label_list_problems("group_by", label_pattern)) if f.has("group_by") else None
        out.append(SloSettings(id=str(slo_id), objective=objective, period=period, tiers=tiers, group_by=group_by,
                               where=node.key_where.get(slo_id) or f.at("objective"), tiers_where=f.at("tiers")))
        f.done()
    return tuple(out)
