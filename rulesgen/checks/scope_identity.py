"""scope-identity: every alert carries the labels that name its subject (README "Alert identity"): the
cluster label always, and by its failure mode's catalog scope the host label (node), gpu and UUID too
(gpu). Alertmanager groups and inhibits on them (alertmanager/rulesgen.yaml): an alert whose aggregation
dropped one is grouped with other clusters' or nodes' alerts and escapes its own node's inhibitions.
Which labels it can carry is read from the trees of its rules, as alert-identity reads one (Rule.alert_carries)."""
from ..catalog import bundled_catalog_dir, load_catalog
from ..load.settings import Settings
from ..load.yamlsource import where_of
from ..model.catalog import Catalog
from .base import RULE, Check, Rule


def mode_identity(catalog: Catalog, settings: Settings) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(failure_mode, the labels its scope identifies): Options.identity."""
    return tuple((fm.id, settings.scope_labels(fm.scope)) for fm in catalog.failure_modes)


def bundled_identity() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """mode_identity of the bundled catalog under the default labels (lint_files without a catalog given)."""
    return mode_identity(load_catalog(bundled_catalog_dir()), Settings())


def run(rule: Rule):
    if "alert" not in rule.node or rule.tree is None:
        return
    labels = rule.node.get("labels") or {}
    mode = str(labels.get("failure_mode", ""))
    required = dict(rule.options.identity).get(mode, (rule.options.cluster_label,))
    carried = rule.alert_carries
    missing = [k for k in required if k not in labels and not carried.can_carry(k)]
    if missing:
        scope = f"failure mode {mode}'s subject" if mode else "its subject"
        yield rule.hit(f"cannot carry {', '.join(missing)}, which name {scope} ({', '.join(required)}): Alertmanager "
                       "groups and inhibits by them; keep them in the aggregation (by (...), on (...))",
                       where_of(rule.node, "alert"))


CHECK = Check("scope-identity", "error", True,
              "an alert carries the cluster label and its failure mode's scope identity (README \"Alert identity\")",
              RULE, run)
