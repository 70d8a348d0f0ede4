"""The pure parts of benchmarks/sharded.py (no server, tested in tests/test_bench_sharded.py): the hashmod
split of the node targets, the servers' configurations, the alert comparison, the extrapolation to a
larger fleet and its arithmetic."""
from __future__ import annotations

import copy
import hashlib
import math
from dataclasses import dataclass

SHARD_LABEL = "shard"
HASH_LABEL = "__tmp_hash"
# Labels an alert's identity does not include here: the shard's external label (alerts leave a shard
# without it, alerts/sharded/remote-write.yaml), the state.
NOT_IDENTITY = (SHARD_LABEL, "alertstate")


def hashmod(value: str, modulus: int) -> int:
    """Prometheus' relabel `hashmod` of one source label's value: the last 8 bytes of its MD5, big-endian,
    modulo `modulus` (prometheus/model/relabel/relabel.go)."""
    return int.from_bytes(hashlib.md5(value.encode()).digest()[8:], "big") % modulus


def split_targets(addresses: list[str], shards: int) -> list[list[int]]:
    """Indexes of `addresses` (each target's __address__) per shard, as `hashmod` over __address__ deals
    them: the Prometheus Operator's `shards`."""
    out: list[list[int]] = [[] for _ in range(shards)]
    for i, address in enumerate(addresses):
        out[hashmod(address, shards)].append(i)
    return out


def shard_scrape_job(job: dict, shard: int, shards: int) -> dict:
    """A scrape job that keeps only its shard's targets: the Prometheus Operator's relabelling."""
    out = copy.deepcopy(job)
    out["relabel_configs"] = [
        {"source_labels": ["__address__"], "modulus": shards, "target_label": HASH_LABEL, "action": "hashmod"},
        {"source_labels": [HASH_LABEL], "regex": str(shard), "action": "keep"},
    ] + list(job.get("relabel_configs") or [])
    return out


def only_targets(job: dict, addresses: set[str]) -> dict:
    """The scrape job with only the static targets at `addresses`: a shard's targets for a scraper whose
    own `hashmod` would deal them differently (VictoriaMetrics 1.145 keeps other targets than Prometheus
    for the same relabelling)."""
    out = copy.deepcopy(job)
    out["static_configs"] = [dict(sc, targets=[t for t in sc["targets"] if t in addresses])
                             for sc in job["static_configs"]]
    out["static_configs"] = [sc for sc in out["static_configs"] if sc["targets"]]
    return out


def shard_config(fragment: dict, shard: int, remote_write_url: str, rule_files: list[str], scrape_job: dict,
                 shards: int, evaluation_interval: str) -> dict:
    """One shard's prometheus.yml: the rendered remote-write fragment (external label with this shard's
    value, its write_relabel_configs allowlist, alerting relabelling) merged with the shard's scrape job
    and rule files; the fragment's example URL replaced by the global store's."""
    out = copy.deepcopy(fragment)
    glob = out.setdefault("global", {})
    glob["external_labels"] = {k: f"shard-{shard}" for k in (glob.get("external_labels") or {SHARD_LABEL: ""})}
    glob["scrape_interval"] = scrape_job["scrape_interval"]
    glob["evaluation_interval"] = evaluation_interval
    for rw in out.get("remote_write") or []:
        rw["url"] = remote_write_url
    out["rule_files"] = list(rule_files)
    out["scrape_configs"] = [shard_scrape_job(scrape_job, shard, shards)]
    return out


def allowlist(fragment: dict) -> str:
    """The keep-regex on __name__ of the fragment's remote write."""
    for rule in fragment["remote_write"][0]["write_relabel_configs"]:
        if rule.get("action") == "keep" and rule.get("source_labels") == ["__name__"]:
            return rule["regex"]
    raise ValueError("no keep rule on __name__ in write_relabel_configs")


def alert_key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k not in NOT_IDENTITY))


def firing(alerts: list[dict]) -> set[tuple[tuple[str, str], ...]]:
    """Identity of the firing alerts of an /api/v1/alerts answer (Prometheus' and vmalert's shape)."""
    return {alert_key(a["labels"]) for a in alerts if a.get("state") == "firing"}


def compare_alerts(reference: list[dict], tiers: list[list[dict]]) -> tuple[set, set]:
    """(extra, missing): firing alerts the shards and global tier have and one server has not, and the
    reverse. Alerts are compared by name and labels, the shard label ignored."""
    ref = firing(reference)
    sharded: set = set()
    for alerts in tiers:
        sharded |= firing(alerts)
    return sharded - ref, ref - sharded


def share_of_interval(times: dict[str, float], intervals: dict[str, int]) -> float:
    """Sum over groups of evaluation seconds / real interval (NaN times skipped): a share of one core."""
    return sum(t / intervals[g] for g, t in times.items() if not math.isnan(t))


@dataclass(frozen=True)
class Projection:
    group: str
    interval: int
    measured_s: float
    projected_s: float

    @property
    def share(self) -> float:
        return self.projected_s / self.interval


def extrapolate(times: dict[str, float], intervals: dict[str, int], gpus: int, target_gpus: int) -> list[Projection]:
    """Each group's evaluation time at `target_gpus`, linear in series (so in GPUs) from the measured
    time per GPU at `gpus`, fixed costs included (so it overestimates); largest share first."""
    out = [Projection(g, intervals[g], t, t / gpus * target_gpus) for g, t in times.items() if not math.isnan(t)]
    return sorted(out, key=lambda p: (-p.share, p.group))


def worst_per_gpu(runs: list[tuple[dict[str, float], int]]) -> tuple[dict[str, float], int]:
    """Of several shards' (group times, GPUs), per group the largest time per GPU, as times at the
    first shard's size: the costlier shard decides."""
    base = runs[0][1]
    groups = {g for times, _ in runs for g in times}
    out = {}
    for g in sorted(groups):
        per = [times[g] / n for times, n in runs if g in times and not math.isnan(times[g]) and n]
        out[g] = max(per) * base if per else math.nan
    return out, base
