"""Fleet SLOs as the catalog defines them (catalog/slos.yaml) and as rulesgen.yaml sets them (`slos:`)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Where

ALERT_CLASSES = ("page", "ticket")  # a tier's receiver class: the burn_tier label of its alert
TIER_CHOICES = (*ALERT_CLASSES, "off")  # what rulesgen.yaml may set a tier to
PERIODS = (7 * 86400, 28 * 86400, 30 * 86400)  # the period choices (issue tracker: 7d, 28d, 30d)
SLO_FAILURE_MODE = "slo_burn"  # the failure_mode label of every SLO alert (DESIGN "SLOs")
SCOPES = ("gpu", "job", "kube_job")  # what an SLI counts: GPU-minutes, a training job's GPU-minutes, Kubernetes Jobs


@dataclass(frozen=True)
class BurnTier:
    name: str
    alert: str  # page | ticket: its default class
    long: int  # seconds
    short: int
    budget_share: float
    where: Where = field(default=Where("<builtin>"), compare=False)

    def factor(self, period: int) -> float:
        """The burn rate at which the long window spends budget_share of the period's budget."""
        return self.budget_share * period / self.long


@dataclass(frozen=True)
class SloSpec:
    """One SLO of the catalog: what it counts and its defaults."""
    id: str
    title: str
    alert_prefix: str
    objective: float  # percent
    objective_source: str
    period: int
    input_absent_for: int
    meaning: str
    why: str
    unit: str = "GPU-minutes"  # what the objective is a percentage of, as the alerts' text says it
    scope: str = "gpu"  # gpu | job | kube_job: which labels may group it
    tiers: tuple[tuple[str, str], ...] = ()  # (tier name, page | ticket | off): this SLO's own defaults
    policy: tuple[tuple[float, str], ...] = ()  # (budget left below this percent, what to do), tightest first
    check: tuple[str, ...] = ()
    do: tuple[str, ...] = ()
    where: Where = field(default=Where("<builtin>"), compare=False)

    def default_tier(self, tier: BurnTier) -> str:
        """The class of a tier when rulesgen.yaml does not set it: the SLO's own default, else the tier's."""
        return dict(self.tiers).get(tier.name, tier.alert)


@dataclass(frozen=True)
class SloSettings:
    """rulesgen.yaml `slos.<id>`: the user's objective, period, tier classes and grouping (None: the catalog's)."""
    id: str
    objective: float | None = None  # percent
    period: int | None = None
    tiers: tuple[tuple[str, str], ...] = ()  # (tier name, page | ticket | off); a tier not named keeps its default
    group_by: tuple[str, ...] | None = None  # None: the cluster label
    where: Where = field(default=Where("<defaults>"), compare=False)
    tiers_where: Where = field(default=Where("<defaults>"), compare=False)


@dataclass(frozen=True)
class Slo:
    """An SLO to render: the catalog's definition with the user's settings applied."""
    spec: SloSpec
    objective: float  # percent
    period: int
    tiers: tuple[tuple[BurnTier, str], ...]  # (tier, page | ticket), the tiers turned off left out
    group_by: tuple[str, ...]

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def budget(self) -> float:
        """The error budget: the share of the counted minutes that may be bad."""
        return round(1 - self.objective / 100, 12)


def alert_name(slo: Slo, cls: str) -> str:
    """The burn alert of an SLO's tier class: GPUCapacitySLOBurnPage, GPUCapacitySLOBurnTicket."""
    return f"{slo.spec.alert_prefix}Burn{cls.capitalize()}"


def absent_alert_name(slo: Slo) -> str:
    """The alert that a cluster's inventory is gone: GPUCapacitySLOInputAbsent."""
    return f"{slo.spec.alert_prefix}InputAbsent"


def effective(spec: SloSpec, tiers: tuple[BurnTier, ...], user: SloSettings, cluster_label: str) -> Slo:
    chosen = {t.name: dict(user.tiers).get(t.name, spec.default_tier(t)) for t in tiers}
    return Slo(spec=spec, objective=spec.objective if user.objective is None else user.objective,
               period=spec.period if user.period is None else user.period,
               tiers=tuple((t, chosen[t.name]) for t in tiers if chosen[t.name] != "off"),
               group_by=(cluster_label,) if user.group_by is None else user.group_by)
