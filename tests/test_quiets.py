"""Quiet look-alikes in `make test`: a normal scenario built to tempt a mode's rules, replayed through promtool
on the rules that mode's alerts need (tests/test_holds.py's cut: the alerts and every record they read), must
fire nothing. test_holds holds when each alert fires; this holds a guard that keeps one quiet (a rule made more
sensitive moves no first firing). CI replays every normal scenario on every rule (tests/test_scenarios.py);
these are the look-alikes that cost a few seconds on their mode's rules (a 9-day baseline history costs 25 s even
cut, so baseline_deviation's quiet claims stay in CI)."""
import json
import subprocess
from pathlib import Path

import pytest

import batches
from conftest import replay_env
from test_holds import CATALOG, SCENARIOS, needed_rules

# mode -> the normal scenario written as its look-alike (its description names the trap)
LOOK_ALIKES = {
    "gpu_lost": "normal-hard-loss-lookalikes-60s",          # an exporter restart, a node drained, MIG reconfigured
    "telemetry_frozen": "normal-frozen-lookalikes",         # idle GPUs with constant readings, a quantised power gauge
    "thermal_throttling": "normal-thermal-touch",           # 60 s at the limit in a load spike
}


def test_look_alikes_are_normal_scenarios_of_catalog_modes():
    modes = {m.id for m in CATALOG.failure_modes}
    assert set(LOOK_ALIKES) <= modes, set(LOOK_ALIKES) - modes
    for mode, name in LOOK_ALIKES.items():
        assert name in SCENARIOS and SCENARIOS[name].is_normal, f"{mode}: {name} is no normal scenario"


@pytest.mark.parametrize("mode", sorted(LOOK_ALIKES))
def test_a_look_alike_stays_quiet_on_its_modes_rules(mode, rendered, promtool, tmp_path):
    name = LOOK_ALIKES[mode]
    doc = batches.load(rendered / "tests" / "promtool" / f"{name}.yaml")
    cut = needed_rules([Path(f) for f in doc["rule_files"]], {mode})
    assert any(r.get("alert") for rules in cut for g in rules["groups"] for r in g["rules"]), f"{mode}: no alert to replay"
    doc["rule_files"] = []
    for k, rules in enumerate(cut):
        path = tmp_path / f"rules-{k}.yaml"
        path.write_text(json.dumps(rules))
        doc["rule_files"].append(str(path))
    doc["group_eval_order"] = [g["name"] for rules in cut for g in rules["groups"]]
    test = tmp_path / f"{name}.yaml"
    test.write_text(json.dumps(doc))
    proc = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True, timeout=600,
                          env=replay_env())
    assert proc.returncode == 0, f"{name} on {mode}'s rules:\n" + (proc.stdout + proc.stderr)[-3000:]
