"""An Alertmanager route and inhibit_rules for rulesgen's alerts (render/alertmanager.py writes them;
validated with amtool check-config).

Everything comes from the catalog (catalog/alertmanager.yaml): the timings, a receiver per severity
(critical pages, warning goes to a ticket receiver, info never notifies) and the severity's own group_wait
where the catalog sets one (critical), the failure modes that silence their GPU or node (gpu_lost,
exporter_down); and a failure mode's symptoms (catalog `covers`)
are inhibited while it fires on the same GPU. Grouped by cluster, host and failure mode."""
from __future__ import annotations

from ..durations import format_duration
from ..load.settings import Settings
from ..model.catalog import Routing
from ..model.output import AlertmanagerConfig
from ..model.slos import ALERT_CLASSES, SLO_FAILURE_MODE, Slo
from .covers import Inhibit


def build_alertmanager(settings: Settings, routing: Routing, covers: list[Inhibit] = (), slos: tuple[Slo, ...] = ()) -> AlertmanagerConfig:
    """routing: catalog/alertmanager.yaml. covers: the catalog's covers as inhibit rules (rulesgen/builders/covers.py):
    the covered alert is a symptom of the same fault on the same GPU (or DCGM's verdict on it) and is
    inhibited while both fire. slos: an SLO's page-tier burn alert inhibits its ticket-tier one (the same SLO
    and group: the fast burn says it all)."""
    am = settings.alertmanager
    host, cluster = settings.host_label, settings.cluster_label
    receiver = {"page": am.page_receiver, "ticket": am.ticket_receiver, "none": am.null_receiver}
    # The timings sit on routes[0] too: it is the part users merge under their own root, whose timings
    # it would otherwise inherit.
    timings = {"group_wait": format_duration(routing.group_wait),
               "group_interval": format_duration(routing.group_interval),
               "repeat_interval": format_duration(routing.repeat_interval)}
    route = {
        "receiver": am.null_receiver,
        "group_by": [cluster, host, "failure_mode"],
        **timings,
        "routes": [{
            "matchers": ['failure_mode=~".+"'],
            "receiver": am.null_receiver,
            "group_by": [cluster, host, "failure_mode"],
            **timings,
            "routes": [{"matchers": [f'severity="{r.severity}"'], "receiver": receiver[r.receiver],
                        **({"group_wait": format_duration(r.group_wait)} if r.group_wait is not None else {}),
                        **({"repeat_interval": format_duration(r.repeat_interval)} if r.repeat_interval else {})}
                       for r in routing.severities],
        }],
    }
    scope = {"gpu": list(settings.gpu_identity), "node": list(settings.node_labels)}
    inhibit = [{"source_matchers": [f'failure_mode="{s.failure_mode}"'],
                "target_matchers": [f'failure_mode!="{s.failure_mode}"'], "equal": list(scope[s.scope])}
               for s in routing.silences]
    for c in covers:
        source = [f'failure_mode="{c.source}"'] + ([_matcher("severity", c.source_severities)] if c.source_severities else [])
        target = [f'failure_mode="{c.target}"'] + ([f'severity="{c.target_severity}"'] if c.target_severity else [])
        if c.label and c.values:
            target.append(_matcher(c.label, c.values))
        inhibit.append({"source_matchers": source, "target_matchers": target, "equal": list(scope["gpu"])})
    for slo in slos:
        if {c for _, c in slo.tiers} == set(ALERT_CLASSES):
            same = [f'failure_mode="{SLO_FAILURE_MODE}"', f'slo="{slo.id}"']
            inhibit.append({"source_matchers": same + ['burn_tier="page"'], "target_matchers": same + ['burn_tier="ticket"'],
                            "equal": list(slo.group_by)})
    receivers = tuple(sorted({am.page_receiver, am.ticket_receiver, am.null_receiver}))
    return AlertmanagerConfig(route, tuple(inhibit), receivers)


def _matcher(label: str, values) -> str:
    values = tuple(values)
    return f'{label}="{values[0]}"' if len(values) == 1 else f'{label}=~"{"|".join(values)}"'
