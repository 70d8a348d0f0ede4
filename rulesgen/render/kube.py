"""Kubernetes delivery formats: PrometheusRule, VMRule, dashboard ConfigMaps, GrafanaDashboard,
and a kustomization.yaml per folder listing them."""
from __future__ import annotations

import json
from pathlib import PurePosixPath

from ..durations import format_duration
from ..model.output import TIER_LABEL, Artifact, KubeOutput, RuleFile
from .prometheus import groups_dict
from .yamltext import dump, header, load

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
    """The single-server rule files as resources, labelled rulesgen.io/tier: single (`topology: single` only).
    A VMRule's groups also say how far in the past vmalert evaluates them (with_latency)."""
    api, kind_name, folder = kind
    artifacts = []
    for f in rule_files:
        spec = groups_dict(f, DELAY_FIELD[kind_name])
        if kind_name == "VMRule":
            spec = with_latency(spec, out.eval_delay)
        doc = {"apiVersion": api, "kind": kind_name, "metadata": _metadata(_name(f.path), out, ((TIER_LABEL, "single"),)),
               "spec": spec}
        artifacts.append(Artifact(resource_path(f.path, kind), header([f"{kind_name}: {f.description}"]) + dump(doc)))
    return artifacts + [kustomization(folder, artifacts)]


def with_latency(spec: dict, delay: int) -> dict:
    """A VMRule's groups evaluated `delay` s in the past (outputs.vmrule.eval_delay, 10 s by default) instead of
    vmalert's -rule.evalDelay and victoria-metrics' -search.latencyOffset (both 30 s): `eval_delay` moves vmalert's
    query time back, and `params` adds latency_offset to every query of the group, which victoria-metrics
    (1.145, vmselect too) honours instead of its -search.latencyOffset; without it, a query less than 30 s old
    would be moved back to 30 s. A sample is stamped at its scrape's start and written when the scrape ends (at
    most the scrape_timeout later, 10 s by default in Prometheus and vmagent; vmagent flushes every second).
    vmalert stamps a recording rule's result with the query time, so the delay is paid once per chain of groups,
    not once per group. `eval_alignment: false`: by default vmalert also truncates the query time to a multiple
    of the group's interval, which at a 1m interval puts it anywhere from the delay to the delay plus a minute
    in the past (measured on 1.145: a 1m group evaluating at :36.6 with eval_delay 10s asked for :00); Prometheus
    queries at its evaluation time. A group with a delay of its own (none in the single server's files) keeps it."""
    d = format_duration(delay)
    groups = []
    for g in spec["groups"]:
        group = {k: v for k, v in g.items() if k != "rules"}
        group.setdefault("eval_delay", d)
        group["eval_alignment"] = False
        group["params"] = {"latency_offset": [group["eval_delay"]]}
        group["rules"] = g["rules"]
        groups.append(group)
    return {"groups": groups}


# kubectl's client-side apply keeps the whole object it applied, as compact JSON, in this annotation, and the API
# server refuses an object whose annotations (keys and values) total more than 256 KiB
# (k8s.io/apimachinery/pkg/api/validation TotalAnnotationSizeLimitB). Server-side apply keeps no such copy.
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ANNOTATION_LIMIT = 256 * 1024
DASHBOARD_FOLDERS = ("deploy/grafana-dashboards", "deploy/grafana-operator")


def compact_json(text: str) -> str:
    """A dashboard's JSON without indentation (about 60% of dashboards/*.json): the same dashboard, in a third
    less of the object kubectl copies into its annotation."""
    return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def last_applied_size(doc: dict) -> int:
    """Bytes the object's annotations take after a client-side `kubectl apply`: its own, and the last-applied copy
    as kubectl writes it (Go's encoding/json: compact, UTF-8, <, > and & escaped as \\u003c ..., U+2028 and U+2029
    as \\u2028, a trailing newline)."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"
    escapes = 5 * sum(text.count(c) for c in "<>&") + 3 * sum(text.count(c) for c in "\u2028\u2029")
    own = (doc.get("metadata") or {}).get("annotations") or {}
    return len(LAST_APPLIED) + len(text.encode()) + escapes + sum(len(str(k).encode()) + len(str(v).encode())
                                                                  for k, v in own.items())


def oversized(artifacts: list[Artifact], limit: int = ANNOTATION_LIMIT) -> list[tuple[str, int]]:
    """(path, size) of each dashboard resource whose client-side apply would pass the annotation limit."""
    out = []
    for a in artifacts:
        if a.path.startswith(DASHBOARD_FOLDERS) and not a.path.endswith("kustomization.yaml"):
            size = last_applied_size(load(a.text))
            if size > limit:
                out.append((a.path, size))
    return out


def _dashboard_resources(dashboards: list[Artifact], folder: str, what: str, document) -> list[Artifact]:
    artifacts = []
    for d in dashboards:
        name = "rulesgen-" + PurePosixPath(d.path).stem
        lines = [f"{what}: {d.path}, as compact JSON.",
                 f"A client-side `kubectl apply` copies the object into its {LAST_APPLIED}",
                 f"annotation, at most {ANNOTATION_LIMIT:,} bytes: `rulesgen render` warns when a dashboard passes it,",
                 "then apply with `kubectl apply --server-side`."]
        artifacts.append(Artifact(f"{folder}/{name}.yaml", header(lines) + dump(document(name, d))))
    return artifacts + [kustomization(folder, artifacts)]


def dashboard_configmaps(dashboards: list[Artifact], out: KubeOutput) -> list[Artifact]:
    """ConfigMaps labelled grafana_dashboard: "1" for the Grafana sidecar; folder from an annotation."""
    def document(name, d):
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": _metadata(name, out, (("grafana_dashboard", "1"),), (("grafana_folder", out.folder),)),
                "data": {PurePosixPath(d.path).name: compact_json(d.text)}}
    return _dashboard_resources(dashboards, DASHBOARD_FOLDERS[0], "Dashboard ConfigMap for the Grafana sidecar", document)


def grafana_dashboards(dashboards: list[Artifact], out: KubeOutput) -> list[Artifact]:
    """grafana-operator GrafanaDashboard resources (grafana.integreatly.org/v1beta1)."""
    def document(name, d):
        return {"apiVersion": "grafana.integreatly.org/v1beta1", "kind": "GrafanaDashboard",
                "metadata": _metadata(name, out),
                "spec": {"folder": out.folder, "instanceSelector": {"matchLabels": dict(out.instance_selector)},
                         "json": compact_json(d.text)}}
    return _dashboard_resources(dashboards, DASHBOARD_FOLDERS[1], "GrafanaDashboard for grafana-operator", document)


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
