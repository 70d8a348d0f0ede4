"""Quiet look-alikes in `make test`: a normal scenario written to tempt some modes' rules, replayed through
promtool on only the rules their alerts need (tests/test_holds.py's cut: the alerts and every record they read),
must fire nothing. test_holds holds when each alert fires; this holds the guards that keep one quiet (a rule
made more sensitive moves no first firing). CI replays every normal scenario on every rule
(tests/test_scenarios.py); these are the look-alikes that cost a few seconds on their modes' rules (a 9-day
baseline history costs 25 s even cut, so baseline_deviation's quiet claims stay in CI)."""
import json
import subprocess
from pathlib import Path

import pytest

import batches
from conftest import replay_env
from test_holds import CATALOG, SCENARIOS, on_needed_rules

# normal scenario -> the modes it was written to tempt (its description names the trap); each costs 1-4 s of
# promtool CPU on those modes' rules (measured 2026-12-02)
LOOK_ALIKES = {
    "normal-allreduce-stall": ("dataloader_starvation", "step_time_straggler", "straggler"),  # a stall on every GPU
    "normal-exporter-restart-counter-reset": ("ecc_correctable_rate", "ecc_uncorrectable", "exporter_down",
                                              "nvlink_errors", "pcie_errors",   # a driver reload resets counters
                                              "power_anomaly"),                 # a job ends: power and clocks drop
    "normal-frozen-lookalikes": ("telemetry_frozen",),   # idle GPUs with constant readings, a quantised power gauge
    "normal-hard-loss-lookalikes-60s": ("gpu_lost",),    # an exporter restart, a node drained, MIG reconfigured
    "normal-idle-node": ("gpu_idle_allocated",),         # idle GPUs with no pod
    "normal-inference-bursty": ("fb_memory_pressure", "low_occupancy", "misleading_utilization"),  # KV cache at 90%
    "normal-mig-partitioned": ("gpu_lost", "xid_error"),  # device fields repeated per MIG instance
    "normal-nvlink-fabric-boot-pcie": ("nvlink_fabric",),  # fabric training after a tray's reboot
    "normal-power-capped-inference": ("power_anomaly",),  # every GPU at an operator's 450 W cap
    "normal-thermal-touch": ("thermal_throttling",),      # 60 s at the limit in a load spike
}


def test_look_alikes_are_normal_scenarios_of_catalog_modes():
    modes = {m.id for m in CATALOG.failure_modes}
    for name, tempted in LOOK_ALIKES.items():
        assert set(tempted) <= modes, f"{name}: {set(tempted) - modes} not in the catalog"
        assert name in SCENARIOS and SCENARIOS[name].is_normal, f"{name} is no normal scenario"


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_a_look_alike_stays_quiet_on_its_modes_rules(name, rendered, promtool, tmp_path):
    [doc] = on_needed_rules([batches.load(rendered / "tests" / "promtool" / f"{name}.yaml")], set(LOOK_ALIKES[name]),
                            tmp_path)
    assert any(r.get("alert") for f in doc["rule_files"] for g in json.loads(Path(f).read_text())["groups"]
               for r in g["rules"]), f"{name}: no alert to replay"
    test = tmp_path / f"{name}.yaml"
    test.write_text(json.dumps(doc))
    proc = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True, timeout=600,
                          env=replay_env())
    assert proc.returncode == 0, f"{name} on the rules of {LOOK_ALIKES[name]}:\n" + (proc.stdout + proc.stderr)[-3000:]
