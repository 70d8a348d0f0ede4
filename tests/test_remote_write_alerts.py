"""The shards' remote write forwards the ALERTS of exactly the alerts the global tier reads
(alerts/sharded/remote-write-shard-N.yaml, second keep rule of write_relabel_configs): every alert a shard
fires is forwarded if and only if an ALERTS selector of a global rule can select it, and every other
forwarded name passes whatever its labels. The relabelling is applied as Prometheus does (source label
values joined by ';', the regex anchored at both ends); the fragment's validity as a configuration is
checked with promtool in tests/test_tiers.py."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from rulesgen.promql.tree import selectors

ROOT = Path(__file__).resolve().parent.parent
FRAGMENT = ROOT / "alerts" / "sharded" / "remote-write-shard-0.yaml"


def kept(rules: list[dict], labels: dict[str, str]) -> bool:
    """Whether a series with these labels passes every keep rule (write_relabel_configs semantics)."""
    for rule in rules:
        assert rule["action"] == "keep"
        value = rule.get("separator", ";").join(labels.get(name, "") for name in rule["source_labels"])
        if not re.fullmatch(rule["regex"], value):
            return False
    return True


def rule_docs(tier: str) -> list[dict]:
    return [r for f in sorted((ROOT / "alerts" / "sharded" / tier).glob("*.yaml"))
            for g in yaml.safe_load(f.read_text())["groups"] for r in g["rules"]]


def alerts_selectors() -> list:
    return [s for r in rule_docs("global") for s in selectors(r["expr"]) if "ALERTS" in s.names]


def test_shard_alerts_are_forwarded_exactly_when_a_global_rule_reads_them():
    rules = yaml.safe_load(FRAGMENT.read_text())["remote_write"][0]["write_relabel_configs"]
    reads = alerts_selectors()
    assert reads, "the global tier reads ALERTS"
    shard_alerts = {(r["alert"], r["labels"]["failure_mode"]) for r in rule_docs("shard") if "alert" in r}
    forwarded, home = set(), set()
    for name, mode in sorted(shard_alerts):
        for state in ("pending", "firing"):
            labels = {"__name__": "ALERTS", "alertname": name, "failure_mode": mode, "alertstate": state,
                      "Hostname": "n;1", "shard": "shard-0"}
            read = any(s.may_select(labels) for s in reads)
            assert kept(rules, labels) == read, (name, mode, state, read)
            (forwarded if read else home).add(name)
    # both happen: the filter is not all or nothing
    assert "GPUECCUncorrectable" in home and "GPULost" in forwarded


def test_other_forwarded_names_pass_whatever_their_labels():
    rules = yaml.safe_load(FRAGMENT.read_text())["remote_write"][0]["write_relabel_configs"]
    names = rules[0]["regex"].split("|")
    assert len(rules) == 2 and "ALERTS" in names
    for name in names:
        if name == "ALERTS":
            continue
        for extra in ({}, {"alertname": "X"}, {"failure_mode": "ecc_uncorrectable", "alertname": "a;b"}):
            assert kept(rules, {"__name__": name, "cluster": "c", **extra}), (name, extra)
    assert not kept(rules, {"__name__": "DCGM_FI_DEV_GPU_TEMP"})
    assert not kept(rules, {"__name__": "ALERTSX", "failure_mode": "gpu_lost"})
