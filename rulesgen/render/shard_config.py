"""What each shard applies as it is (rulesgen.yaml `sharding:`, docs/sharding.md "Deploying"), by where the
shard label's value comes from:

- static: alerts/sharded/remote-write-shard-N.yaml, one Prometheus configuration fragment per value
  (external label, remote write with the allowlist, the label dropped from the shard's alerts);
- prometheus-operator: a merge patch of the Prometheus resource (shards, the label as the Operator's shard
  number `$(SHARD)`, the remote write, the shards' ruleSelector refusing the other tiers) and the Secret of
  its alert relabelling;
- vmagent: per shard, vmagent's flags (-promscrape.cluster.*, the remote write) and its per-URL relabelling,
  which keeps the allowlist and adds the label with the shard's -promscrape.cluster.memberNum."""
from __future__ import annotations

import textwrap

from ..durations import format_duration
from ..model.output import TIER_LABEL, Artifact, ShardedRules
from .yamltext import dump, header

FOLDER = "alerts/sharded"
OPERATOR_PATCH = f"{FOLDER}/prometheus-operator-patch.yaml"
OPERATOR_SECRET = f"{FOLDER}/prometheus-operator-alert-relabel.yaml"
SECRET_NAME, SECRET_KEY = "rulesgen-shard-alert-relabel", "alert-relabel.yaml"
# The Operator's own external labels: one per pod (the replica) and one per Prometheus resource. Forwarded,
# they would stay on the series the global rules read (`max without (shard)` drops only the shard label).
OPERATOR_LABELS = "prometheus|prometheus_replica"


def static_path(i: int) -> str:
    return f"{FOLDER}/remote-write-shard-{i}.yaml"


def vmagent_paths(i: int) -> tuple[str, str]:
    """(flags, relabel config) of shard i under vmagent."""
    return f"{FOLDER}/vmagent-shard-{i}.flags", f"{FOLDER}/vmagent-relabel-shard-{i}.yaml"


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, 100, break_on_hyphens=False)


def _delay_text(sharded: ShardedRules) -> str:
    d = format_duration(sharded.deployment.evaluation_delay)
    return (f"The global tier evaluates {d} in the past (sharding.evaluation_delay: query_offset in its PrometheusRules, "
            f"eval_delay in its VMRules; with plain files, vmalert -rule.evalDelay={d} or Prometheus' "
            f"global.rule_query_offset: {d}).")


def _url_text(sharded: ShardedRules) -> str:
    dep = sharded.deployment
    return ("remote_write.url is an EXAMPLE HOST: set sharding.write_url in rulesgen.yaml (the global store: Thanos "
            "Receive, Mimir, VictoriaMetrics vminsert) and render again." if dep.placeholder else
            "The URL is sharding.write_url.")


def shard_configuration(sharded: ShardedRules, relabel: list[dict], what: str, namespace: str) -> list[Artifact]:
    source = sharded.deployment.source
    if source == "prometheus-operator":
        return operator_patch(sharded, relabel, what, namespace)
    if source == "vmagent":
        return vmagent_flags(sharded, relabel, what)
    return static_fragments(sharded, relabel, what)


def static_fragments(sharded: ShardedRules, relabel: list[dict], what: str) -> list[Artifact]:
    dep, label = sharded.deployment, sharded.shard_label
    out = []
    for i, value in enumerate(dep.values):
        doc = {
            "global": {"external_labels": {label: value}},
            "remote_write": [{"url": dep.write_url, "write_relabel_configs": relabel}],
            "alerting": {"alert_relabel_configs": [{"action": "labeldrop", "regex": label}]},
        }
        text = (f"Prometheus configuration fragment of shard {i} of {len(dep.values)} ({label}={value}, sharding.values "
                "in rulesgen.yaml): merge it into that Prometheus' prometheus.yml (each remote-write-shard-N.yaml into "
                "its own shard's). "
                + f"remote_write forwards {what}. " + _url_text(sharded)
                + f" alerting.alert_relabel_configs: the shard's alerts leave without the {label} label, so a node moved "
                  "to another shard keeps its alerts' identity (README \"Alert identity\"). " + _delay_text(sharded))
        out.append(Artifact(static_path(i), header(_wrap(text)) + dump(doc)))
    return out


def _camel(rule: dict) -> dict:
    """A relabel rule as the Prometheus Operator spells it (sourceLabels, targetLabel)."""
    names = {"source_labels": "sourceLabels", "target_label": "targetLabel"}
    return {names.get(k, k): v for k, v in rule.items()}


def operator_patch(sharded: ShardedRules, relabel: list[dict], what: str, namespace: str) -> list[Artifact]:
    dep, label = sharded.deployment, sharded.shard_label
    spec = {
        "shards": len(dep.values),
        "externalLabels": {label: "$(SHARD)"},
        "remoteWrite": [{"url": dep.write_url, "writeRelabelConfigs": [_camel(r) for r in relabel] + [
            {"action": "labeldrop", "regex": OPERATOR_LABELS}]}],
        "additionalAlertRelabelConfigs": {"name": SECRET_NAME, "key": SECRET_KEY},
        "ruleSelector": {"matchExpressions": [{"key": TIER_LABEL, "operator": "NotIn", "values": ["global", "single"]}]},
    }
    text = ("Merge patch of the Prometheus resource the Prometheus Operator runs the shards from: kubectl -n "
            f"{namespace} patch prometheus NAME --type merge --patch-file {OPERATOR_PATCH} (after applying "
            f"{OPERATOR_SECRET}). shards: {len(dep.values)} (sharding.shards). externalLabels.{label}: $(SHARD), which "
            "the Operator's config reloader replaces by each shard's number (0, 1, ...; its pods carry it as "
            "operator.prometheus.io/shard). remoteWrite forwards " + what + ", without the Operator's own "
            f"external labels ({OPERATOR_LABELS.replace('|', ', ')}). " + _url_text(sharded).replace("remote_write.url",
                                                                                                "remoteWrite.url")
            + f" additionalAlertRelabelConfigs: the shards' alerts leave without the {label} label. ruleSelector: the "
            f"shards never load a rule object labelled {TIER_LABEL}: global or single (a merge patch keeps your "
            "matchLabels). " + _delay_text(sharded))
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": SECRET_NAME, "namespace": namespace,
                           "labels": {"app.kubernetes.io/managed-by": "rulesgen"}},
              "stringData": {SECRET_KEY: dump([{"action": "labeldrop", "regex": label}])}}
    return [Artifact(OPERATOR_PATCH, header(_wrap(text)) + dump({"spec": spec})),
            Artifact(OPERATOR_SECRET, header(_wrap(f"The alert relabelling {OPERATOR_PATCH} names: the shards' alerts "
                                                   f"leave without the {label} label.")) + dump(secret))]


def vmagent_flags(sharded: ShardedRules, relabel: list[dict], what: str) -> list[Artifact]:
    dep, label = sharded.deployment, sharded.shard_label
    n = len(dep.values)
    out = []
    for i, value in enumerate(dep.values):
        flags_path, relabel_path = vmagent_paths(i)
        flags = [f"-promscrape.cluster.membersCount={n}", f"-promscrape.cluster.memberNum={i}",
                 f"-remoteWrite.url={dep.write_url}", f"-remoteWrite.urlRelabelConfig={relabel_path}"]
        text = (f"vmagent's flags for shard {i} of {n} (sharding.source: vmagent), one a line: vmagent $(grep -v '^#' "
                f"{flags_path}), from the rendered repository's root (or mount alerts/sharded/ at the same path). It "
                f"scrapes its 1/{n} of the targets and forwards to the global store, through {relabel_path}, {what}, "
                f"labelled {label}={value}. Add the shard's own store (the one its vmalert evaluates "
                "alerts/sharded/shard/ over) as a further -remoteWrite.url after these, and point that vmalert's "
                "-remoteWrite.url at this vmagent (/api/v1/write), so its records and ALERTS are forwarded too. "
                + _url_text(sharded).replace("remote_write.url", "-remoteWrite.url") + " " + _delay_text(sharded))
        out.append(Artifact(flags_path, header(_wrap(text)) + "\n".join(flags) + "\n"))
        rules = relabel + [{"target_label": label, "replacement": value}]
        out.append(Artifact(relabel_path, header(_wrap(
            f"vmagent -remoteWrite.urlRelabelConfig of shard {i} ({flags_path}): keeps {what}, and adds {label}={value} "
            "to what goes to the global store only (the shard's own store and its alerts stay without it, as "
            "Prometheus' external labels do).")) + dump(rules)))
    return out
