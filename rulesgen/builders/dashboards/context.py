"""What every dashboard builder reads: the catalog, settings and rules behind one `Context`, the
dashboard variables, and how a query is filtered by them."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from grafanalib.core import Template

from ...load.resolved import Resolved, resolve
from ...load.settings import Settings
from ...model import conventions
from ...model import kube_state as ksm
from ...model.catalog import Catalog, FailureMode
from ...model.output import RuleSet
from ...model.panels import PANELS
from ...promql import labels as label_flow
from ...promql import printer as promql_print
from ...promql import text as promql
from ...promql import tree as promql_tree

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
ALL_KEYS = ("cluster", "host", "gpu", "modelName", "namespace", "workload", "pod")
# The keys whose variables list the GPUs' labels (the `reporting` record); the others list the jobs' (`workload`).
GPU_KEYS = ("cluster", "host", "gpu", "modelName")
# The label the workload record names a GPU's job with (signals.yaml gpu:dcgm_workload:info, workload_regex).
WORKLOAD_LABEL = "workload"


@dataclass(frozen=True)
class Variables:
    """Dashboard variables in chain order: (variable name, label it selects), one per key of ALL_KEYS."""
    chain: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, settings: Settings) -> "Variables":
        return cls(((conventions.CLUSTER_VARIABLE, settings.cluster_label), (settings.host_label, settings.host_label), ("gpu", "gpu"),
                    ("modelName", "modelName"), ("namespace", settings.namespace_label),
                    (WORKLOAD_LABEL, WORKLOAD_LABEL), ("pod", settings.pod_label)))

    def name(self, key: str) -> str:
        """The variable's name (and URL parameter var-NAME) of a key of ALL_KEYS."""
        return dict(zip(ALL_KEYS, self.chain))[key][0]

    def label(self, key: str) -> str:
        return dict(zip(ALL_KEYS, self.chain))[key][1]

    def matchers(self, keys) -> str:
        """Label matchers for the variables named by keys (ALL_KEYS: cluster, host, gpu, modelName, namespace,
        workload, pod)."""
        by_key = dict(zip(ALL_KEYS, self.chain))
        return ", ".join(f'{label}=~"${var}"' for key in keys for var, label in [by_key[key]])


# Which variables a series of each level can be filtered by (labels the level keeps).
LEVEL_KEYS = {"gpu": GPU_KEYS, "node": ("cluster", "host"), "job": ("cluster", "namespace", "workload"),
              "fleet": ("cluster",), "model": ("cluster",), "raw": ALL_KEYS, "other": ("cluster",)}
SCOPE_KEYS = {"gpu": ALL_KEYS, "node": ("cluster", "host"), "fleet": ("cluster",)}


def level(name: str) -> str:
    """The level of a series name: a recording rule's prefix (gpu, node ...), raw for an exporter field."""
    if name.startswith("DCGM_"):
        return "raw"
    prefix = name.split(":")[0] if ":" in name else ""
    return prefix if prefix in LEVEL_KEYS else "other"


@dataclass(frozen=True)
class Reads:
    """A hand-made panel's declaration, resolved: the failure mode it explains, the values of the thresholds
    it draws by the builder's role (with the user's overrides), the failure modes whose alerts it shows."""
    panel: str
    fm: FailureMode
    values: dict[str, float]
    names: dict[str, str]  # role -> the threshold's name in the catalog
    alerts_of: tuple[FailureMode, ...] = ()

    def value(self, role: str) -> float:
        """A threshold the panel draws, by its role in panel_specs.PANELS (which the catalog maps to a threshold)."""
        if role not in self.values:
            raise KeyError(f"hand-made panel {self.panel} draws no threshold of role {role!r} (panel_specs.py: "
                           f"{', '.join(self.values) or 'none'})")
        return self.values[role]


@dataclass(frozen=True)
class Context:
    catalog: Catalog
    settings: Settings
    rules: RuleSet
    resolved: Resolved
    variables: Variables
    series_names: tuple[str, ...]  # recording rules, catalog metrics, up, ALERTS
    # record -> the labels its series carry (promql/labels.py, from the rendered rules): what data links may read
    record_labels: Callable[[str], label_flow.LabelSet | None] = field(compare=False, repr=False, default=lambda _: None)

    @classmethod
    def of(cls, catalog: Catalog, settings: Settings, rules: RuleSet, resolved: Resolved | None = None) -> "Context":
        names = {r.record for r in rules.rules if r.record} | {n for m in catalog.metrics for n in m.names} | {"up", "ALERTS"}
        return cls(catalog, settings, rules, resolved or resolve(catalog, settings), Variables.of(settings),
                   tuple(sorted(names, key=lambda n: (-len(n), n))),
                   label_flow.record_labels([(r.record, r.expr) for r in rules.rules if r.record]))

    def named(self, role: str) -> str:
        """The record or metric of a role (rulesgen/model/roles.py); the loader checked the ones the code needs."""
        name = self.catalog.named(role)
        if name is None:
            raise KeyError(f"the catalog names no series of role {role!r} (name_roles.py); the loader should have said so")
        return name

    def signal(self, record: str):
        return next((s for s in self.catalog.signals if s.record == record), None)

    def unit(self, record: str, default: str = "short") -> str:
        s = self.signal(record)
        return s.unit if s else default

    def hand_made(self, panel: str) -> "Reads | None":
        """What the hand-made panel `panel` reads (catalog/dashboards.yaml), or None when the catalog does not
        declare it: then the panel is not drawn. The catalog loader checked every name."""
        if panel not in PANELS:
            raise KeyError(f"hand-made panel {panel!r} is not in rulesgen/model/panels.py")
        declared = self.catalog.hand_made(panel)
        if declared is None:
            return None
        fm = self.catalog.failure_mode(declared.failure_mode)
        values = self.threshold_values(fm)
        return Reads(panel, fm, {role: values[name] for role, name in declared.thresholds}, dict(declared.thresholds),
                     tuple(self.catalog.failure_mode(m) for m in declared.alerts_of))

    def threshold_values(self, fm: FailureMode) -> dict[str, float]:
        """The failure mode's thresholds, with the user's overrides from rulesgen.yaml."""
        return {name: float(value) for name, value in self.resolved.mode(fm.id).values().items()}

    def severity(self, fm: FailureMode, severity: str) -> str:
        """An alert's severity after the user's remapping in rulesgen.yaml."""
        return self.resolved.mode(fm.id).severity(severity)

    @property
    def gpu_id(self) -> str:
        return promql.by(self.settings.gpu_identity)

    def gpu_series(self, record: str, *extra: str) -> str:
        return f"{record}{{{self.gpu_matchers(*extra)}}}"

    def gpu_matchers(self, *extra: str) -> str:
        return ", ".join(x for x in (self.variables.matchers(LEVEL_KEYS['gpu']), *extra) if x)

    def workload_info(self, *extra: str) -> str:
        matchers = (self.variables.matchers(("cluster", "host", "gpu", "namespace", "workload", "pod")), *extra)
        return f"{self.named('workload')}{{{', '.join(matchers)}}}"

    def kube_state(self, series: str, *matchers: str) -> str:
        """A kube-state-metrics series with `matchers`, of the objects in the selected cluster and namespaces (its
        `namespace` is the object's, whatever rulesgen.yaml names the exporter's pod namespace label)."""
        namespace = f'{ksm.NAMESPACE}=~"${self.variables.name("namespace")}"'
        return f"{series}{{{', '.join((*matchers, self.variables.matchers(('cluster',)), namespace))}}}"

    def kube_state_by(self, *labels: str) -> str:
        """What keys a kube-state-metrics object: its cluster and namespace, then `labels` (two clusters' pods of one
        name are two pods: a Grafana over Thanos or Mimir sees them side by side)."""
        return promql.by((self.settings.cluster_label, ksm.NAMESPACE, *labels))

    def selected_gpus(self, expr: str) -> str:
        """Keep the GPUs the variables select ("All" keeps GPUs without a pod too). Filtering the
        result rather than every selector keeps inline peer aggregations (a node's newest sample)
        computed over all the node's GPUs. A scalar (a threshold such as `time() - 120`) selects
        no GPU and is drawn as it is: PromQL matches only vectors."""
        if not promql_tree.selectors(expr):
            return expr
        gpus = self.gpu_series(self.named("reporting"))
        return f"({expr})\n  and on ({self.gpu_id}) {gpus}\n  and on ({self.gpu_id}) {self.workload_info()}"

    def per_gpu(self, expr: str) -> str:
        """A per-model expression (the model limits) repeated on each of the model's GPUs, so it can
        be filtered and labelled like the per-GPU series it is compared with."""
        model = promql.by(self.settings.model_labels)
        return f"({expr})\n  + on ({model}) group_right () (0 * {self.named('reporting')})"

    def of_selected_pods(self, expr: str) -> str:
        """Per-GPU series labelled with the selected pod running on the GPU (GPUs with a pod only)."""
        wl = promql.by((*self.settings.workload_labels, "workload"))
        with_pod = self.workload_info(self.settings.pod_label + '!=""')
        return f"{expr}\n  * on ({self.gpu_id}) group_left ({wl}) {with_pod}"

    def filtered(self, expr: str, scope: str) -> str:
        """Add the cluster and host variables' matchers to every series selector in expr (printed
        from its syntax tree, on one line): every aggregation keeps the cluster label, and the
        catalog's peer groups never span nodes."""
        known = set(self.series_names)

        def add(s: promql_tree.Selector) -> list[str]:
            if s.name not in known:
                return []
            keys = [k for k in LEVEL_KEYS[level(s.name)] if k in SCOPE_KEYS[scope] and k in ("cluster", "host")]
            return [self.variables.matchers(keys)]
        return promql_print.with_matchers(expr, add)

    def legend(self, scope: str, extra_labels=()) -> str:
        host = self.settings.host_label
        base = {"gpu": f"{{{{{host}}}}} gpu {{{{gpu}}}}", "node": f"{{{{{host}}}}} {{{{instance}}}}",
                "fleet": f"{{{{{self.settings.cluster_label}}}}}"}[scope]
        return " ".join([base, *(f"{label} {{{{{label}}}}}" for label in extra_labels if f"{{{{{label}}}}}" not in base)])


def variable_templates(ctx: Context, used: set[str]) -> list[Template]:
    """The datasource, then the variables of ALL_KEYS the dashboard's panels use (`used`: their names), each
    listing its values from a recording rule that carries its label under one name whatever the exporter
    (the host label normalised from Hostname and hostname: dcgm-exporter 4.8.3 renamed it): the GPU keys from
    the `reporting` record, the job keys from the `workload` record; each filtered by the variables before it
    that its record carries."""
    out = [Template(name="datasource", label="Data source", type="datasource", query="prometheus", hide=0)]
    declared: list[str] = []
    for key in ALL_KEYS:
        var, label = ctx.variables.name(key), ctx.variables.label(key)
        if var not in used:
            continue
        record = ctx.named("reporting") if key in GPU_KEYS else ctx.named("workload")
        carried = GPU_KEYS if key in GPU_KEYS else ("cluster", "host", "gpu", "namespace", "workload", "pod")
        before = ctx.variables.matchers([k for k in declared if k in carried])
        selector = f"{record}{{{before}}}" if before else record
        out.append(Template(name=var, label=var, query=f"label_values({selector}, {label})",
                            dataSource=DATASOURCE, includeAll=True, multi=True, allValue=".*", refresh=2, sort=1))
        declared.append(key)
    return out
