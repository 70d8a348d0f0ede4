"""The pure parts of benchmarks/sharded.py (no server, tested in tests/test_bench_sharded.py): the hashmod
split of the node targets, the rulesgen.yaml the bench renders with (its `sharding:` section naming the
bench's global store and shards), the servers' configurations, the alert comparison and the latency
sharding adds, the extrapolation to a larger fleet and its arithmetic."""
from __future__ import annotations

import copy
import hashlib
import math
import statistics
from dataclasses import dataclass

import yaml

SHARD_LABEL = "shard"
HASH_LABEL = "__tmp_hash"
# Labels an alert's identity does not include here: the shard's external label (alerts leave a shard
# without it, alerts/sharded/remote-write-shard-N.yaml), the state, and `alertgroup`, which vmalert adds to
# every alert it raises (the group's name; Prometheus does not), so a global alert on vmalert matches the
# reference Prometheus' alert of the same labels.
NOT_IDENTITY = (SHARD_LABEL, "alertstate", "alertgroup")


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


def bench_config(base: str, write_url: str, shards: int, evaluation_delay: int) -> str:
    """The repository's rulesgen.yaml (text) with its `sharding:` section naming the bench's global store and
    static shards shard-0 ... : what the bench renders, so each shard runs its rendered fragment unedited."""
    doc = yaml.safe_load(base) or {}
    doc["topology"] = "sharded"
    doc["sharding"] = {"write_url": write_url, "label": SHARD_LABEL, "source": "static",
                       "values": [f"shard-{i}" for i in range(shards)], "evaluation_delay": f"{evaluation_delay}s"}
    return yaml.safe_dump(doc, sort_keys=False, width=1 << 20)


def shard_config(fragment: dict, shard: int, rule_files: list[str], scrape_job: dict, shards: int,
                 evaluation_interval: str) -> dict:
    """One shard's prometheus.yml: its rendered fragment (alerts/sharded/remote-write-shard-N.yaml: external label,
    remote write to the global store with the allowlist, alerting relabelling) as it is, plus what a fragment
    leaves to the shard: its scrape job (its hashmod half), rule files and intervals."""
    out = copy.deepcopy(fragment)
    glob = out.setdefault("global", {})
    glob["scrape_interval"] = scrape_job["scrape_interval"]
    glob["evaluation_interval"] = evaluation_interval
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


def note_active(seen: dict[str, dict[tuple, float]], server: str, alerts: list[dict], now: float) -> None:
    """Record, per server, the wall-clock time each alert identity (pending or firing) was first seen active.
    activeAt is no clock to compare across engines: vmalert sets it to its query time, the evaluation time less
    -rule.evalDelay, aligned down to the group's interval; Prometheus to the evaluation time."""
    mine = seen.setdefault(server, {})
    for a in alerts:
        if a.get("state") in ("pending", "firing"):
            mine.setdefault(alert_key(a["labels"]), now)


@dataclass(frozen=True)
class Latency:
    """What sharding adds to one alert name's activation on one server: the wall-clock time it was first seen
    active there minus on the reference server, per alert identity (the shard label ignored) seen on both."""
    alert: str
    tier: str  # the server that raised it: a shard or the global tier
    matched: int
    median_s: float
    max_s: float


def added_latency(seen: dict[str, dict[tuple, float]], reference: str) -> list[Latency]:
    """Per (alert name, server other than `reference`): first seen there minus first seen on the reference, for
    every alert identity seen on both; alerts the reference never raised are left out."""
    ref = seen.get(reference, {})
    found: dict[tuple[str, str], list[float]] = {}
    for server, alerts in seen.items():
        if server == reference:
            continue
        for key, t in alerts.items():
            if key in ref:
                found.setdefault((dict(key).get("alertname", "?"), server), []).append(t - ref[key])
    return [Latency(name, tier, len(d), statistics.median(d), max(d)) for (name, tier), d in sorted(found.items())]


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
