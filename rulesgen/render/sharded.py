"""The sharded topology's files (README "Sharded topology"): the shard and global rule files, and the
Prometheus remote-write fragment each shard merges into its configuration: its external shard label
and the allowlist of exactly the series the global tier reads."""
from __future__ import annotations

import textwrap

from ..builders.sharded import REMOTE_WRITE
from ..model.output import Artifact, ShardedRules
from .prometheus import render_rule_file
from .yamltext import dump, header

GLOBAL_WRITE_URL = "http://global-tsdb.example:8428/api/v1/write"  # placeholder: the global store's write endpoint


def allowlist_regex(forwarded: tuple[str, ...]) -> str:
    """One anchored RE2 alternation of the forwarded names (a __name__ regex read by a global rule is
    kept as its own group)."""
    return "|".join(n if all(ch.isalnum() or ch in "_:" for ch in n) else f"(?:{n})" for n in forwarded)


def write_relabel_configs(sharded: ShardedRules) -> list[dict]:
    """Keep the forwarded names; then, when the global rules read only some alerts' ALERTS (named by
    alertname or failure_mode), keep ALERTS of those and the other names whatever their labels: a shard's
    other alerts stay home."""
    out = [{"source_labels": ["__name__"], "regex": allowlist_regex(sharded.forwarded), "action": "keep"}]
    if sharded.alerts_read:
        read = dict(sharded.alerts_read)
        others = allowlist_regex(tuple(n for n in sharded.forwarded if n != "ALERTS"))
        alts = ([f"ALERTS;(?:{'|'.join(read['alertname'])});.*"] if "alertname" in read else []) + (
            [f"ALERTS;[^;]*;(?:{'|'.join(read['failure_mode'])})"] if "failure_mode" in read else [])
        out.append({"source_labels": ["__name__", "alertname", "failure_mode"],
                    "regex": "|".join(alts + ([f"(?:{others});.*;.*"] if others else [])), "action": "keep"})
    return out


def alerts_read_text(sharded: ShardedRules) -> str:
    return "; ".join(f"{label} {', '.join(values)}" for label, values in sharded.alerts_read or ())


def remote_write_fragment(sharded: ShardedRules) -> Artifact:
    doc = {
        "global": {"external_labels": {sharded.shard_label: "shard-0"}},
        "remote_write": [{"url": GLOBAL_WRITE_URL, "write_relabel_configs": write_relabel_configs(sharded)}],
        "alerting": {"alert_relabel_configs": [{"action": "labeldrop", "regex": sharded.shard_label}]},
    }
    text = ("Prometheus configuration fragment for every shard: merge it into each shard's prometheus.yml. "
            f"external_labels.{sharded.shard_label}: a value of its own per shard (shard-0, shard-1 ...); every partial "
            "record keeps it and the global rules aggregate it away. remote_write.url: your global store (Thanos "
            "Receive, Mimir, VictoriaMetrics cluster vminsert); the keep-regex forwards exactly the series the global "
            f"rules in alerts/sharded/global/ read ({len(sharded.forwarded)} names)"
            + (", and the second keep rule only the ALERTS of the alerts they read (by alertname or failure_mode: "
               + alerts_read_text(sharded) + ")." if sharded.alerts_read else ".")
            + " The write_relabel_configs list is also a vmagent -remoteWrite.urlRelabelConfig file. "
            "alerting.alert_relabel_configs: the shard's alerts leave without the "
            f"{sharded.shard_label} label, so a node moved to another shard keeps its alerts' identity (README "
            '"Alert identity").')
    lines = textwrap.wrap(text, 100, break_on_hyphens=False)
    return Artifact(REMOTE_WRITE, header(lines) + dump(doc))


def sharded_artifacts(sharded: ShardedRules) -> list[Artifact]:
    return ([Artifact(f.path, render_rule_file(f)) for f in sharded.shard_files + sharded.global_files]
            + [remote_write_fragment(sharded)])
