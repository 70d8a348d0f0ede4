"""An Alertmanager route and inhibit_rules for rulesgen's alerts (validated with amtool check-config).

critical pages, warning goes to a ticket receiver, info never notifies; grouped by cluster, host and
failure mode. A GPU's other alerts are inhibited while its gpu_lost fires, and a node's while its
exporter_down fires (everything else about it is stale); a failure mode's symptoms (catalog `covers`)
while it fires on the same GPU."""
from __future__ import annotations

from ..covers import Inhibit
from ..output import Artifact
from ..settings import Settings
from .yamltext import dump, header

PATH = "alertmanager/rulesgen.yaml"


def render_alertmanager(settings: Settings, covers: list[Inhibit] = ()) -> Artifact:
    """covers: the catalog's covers as inhibit rules (rulesgen/covers.py): the covered alert is a symptom of
    the same fault on the same GPU (or DCGM's verdict on it) and is inhibited while both fire."""
    am = settings.alertmanager
    host, cluster = settings.host_label, settings.cluster_label
    route = {
        "receiver": am.null_receiver,
        "group_by": [cluster, host, "failure_mode"],
        "group_wait": "30s",
        "group_interval": "5m",
        "repeat_interval": "4h",
        "routes": [{
            "matchers": ['failure_mode=~".+"'],
            "receiver": am.null_receiver,
            "group_by": [cluster, host, "failure_mode"],
            "routes": [
                {"matchers": ['severity="critical"'], "receiver": am.page_receiver, "repeat_interval": "1h"},
                {"matchers": ['severity="warning"'], "receiver": am.ticket_receiver, "repeat_interval": "12h"},
                {"matchers": ['severity="info"'], "receiver": am.null_receiver},
            ],
        }],
    }
    inhibit = [
        {"source_matchers": ['failure_mode="gpu_lost"'], "target_matchers": ['failure_mode!="gpu_lost"'],
         "equal": [cluster, host, "gpu", "UUID"]},
        {"source_matchers": ['failure_mode="exporter_down"'], "target_matchers": ['failure_mode!="exporter_down"'],
         "equal": [cluster, host]},
    ]
    for c in covers:
        source = [f'failure_mode="{c.source}"'] + ([_matcher("severity", c.source_severities)] if c.source_severities else [])
        target = [f'failure_mode="{c.target}"'] + ([f'severity="{c.target_severity}"'] if c.target_severity else [])
        if c.label and c.values:
            target.append(_matcher(c.label, c.values))
        inhibit.append({"source_matchers": source, "target_matchers": target, "equal": [cluster, host, "gpu", "UUID"]})
    receivers = [{"name": n} for n in sorted({am.page_receiver, am.ticket_receiver, am.null_receiver})]
    doc = {"route": route, "inhibit_rules": inhibit, "receivers": receivers}
    text = header([
        "Alertmanager routing for rulesgen alerts. A complete config that `amtool check-config` accepts:",
        "merge `route.routes[0]` into your route tree, `inhibit_rules` into yours, and give the receivers",
        "their integrations (the page receiver to your pager, the ticket receiver to your queue; the",
        "null receiver has none: info alerts are for dashboards and job owners).",
    ]) + dump(doc)
    return Artifact(PATH, text)


def _matcher(label: str, values) -> str:
    values = tuple(values)
    return f'{label}="{values[0]}"' if len(values) == 1 else f'{label}=~"{"|".join(values)}"'
