"""Kubernetes delivery formats: PrometheusRule, VMRule, dashboard ConfigMaps, GrafanaDashboard,
and a kustomization.yaml per folder listing them."""
from __future__ import annotations

from pathlib import PurePosixPath

from ..model.output import TIER_LABEL, Artifact, KubeOutput, RuleFile
from .prometheus import groups_dict
from .yamltext import dump, header

PROMETHEUS_RULE = ("monitoring.coreos.com/v1", "PrometheusRule", "deploy/prometheus-operator")
VMRULE = ("operator.victoriametrics.com/v1beta1", "VMRule", "deploy/victoriametrics-operator")
# A group's query delay (RuleGroup.query_delay_seconds) as each resource's engine names it.
DELAY_FIELD = {"PrometheusRule": "query_offset", "VMRule": "eval_delay"}


def _name(path: str) -> str:
    return "rulesgen-" + PurePosixPath(path).stem.replace("_", "-")


def resource_path(rule_file: str, kind: tuple[str, str, str]) -> str:
    """Where the resource of kind (PROMETHEUS_RULE, VMRULE) wrapping a rule file is written."""
    return f"{kind[2]}/{_name(rule_file)}.yaml"


def _metadata(name: str, out: KubeOutput, extra_labels=(), annotations=()) -> dict:
    meta: dict = {"name": name, "namespace": out.namespace}
    labels = {"app.kubernetes.io/managed-by": "rulesgen", **dict(out.labels), **dict(extra_labels)}
    meta["labels"] = dict(sorted(labels.items()))
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def rule_resources(rule_files: list[RuleFile], out: KubeOutput, kind: tuple[str, str, str]) -> list[Artifact]:
    """The single-server rule files as resources, labelled rulesgen.io/tier: single (`topology: single` only)."""
    api, kind_name, folder = kind
    artifacts = []
    for f in rule_files:
        doc = {"apiVersion": api, "kind": kind_name, "metadata": _metadata(_name(f.path), out, ((TIER_LABEL, "single"),)),
               "spec": groups_dict(f, DELAY_FIELD[kind_name])}
        artifacts.append(Artifact(resource_path(f.path, kind), header([f"{kind_name}: {f.description}"]) + dump(doc)))
    return artifacts + [kustomization(folder, artifacts)]


def _dashboard_resources(dashboards: list[Artifact], folder: str, what: str, document) -> list[Artifact]:
    artifacts = []
    for d in dashboards:
        name = "rulesgen-" + PurePosixPath(d.path).stem
        artifacts.append(Artifact(f"{folder}/{name}.yaml", header([f"{what}: {d.path}"]) + dump(document(name, d))))
    return artifacts + [kustomization(folder, artifacts)]


def dashboard_configmaps(dashboards: list[Artifact], out: KubeOutput) -> list[Artifact]:
    """ConfigMaps labelled grafana_dashboard: "1" for the Grafana sidecar; folder from an annotation."""
    def document(name, d):
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": _metadata(name, out, (("grafana_dashboard", "1"),), (("grafana_folder", out.folder),)),
                "data": {PurePosixPath(d.path).name: d.text}}
    return _dashboard_resources(dashboards, "deploy/grafana-dashboards", "Dashboard ConfigMap for the Grafana sidecar", document)


def grafana_dashboards(dashboards: list[Artifact], out: KubeOutput) -> list[Artifact]:
    """grafana-operator GrafanaDashboard resources (grafana.integreatly.org/v1beta1)."""
    def document(name, d):
        return {"apiVersion": "grafana.integreatly.org/v1beta1", "kind": "GrafanaDashboard",
                "metadata": _metadata(name, out),
                "spec": {"folder": out.folder, "instanceSelector": {"matchLabels": dict(out.instance_selector)},
                         "json": d.text}}
    return _dashboard_resources(dashboards, "deploy/grafana-operator", "GrafanaDashboard for grafana-operator", document)


def kustomization(folder: str, resources: list[Artifact]) -> Artifact:
    doc = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
           "resources": sorted(PurePosixPath(a.path).name for a in resources)}
    return Artifact(f"{folder}/kustomization.yaml", header(["kustomization listing the resources of this folder."]) + dump(doc))


TIERS = ("single", "shard", "global")  # the values of TIER_LABEL


def tiered_resource_path(rule_file: str, tier: str, kind: tuple[str, str, str]) -> str:
    """Where the resource of kind wrapping a tier's rule file (alerts/sharded/<tier>/X.yaml) is written."""
    return f"{kind[2]}-sharded/rulesgen-{tier}-{PurePosixPath(rule_file).stem.replace('_', '-')}.yaml"


def tiered_rule_resources(shard_files: list[RuleFile], global_files: list[RuleFile], out: KubeOutput,
                          kind: tuple[str, str, str]) -> list[Artifact]:
    """The sharded topology's rule files as resources in `<folder>-sharded/`, labelled rulesgen.io/tier: shard
    (every shard's ruleSelector: they carry the output's labels, e.g. release) or global (the Thanos ruler's,
    Mimir's, vmalert's: they carry only managed-by and the tier, so a shard's `release` selector never loads
    them). The global groups evaluate in the past by their query delay (query_offset, eval_delay)."""
    api, kind_name, folder = kind
    folder += "-sharded"
    artifacts = []
    for tier, files in (("shard", shard_files), ("global", global_files)):
        own = out if tier == "shard" else KubeOutput(enabled=True, namespace=out.namespace)
        for f in files:
            name = PurePosixPath(tiered_resource_path(f.path, tier, kind)).stem
            doc = {"apiVersion": api, "kind": kind_name, "metadata": _metadata(name, own, ((TIER_LABEL, tier),)),
                   "spec": groups_dict(f, DELAY_FIELD[kind_name])}
            artifacts.append(Artifact(f"{folder}/{name}.yaml", header([f"{kind_name} ({TIER_LABEL}: {tier}): {f.description}"]) + dump(doc)))
    return artifacts + [kustomization(folder, artifacts)]
