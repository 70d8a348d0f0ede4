"""The pure parts of the live sharded bench (benchmarks/sharded.py): the hashmod split, the shard's
Prometheus configuration built from the rendered remote-write fragment, the alert comparison, the
extrapolation arithmetic and the report's verdicts. No server; the shard configuration is checked with
`promtool check config` when promtool is found."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from sharded_plan import (Latency, added_latency, alert_key, bench_config, compare_alerts, extrapolate,  # noqa: E402
                          hashmod, note_active, only_targets, shard_config,
                          shard_scrape_job,
                          share_of_interval, split_targets, worst_per_gpu)
from sharded_report import Measured, excess_by_rule, ratios, report  # noqa: E402


def test_hashmod_is_prometheus_md5_arithmetic():
    import hashlib
    digest = hashlib.md5(b"10.0.0.1:9400").digest()
    assert hashmod("10.0.0.1:9400", 2) == int.from_bytes(digest[8:], "big") % 2
    # the last 8 bytes, not the first: the two halves give different residues for this value
    assert hashmod("10.0.0.1:9400", 1000) == int.from_bytes(digest[8:], "big") % 1000
    assert hashmod("10.0.0.1:9400", 1000) != int.from_bytes(digest[:8], "big") % 1000


# Prometheus 3.5.3 with targets 10.0.0.1-8:9400, `hashmod` modulus 2 on __address__ and keep "0", kept
# exactly .2, .3 and .4 (/api/v1/targets; benchmarks/sharded.py checks every live run's split the same way).
@pytest.mark.parametrize("address,shard", [
    ("10.0.0.1:9400", 1), ("10.0.0.2:9400", 0), ("10.0.0.3:9400", 0), ("10.0.0.4:9400", 0),
    ("10.0.0.5:9400", 1), ("10.0.0.8:9400", 1),
])
def test_hashmod_known_values(address, shard):
    assert hashmod(address, 2) == shard


def test_split_targets_partitions_every_target_by_hashmod():
    addresses = [f"10.0.{n // 250}.{n % 250 + 1}:9400" for n in range(100)]
    parts = split_targets(addresses, 2)
    assert sorted(parts[0] + parts[1]) == list(range(100))
    assert all(hashmod(addresses[i], 2) == k for k, part in enumerate(parts) for i in part)
    assert 35 <= len(parts[0]) <= 65  # md5 spreads them


def test_shard_scrape_job_keeps_only_its_half():
    job = {"job_name": "dcgm-exporter", "scrape_interval": "60s", "static_configs": [{"targets": ["a:1"]}]}
    out = shard_scrape_job(job, 1, 2)
    assert out["relabel_configs"][0] == {"source_labels": ["__address__"], "modulus": 2,
                                         "target_label": "__tmp_hash", "action": "hashmod"}
    assert out["relabel_configs"][1] == {"source_labels": ["__tmp_hash"], "regex": "1", "action": "keep"}
    assert "relabel_configs" not in job  # the reference's job is not changed


def test_only_targets_lists_a_shards_targets():
    job = {"job_name": "j", "static_configs": [{"targets": ["a:1"], "labels": {"n": "0"}},
                                               {"targets": ["b:1"], "labels": {"n": "1"}}]}
    assert only_targets(job, {"b:1"})["static_configs"] == [{"targets": ["b:1"], "labels": {"n": "1"}}]
    assert len(job["static_configs"]) == 2


BENCH_URL = "http://127.0.0.1:8428/api/v1/write"


@pytest.fixture(scope="module")
def bench_render(tmp_path_factory):
    """What benchmarks/sharded.py renders: the repository's rulesgen.yaml with bench_config's `sharding:`."""
    from rulesgen.artifacts import plan
    from rulesgen.catalog import bundled_catalog_dir
    cfg = tmp_path_factory.mktemp("bench") / "rulesgen.yaml"
    cfg.write_text(bench_config((ROOT / "rulesgen.yaml").read_text(), BENCH_URL, 2, 45))
    return {a.path: a.text for a in plan(bundled_catalog_dir(), cfg, None, scenario_tests=False).artifacts}


def a_shard_config(render):
    fragment = yaml.safe_load(render["alerts/sharded/remote-write-shard-1.yaml"])
    job = {"job_name": "dcgm-exporter", "honor_labels": True, "scrape_interval": "60s",
           "static_configs": [{"targets": ["127.0.0.1:9400"]}]}
    rules = sorted(str(p) for p in (ROOT / "alerts" / "sharded" / "shard").glob("*.yaml"))
    return fragment, rules, shard_config(fragment, 1, rules, job, 2, "30s")


def test_the_bench_renders_each_shards_fragment_for_its_own_store(bench_render):
    """The bench's render names its victoria-metrics and its two shards: each shard's fragment is used as it is."""
    for i in range(2):
        doc = yaml.safe_load(bench_render[f"alerts/sharded/remote-write-shard-{i}.yaml"])
        assert doc["global"]["external_labels"] == {"shard": f"shard-{i}"} and doc["remote_write"][0]["url"] == BENCH_URL
    fleet = yaml.safe_load(bench_render["deploy/victoriametrics-operator-sharded/rulesgen-global-fleet.yaml"])
    assert {g["eval_delay"] for g in fleet["spec"]["groups"]} == {"45s"}


def test_shard_config_takes_the_rendered_fragment_as_it_is(bench_render):
    fragment, rules, cfg = a_shard_config(bench_render)
    assert cfg["global"]["external_labels"] == {"shard": "shard-1"}
    rw = cfg["remote_write"][0]
    assert rw == fragment["remote_write"][0] and rw["url"] == BENCH_URL
    assert cfg["alerting"] == fragment["alerting"]
    assert cfg["rule_files"] == rules and cfg["scrape_configs"][0]["relabel_configs"][1]["regex"] == "1"
    assert "scrape_interval" not in fragment["global"]  # the fragment is not changed


def test_added_latency_is_the_first_sighting_on_each_tier_minus_the_references():
    gpu = {"alertname": "GPUECCUncorrectable", "Hostname": "n1", "gpu": "3", "cluster": "c"}
    fleet = {"alertname": "GPUFleetCapacityDegraded", "cluster": "c"}
    seen: dict = {}
    note_active(seen, "reference", [{"labels": gpu, "state": "firing"}], 100.0)
    note_active(seen, "prometheus-shard-0", [{"labels": {**gpu, "shard": "shard-0"}, "state": "pending"}], 105.0)
    note_active(seen, "vmalert-global", [{"labels": {**fleet, "alertgroup": "g"}, "state": "pending"}], 130.0)
    note_active(seen, "reference", [{"labels": gpu, "state": "firing"}, {"labels": fleet, "state": "pending"}], 110.0)
    note_active(seen, "vmalert-global", [{"labels": {"alertname": "Other"}, "state": "firing"},  # not the reference's
                                         {"labels": {**fleet, "alertgroup": "g"}, "state": "firing"}], 200.0)
    note_active(seen, "prometheus-shard-1", [{"labels": gpu, "state": "inactive"}], 100.0)
    assert seen["reference"][alert_key(gpu)] == 100.0  # the first sighting stays
    assert added_latency(seen, "reference") == [
        Latency("GPUECCUncorrectable", "prometheus-shard-0", 1, 5.0, 5.0),
        Latency("GPUFleetCapacityDegraded", "vmalert-global", 1, 20.0, 20.0)]


def test_a_shard_config_passes_promtool_check_config(tmp_path, promtool, bench_render):
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(a_shard_config(bench_render)[2], sort_keys=False))
    out = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_compare_alerts_ignores_shard_and_pending():
    gpu = {"alertname": "GPUECCUncorrectable", "Hostname": "n1", "gpu": "3", "cluster": "c"}
    ref = [{"labels": {**gpu, "alertstate": "firing"}, "state": "firing"},
           {"labels": {"alertname": "X", "cluster": "c"}, "state": "pending"}]
    shard = [{"labels": {**gpu, "shard": "shard-0"}, "state": "firing"}]
    assert compare_alerts(ref, [shard, []]) == (set(), set())
    extra, missing = compare_alerts(ref, [[], [{"labels": {"alertname": "Y"}, "state": "firing"}]])
    assert extra == {(("alertname", "Y"),)} and missing == {alert_key(gpu)}


def test_extrapolation_is_linear_in_gpus_per_interval():
    out = extrapolate({"g1": 0.1, "g5": 0.4, "bad": math.nan}, {"g1": 60, "g5": 300, "bad": 60}, 400, 12_500)
    assert [p.group for p in out] == ["g1", "g5"]  # largest share first, NaN dropped
    assert out[0].projected_s == pytest.approx(3.125) and out[0].share == pytest.approx(3.125 / 60)
    assert out[1].projected_s == pytest.approx(12.5) and out[1].share == pytest.approx(12.5 / 300)
    assert share_of_interval({"g1": 0.6, "g5": 3.0, "bad": math.nan}, {"g1": 60, "g5": 300, "bad": 60}) == pytest.approx(0.02)


def test_worst_per_gpu_takes_the_costlier_shard():
    times, base = worst_per_gpu([({"g": 0.4}, 400), ({"g": 0.5}, 250)])
    assert base == 400 and times["g"] == pytest.approx(0.5 / 250 * 400)


def measured(shard_s: float, global_s: float, series: float) -> Measured:
    iv = {"g": 60}
    return Measured(gpus=800, nodes=100, step=60, fine_hours=1, shard_nodes=[50, 50], shard_gpus=[400, 400],
                    intervals={"single": iv, "shard": iv, "global": {"h": 60}}, reference={"g": (1.0, 5)},
                    shards=[{"g": (shard_s, 5)}, {"g": (shard_s, 5)}], global_={"h": (global_s, 5)},
                    received_by_name={"gpu:x": series}, memory={"prometheus-shard-0": (2**30, 2**31, 1000)},
                    alerts=(3, set(), set(), 1), fault="DBE")


def test_report_meets_targets_when_under():
    m = measured(0.5, 0.05, 800 * 8)
    r = ratios(m)
    assert r["shard-0 / reference"] == pytest.approx(0.5) and r["global / reference"] == pytest.approx(0.05)
    assert r["series per GPU"] == pytest.approx(8)
    text = report(m)
    assert "| 50% | <= 55% | yes |" in text and "| 5% | <= 10% | yes |" in text
    assert "| 8.00 (6400 series) | <= 10 | yes |" in text
    assert "3 on the reference; 0 extra, 0 missing" in text
    # 0.5 s per 400 GPUs -> 15.625 s at 12,500 on a 60 s group: 26.0%
    assert "| g | 60s | 15.62 | 26.0% |" in text
    # global: 0.05 s at 800 -> 6.25 s at 100,000
    assert "| h | 60s | 6.25 | 10.4% |" in text
    assert "target no group above 50%: yes" in text


def test_report_flags_what_misses_its_target():
    m = measured(0.6, 0.3, 800 * 12)
    m.alerts = (3, {(("alertname", "Y"),)}, set(), 3)
    text = report(m)
    assert "| 60% | <= 55% | **no** |" in text and "| 30% | <= 10% | **no** |" in text
    assert "| 12.00 (9600 series) | <= 10 | **no** |" in text
    assert "1 extra, 0 missing" in text and "Extra (shards + global only): Y{}" in text
    assert "target no group above 50%: **no**" in text  # global 0.3 s x 125 = 37.5 s of 60 s


def test_excess_by_rule_is_a_shards_time_beyond_its_share_of_the_reference():
    m = measured(0.5, 0.05, 800 * 8)
    m.shard_gpus = [200, 600]
    m.rule_times = {"prometheus-reference": {("g", "a"): 0.8, ("g", "b"): 0.2},
                    "prometheus-shard-0": {("g", "a"): 0.3, ("g", "b"): 0.05, ("g", "shard:x:count"): 0.06},
                    "prometheus-shard-1": {("g", "a"): 0.6, ("g", "b"): 0.15}}
    rows = {(g, n): (total, per) for total, g, n, per in excess_by_rule(m)}
    # shard-0 holds 1/4 of the GPUs: a's share of the reference is 0.2 s, it took 0.3 s -> 0.1 s of 60 s
    assert rows[("g", "a")][1] == pytest.approx([0.1 / 60, 0.0])
    assert rows[("g", "b")][1] == pytest.approx([0.0, 0.0])
    assert rows[("g", "shard:x:count")][1] == pytest.approx([0.06 / 60, 0.0])  # the reference has none: all of it
    assert excess_by_rule(m)[0][2] == "a"
    m.cores = {"prometheus-reference": 0.4, "prometheus-shard-0": 0.1, "prometheus-shard-1": 0.3}
    text = report(m)
    assert "## Where a shard's extra cost goes" in text and "| g | a | +0.167% | +0.000% |" in text
    assert "prometheus-shard-0: 0.100, 0.500" in text  # cores, per 1000 GPUs


def test_the_synthetic_fleet_is_healthy_at_800_gpus():
    """No busy GPU of the bench's fleet sits where a healthy fleet must not alert: its temperatures less
    than 4 C and 2.5 robust z-scores above its fleet's and its node's peers' median (the peer branches of
    GPUBaselineDeviation alert above 5 C and 3.5), its framebuffer under GPUFBMemoryPressure's 97%."""
    import numpy as np
    from fleet_data import FB_TOTAL_MIB, make_fleet, values
    fleet = make_fleet(800)
    ts = np.arange(0, 1800, 60.0)
    for metric in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP"):
        v = np.median(values(metric, fleet, ts, 0.0), axis=1)  # a 30-minute median per GPU
        groups = [np.flatnonzero(fleet.busy)]  # the fleet's busy GPUs, and each node's
        groups += [g for n in range(fleet.nodes) if len(g := [i for i in range(n * 8, n * 8 + 8) if fleet.busy[i]]) > 1]
        for g in groups:
            med = np.median(v[g])
            sigma = max(1.4826 * np.median(np.abs(v[g] - med)), 2.0)
            assert (v[g] - med).max() < 4.0 and (v[g] - med).max() / sigma < 2.5, (metric, g)
    used = values("DCGM_FI_DEV_FB_USED", fleet, ts, 0.0)[fleet.busy]
    assert used.max() / FB_TOTAL_MIB < 0.97
    # energy (mJ) rises on every GPU at its power, or GPUTelemetryFrozen holds every GPU frozen
    energy = values("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", fleet, np.array([6e5, 6e5 + 600]), 0.0)
    watts = (energy[:, 1] - energy[:, 0]) / 600 / 1000
    assert watts.min() > 50 and watts[fleet.busy].min() > 600
