"""The rendered SLOs as OpenSLO v1 documents (slos/openslo.yaml), for teams that track SLOs in another tool
(OpenSLO's spec: github.com/OpenSLO/OpenSLO, v1). The SLI is the same exact ratio the rules count: a ratio
metric whose `bad` and `total` queries read the per-evaluation counts of alerts/prometheus/slos.yaml, one
series per group (`group_by`); the burn tiers become inline alert policies with burn-rate conditions."""
from __future__ import annotations

import re

from ..durations import format_duration
from ..model.output import Artifact
from ..model.slos import Slo
from ..promql.text import format_number
from .yamltext import dump, header

PATH = "slos/openslo.yaml"
SERVICE = "gpu-fleet"
DESCRIPTION_MAX = 1050  # OpenSLO v1: spec.description is at most 1050 characters


def _name(text: str) -> str:
    """An OpenSLO name: DNS-1123 (lowercase alphanumerics and '-', at most 63)."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63]


def _description(text: str) -> str:
    """The SLO's meaning, cut at the last sentence that fits."""
    if len(text) <= DESCRIPTION_MAX:
        return text
    cut = text[:DESCRIPTION_MAX]
    return cut[:cut.rfind(". ") + 1] if ". " in cut else cut


def _source(query: str) -> dict:
    return {"metricSource": {"type": "Prometheus", "spec": {"query": query}}}


def _slo(slo: Slo, bad: str, total: str) -> dict:
    name = _name(slo.id)
    conditions = [{"kind": "AlertCondition",
                   "metadata": {"name": _name(f"{slo.id}-{tier.name}")},
                   "spec": {"severity": "critical" if cls == "page" else "warning",
                            "condition": {"kind": "burnrate", "op": "gte",
                                          "threshold": float(format_number(round(tier.factor(slo.period), 6))),
                                          "lookbackWindow": format_duration(tier.long),
                                          "alertAfter": format_duration(tier.short)}}}
                  for tier, cls in slo.tiers]
    doc = {"apiVersion": "openslo/v1", "kind": "SLO",
           "metadata": {"name": name, "displayName": slo.spec.title,
                        "labels": {"rulesgen.io/group-by": ".".join(slo.group_by)}},
           "spec": {"description": _description(slo.spec.meaning), "service": SERVICE,
                    "indicator": {"metadata": {"name": f"{name}-sli", "displayName": f"{slo.spec.title}: bad over total"},
                                  "spec": {"ratioMetric": {"counter": False, "bad": _source(bad), "total": _source(total)}}},
                    "timeWindow": [{"duration": format_duration(slo.period), "isRolling": True}],
                    "budgetingMethod": "Occurrences",
                    "objectives": [{"displayName": f"{format_number(slo.objective)}% of the {slo.spec.unit}",
                                    "target": round(slo.objective / 100, 8)}]}}
    if conditions:  # OpenSLO v1 allows one condition per alert policy: a policy per tier
        doc["spec"]["alertPolicies"] = [
            {"kind": "AlertPolicy", "metadata": {"name": c["metadata"]["name"]},
             "spec": {"description": f"The {tier.name} burn tier rulesgen renders as {slo.spec.alert_prefix}Burn{cls.capitalize()}",
                      "alertWhenBreaching": True, "conditions": [c]}}
            for c, (tier, cls) in zip(conditions, slo.tiers)]
    return doc


def render_openslo(slos: tuple[Slo, ...], counts: dict[str, tuple[str, str]]) -> Artifact:
    """counts: each SLO's (bad, total) per-evaluation count records (builders/slos.names)."""
    service = {"apiVersion": "openslo/v1", "kind": "Service", "metadata": {"name": SERVICE, "displayName": "GPU fleet"},
               "spec": {"description": "The GPU fleet whose SLOs rulesgen counts (alerts/prometheus/slos.yaml)."}}
    docs = [service] + [_slo(s, *counts[s.id]) for s in slos]
    text = header(["OpenSLO v1: the SLOs of rulesgen.yaml `slos:` (docs/slos.md). The rules that count them are in",
                   "alerts/prometheus/slos.yaml; a tool reading this file sums `bad` and `total` over its windows."])
    return Artifact(PATH, text + "---\n".join(dump(d) for d in docs))
