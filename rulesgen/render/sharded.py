"""The sharded topology's files (README "Sharded topology"): the shard and global rule files, and the
configuration each shard applies as it is (render/shard_config.py): its shard label's value, its remote
write to the global store and the allowlist of exactly the series the global tier reads."""
from __future__ import annotations

from ..model.output import Artifact, ShardedRules
from .prometheus import render_rule_file
from .shard_config import shard_configuration


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


def sharded_artifacts(sharded: ShardedRules, namespace: str = "monitoring") -> list[Artifact]:
    """namespace: of the Kubernetes objects among the shards' configuration (the PrometheusRule output's)."""
    return ([Artifact(f.path, render_rule_file(f)) for f in sharded.shard_files + sharded.global_files]
            + shard_configuration(sharded, write_relabel_configs(sharded), allowlist_what(sharded), namespace))


def allowlist_what(sharded: ShardedRules) -> str:
    """What the allowlist keeps, in words (the headers of the shards' configuration)."""
    return (f"exactly the series the global rules in alerts/sharded/global/ read ({len(sharded.forwarded)} names)"
            + (", and of ALERTS only the alerts they read (by alertname or failure_mode: "
               + alerts_read_text(sharded) + ")" if sharded.alerts_read else ""))
