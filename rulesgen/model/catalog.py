"""The validated catalog: frozen dataclasses. Nothing after loading sees a raw dict."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Where
from .roles import ROLES
from .slos import SLO_FAILURE_MODE, BurnTier, SloSpec

SEVERITIES = ("critical", "warning", "info")
ACTIONS = ("drain", "investigate", "optimize")
GROUPS = ("health", "efficiency", "baselines", "fleet", "jobs")
SCOPES = ("gpu", "node", "fleet")
# Groups whose alerts are about hardware (a GPU, node, link or cluster), not about a job: their label
# set is the subject's identity only (README "Alert identity"); the job they hit is named in the
# annotations. Efficiency and jobs alerts are about a job and keep namespace/pod.
IDENTITY_GROUPS = ("health", "baselines", "fleet")
BASELINE_DIRECTIONS = ("up", "down")
# XID classes (catalog/xid.yaml); which of them drain is the catalog's `drain:` (Catalog.xid_drain).
XID_CLASSES = ("application", "investigate", "reset", "reboot", "rma")
# The drain classes of a catalog whose xid.yaml has no `drain:` (one written before it existed): the classes
# that drained then. The bundled catalog declares its own, with its source (tests/test_catalog_policy.py).
XID_DRAIN_UNDECLARED = ("reset", "reboot", "rma")
# DCGM health error codes (catalog/dcgm_health.yaml): drain where DCGM and NVSentinel both take the GPU out.
# normal: the code marks a GPU working at a limit it was configured to hold (power capping), no alert.
HEALTH_CLASSES = ("drain", "investigate", "normal")
# The failure mode the baseline alerts belong to (catalog/baselines.yaml's signals alert under it), and the
# thresholds they read; the catalog loader checks that failure_modes.yaml has them.
BASELINE_MODE = "baseline_deviation"
BASELINE_THRESHOLDS = ("z", "z_release", "peer_z", "peer_z_release", "busy_util", "same_load_ratio", "node_peers_min",
                       "fleet_peers_min")


# Words in catalog names a panel title may spell differently ("ecc" -> "ECC"): humanized() below.
WORDS = {"ecc": "ECC", "sbe": "SBE", "dbe": "DBE", "xid": "XID", "pcie": "PCIe", "nvlink": "NVLink", "gpu": "GPU",
         "gpus": "GPUs", "fb": "FB", "sm": "SM", "dram": "DRAM", "rx": "RX", "mad": "MAD", "crc": "CRC", "dcgm": "DCGM"}


def humanized(name: str) -> str:
    """A catalog name in words, for a catalog that gives no title: "ecc_sbe_rate" -> "ECC SBE rate"."""
    words = [WORDS.get(w, w) for w in name.replace("dcgm_", "").split("_") if w]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


@dataclass(frozen=True)
class Alias:
    """Another name a field is exported under, and the factor that turns its values into the
    metric's own unit (dcgm-exporter 4.9 renamed fields and changed units: Hz vs MHz, J vs mJ ...)."""
    name: str
    unit: str
    scale: float = 1.0
    since: str = ""


@dataclass(frozen=True)
class Bit:
    """One bit of a bitmask metric (catalog/metrics.yaml `bits:`): its value, the name dcgm-exporter gives it
    (the clock_event label of DCGM_EXP_CLOCK_EVENTS_*) and the DCGM constant that defines it."""
    value: int
    name: str
    define: str
    where: Where = field(compare=False, default=Where("<builtin>"))


@dataclass(frozen=True)
class Metric:
    name: str
    type: str  # gauge | counter | label
    unit: str
    help: str
    profiling: bool
    default_enabled: bool
    description: str
    field_id: int | None = None
    aliases: tuple[Alias, ...] = ()
    valid_max: float = 9.0e18
    max_plausible: float | None = None
    bits: tuple[Bit, ...] = ()  # a bitmask's bits, by value (unit bitmask only)
    bits_source: str = ""
    bits_label: str = ""  # the label dcgm-exporter names each bit with (bits: label), for bit_matcher()
    where: Where = field(default=Where("<builtin>"), compare=False)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *(a.name for a in self.aliases))

    def scale_of(self, name: str) -> float:
        """Factor from the values exported under `name` to this metric's unit."""
        return next((a.scale for a in self.aliases if a.name == name), 1.0)

    def names_by_scale(self) -> list[tuple[float, tuple[str, ...]]]:
        """Names grouped by their scale, the metric's own unit first."""
        groups: dict[float, list[str]] = {}
        for n in self.names:
            groups.setdefault(self.scale_of(n), []).append(n)
        return [(s, tuple(ns)) for s, ns in groups.items()]


@dataclass(frozen=True)
class Xid:
    code: int
    name: str
    xid_class: str
    dcgm_health: str
    source: str


@dataclass(frozen=True)
class HealthCode:
    """A DCGM health error code (DCGM_FR_*) as it appears in DCGM_EXP_GPU_HEALTH_STATUS's health_error_code."""
    code: str
    number: int
    dcgm_severity: str
    category: str
    health_class: str  # drain | investigate | normal
    source: str
    aliases: tuple[str, ...] = ()
    nvsentinel_action: str | None = None
    next_step: str | None = None
    failure_modes: tuple[str, ...] = ()  # rulesgen failure modes that see the same fault (they cover it)
    where: Where = field(compare=False, default=Where("<builtin>"))

    @property
    def names(self) -> tuple[str, ...]:
        return (self.code, *self.aliases)


@dataclass(frozen=True)
class HealthTable:
    """catalog/dcgm_health.yaml: the failure mode that alerts on DCGM's health verdict, the alert label that
    carries the code, the watches and every code."""
    failure_mode: str
    label: str
    watches: tuple[tuple[str, str], ...]
    codes: tuple[HealthCode, ...]
    where: Where = field(compare=False, default=Where("<builtin>"))

    def regex(self, health_class: str) -> str:
        """Regex of the code names (aliases too) of a class, for label matchers; NONE when empty."""
        return "|".join(n for c in self.codes if c.health_class == health_class for n in c.names) or "NONE"


@dataclass(frozen=True)
class GpuModel:
    id: str
    name: str
    match: str | None  # anchored regex on modelName; None for the default
    limits: tuple[tuple[str, float], ...]
    source: str

    def limit(self, key: str) -> float:
        return dict(self.limits)[key]


@dataclass(frozen=True)
class OwnLimit:
    """A limit every GPU reports about itself through DCGM (gpu_models.yaml `own_limits`): the rules read
    it per GPU where exported, else the model table, else (fallback: default) the table's default."""
    key: str
    metric: str
    fallback: str  # default | model
    source: str
    where: Where = field(compare=False, default=Where("<builtin>"))


@dataclass(frozen=True)
class Signal:
    """A recording rule from catalog/signals.yaml (expression still a template)."""
    record: str
    expr: str
    unit: str
    description: str
    metrics: tuple[str, ...]
    where: Where = field(compare=False, default=Where("<builtin>"))
    body: Where | None = field(compare=False, default=None)  # expr's first line, when a literal block
    title: str = ""  # a dashboard panel's words (signals.yaml title:); "" in a catalog written before it existed

    @property
    def panel_title(self) -> str:
        """Its title; a catalog without one gets the record's metric part in words (a name, never PromQL)."""
        return self.title or humanized(self.record.split(":")[1])


@dataclass(frozen=True)
class Range:
    """The values a threshold may take (catalog `range:`, written like "[0, 1]", "[0, inf)", "(1, inf)")."""
    low: float = float("-inf")
    high: float = float("inf")
    low_open: bool = True
    high_open: bool = True

    def __contains__(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def __str__(self) -> str:
        def num(v):
            return "inf" if v == float("inf") else "-inf" if v == float("-inf") else f"{v:g}"
        return f"{'(' if self.low_open else '['}{num(self.low)}, {num(self.high)}{')' if self.high_open else ']'}"


@dataclass(frozen=True)
class Threshold:
    name: str
    value: float
    unit: str
    source: str
    description: str = ""
    range: Range = Range()
    title: str = ""  # a dashboard panel's words for the value compared with it (failure_modes.yaml title:)

    @property
    def panel_title(self) -> str:
        return self.title or humanized(self.name)


@dataclass(frozen=True)
class Window:
    """A range a failure mode's alerts read (`windows:`, `[[ w.NAME ]]` -> [4m]), named and with its source
    like a threshold; not a setting (rulesgen.yaml does not override it)."""
    name: str
    seconds: int
    source: str
    where: Where = field(compare=False, default=Where("<builtin>"))


@dataclass(frozen=True)
class PanelText:
    """The description of a panel drawn by code of its own (catalog/dashboards.yaml `texts:`): what it shows,
    what normal looks like and what to do, each a template whose placeholders the builder fills
    (panel_specs.TEXTS)."""
    id: str
    shows: str
    normal: str
    do: str
    where: Where = field(compare=False, default=Where("<builtin>"))
    title: str = ""  # the panel's title, a template too; "" in a file written before titles were read from it


@dataclass(frozen=True)
class BaselineStatistics:
    """The numbers the baseline statistics are built with (catalog/baselines.yaml `statistics:`), each
    with its source. The windows (30 minutes now, hourly history, daily sums) are in the record names
    (conventions.py) and stay there."""
    mad_to_sigma: Threshold
    min_history_points: Threshold
    peer_outlier_z: Threshold


@dataclass(frozen=True)
class BaselineSignal:
    """A catalog metric compared with its own history and its peers (catalog/baselines.yaml)."""
    signal: str  # the `signal` label value
    metric: str
    unit: str
    description: str
    value: str  # template: one series per GPU, the signal over the last hour
    busy_only: bool
    direction: str  # up | down: the harmful direction, the only one that alerts
    alert: bool
    floor: Threshold
    min_delta: Threshold
    same_load: str | None = None  # another baseline signal that must be at its usual level
    peers: bool = True  # also alert against peers (false where healthy GPUs differ by design)
    reads_peers: bool = False  # its value reads the peer medians, so it is recorded after them
    alert_signal: str | None = None  # the `signal` label its alerts carry (default: its own name)
    where: Where = field(compare=False, default=Where("<builtin>"))
    title: str = ""  # its dashboard panel's words (baselines.yaml title:)

    @property
    def panel_title(self) -> str:
        return self.title or humanized(self.signal)


@dataclass(frozen=True)
class AlertSpec:
    severity: str
    action: str
    for_seconds: int
    expr: str
    summary: str
    description: str
    where: Where = field(compare=False, default=Where("<builtin>"))
    body: Where | None = field(compare=False, default=None)  # expr's first line, when a literal block
    for_source: str = ""  # why `for` is that long (catalog for_source:; required once a file gives any)
    # A fault with no natural end: while this condition (PromQL continuing `own_alert`: `unless ...`,
    # `and ...`) holds, the firing alert stays firing whatever its expression's memory (catalog persists:).
    persists: str = ""


@dataclass(frozen=True)
class Runbook:
    check: tuple[str, ...]
    act: tuple[str, ...]


@dataclass(frozen=True)
class FailureMode:
    id: str
    title: str
    group: str
    scope: str
    summary: str
    meaning: str
    why: str
    metrics: tuple[str, ...]
    thresholds: tuple[Threshold, ...]
    alerts: tuple[AlertSpec, ...]
    runbook: Runbook
    needs_profiling: bool
    workload_from: str = ROLES["workload"].default[0]
    # Symptoms of this fault that stay quiet on the same GPU while it is pending or firing:
    # (failure mode, baseline signal or "" for all of its alerts).
    covers: tuple[tuple[str, str], ...] = ()
    # The alert label a `covers` value of another mode is matched on, when that mode covers this one only
    # for some of its alerts (baseline_deviation: signal; dcgm_health: health_error_code).
    cover_label: str = "signal"
    # The training jobs' own metrics it reads (jobmetrics.INPUTS: loss, step_duration); () = DCGM only.
    job_metrics: tuple[str, ...] = ()
    windows: tuple[Window, ...] = ()  # the named ranges its alerts read ([[ w.NAME ]])
    where: Where = field(compare=False, default=Where("<builtin>"))

    def threshold(self, name: str) -> Threshold:
        return {t.name: t for t in self.thresholds}[name]


SILENCE_SCOPES = ("gpu", "node")
RECEIVERS = ("page", "ticket", "none")


@dataclass(frozen=True)
class Silence:
    """A failure mode whose firing alert inhibits every other alert of its scope (the GPU, or the node)."""
    failure_mode: str
    scope: str
    source: str
    where: Where = field(compare=False, default=Where("<builtin>"))
    # threshold of the failure mode (seconds) its subject may be dark before its alert is pending: the
    # silenced alerts' keep_firing_for must outlast it (load/resolved.check_against_catalog)
    detected_within: str = ""


@dataclass(frozen=True)
class SeverityRoute:
    severity: str
    receiver: str  # page | ticket | none (their names come from rulesgen.yaml)
    repeat_interval: int | None  # seconds; None: the route's
    source: str
    group_wait: int | None = None  # seconds; None: the route's (catalog: with a source of its own)


@dataclass(frozen=True)
class Routing:
    """catalog/alertmanager.yaml: how rulesgen's alerts are grouped, routed and silenced."""
    group_wait: int = 30
    group_interval: int = 300
    repeat_interval: int = 4 * 3600
    severities: tuple[SeverityRoute, ...] = (SeverityRoute("critical", "page", 3600, "default"),
                                             SeverityRoute("warning", "ticket", 12 * 3600, "default"),
                                             SeverityRoute("info", "none", None, "default"))
    silences: tuple[Silence, ...] = ()


@dataclass(frozen=True)
class HandMadePanel:
    """catalog/dashboards.yaml: a dashboard panel (or failure-mode row) drawn by a builder of its own, and the
    catalog names it reads. panel: the builder's id (rulesgen/model/panels.py); failure_mode: the mode
    it explains and links to (for a row, the mode whose row it is); thresholds: (role, threshold of that mode)
    for each value it draws; alerts_of: other failure modes whose firing alerts it shows."""
    panel: str
    failure_mode: str
    thresholds: tuple[tuple[str, str], ...] = ()
    alerts_of: tuple[str, ...] = ()
    where: Where = field(compare=False, default=Where("<builtin>"))


@dataclass(frozen=True)
class Catalog:
    metrics: tuple[Metric, ...]
    signals: tuple[Signal, ...]
    failure_modes: tuple[FailureMode, ...]
    xids: tuple[Xid, ...]
    gpu_default: GpuModel
    gpu_models: tuple[GpuModel, ...]
    baselines: tuple[BaselineSignal, ...] = ()
    baseline_statistics: BaselineStatistics | None = None  # with baselines.yaml
    health: HealthTable | None = None
    routing: Routing = Routing()
    hand_made_panels: tuple[HandMadePanel, ...] = ()  # catalog/dashboards.yaml; a panel not declared is not drawn
    own_limits: tuple[OwnLimit, ...] = ()  # gpu_models.yaml: limits the GPUs report themselves
    # The names the code reads, by role (rulesgen/model/roles.py), as the catalog declares or defaults them.
    roles: tuple[tuple[str, tuple[str, ...]], ...] = ()
    xid_drain: tuple[str, ...] = XID_DRAIN_UNDECLARED  # xid.yaml `drain:`: the XID classes whose alerts drain
    signal_windows: tuple[Window, ...] = ()  # signals.yaml `windows:`, read as [[ w.NAME ]] by the signals
    panel_texts: tuple[PanelText, ...] = ()  # dashboards.yaml `texts:`: the hand-made panels' descriptions
    burn_tiers: tuple[BurnTier, ...] = ()  # slos.yaml: the multiwindow burn-rate tiers
    slos: tuple[SloSpec, ...] = ()  # slos.yaml: the SLOs rulesgen can count (rulesgen.yaml `slos:` sets them)

    @property
    def alert_modes(self) -> list[str]:
        """The failure_mode label values its alerts can carry: the failure modes', and slo_burn with slos.yaml."""
        return [fm.id for fm in self.failure_modes] + ([SLO_FAILURE_MODE] if self.slos else [])

    def xid_codes(self, *classes: str) -> str:
        """Regex of the XID codes of the given classes (class order of XID_CLASSES, then catalog order), for
        xid label matchers; NONE when empty."""
        return "|".join(str(x.code) for cls in XID_CLASSES if cls in classes
                        for x in self.xids if x.xid_class == cls) or "NONE"

    def named(self, role: str) -> str | None:
        """The record or metric of a role (name_roles.ROLES); None for an optional one the catalog lacks."""
        names = self.named_all(role)
        return names[0] if names else None

    def named_all(self, role: str) -> tuple[str, ...]:
        for r, names in self.roles:
            if r == role:
                return names
        return ROLES[role].default  # a Catalog built without the loader

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if name in m.names:
                return m
        raise KeyError(name)

    def failure_mode(self, fm_id: str) -> FailureMode:
        for fm in self.failure_modes:
            if fm.id == fm_id:
                return fm
        raise KeyError(fm_id)

    def hand_made(self, panel: str) -> HandMadePanel | None:
        """The declaration of a hand-made panel, or None when the catalog does not draw it."""
        return next((p for p in self.hand_made_panels if p.panel == panel), None)

    @property
    def limit_keys(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.gpu_default.limits)

    def own_limit(self, key: str) -> OwnLimit | None:
        return next((o for o in self.own_limits if o.key == key), None)
