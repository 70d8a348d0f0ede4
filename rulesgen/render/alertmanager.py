"""alertmanager/rulesgen.yaml: the route and inhibit_rules builders/alertmanager.py made, as a complete config
that `amtool check-config` accepts."""
from __future__ import annotations

from ..model.output import AlertmanagerConfig, Artifact
from .yamltext import dump, header

PATH = "alertmanager/rulesgen.yaml"


def render_alertmanager(config: AlertmanagerConfig) -> Artifact:
    doc = {"route": config.route, "inhibit_rules": list(config.inhibit_rules),
           "receivers": [{"name": n} for n in config.receivers]}
    text = header([
        "Alertmanager routing for rulesgen alerts. A complete config that `amtool check-config` accepts:",
        "merge `route.routes[0]` (it carries its own timings) into your route tree, `inhibit_rules` into",
        "yours, and give the receivers their integrations (the page receiver to your pager, the ticket",
        "receiver to your queue; the null receiver has none: info alerts are for dashboards and job owners).",
    ]) + dump(doc)
    return Artifact(PATH, text)
