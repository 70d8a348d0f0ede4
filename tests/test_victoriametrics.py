"""The rendered rules proven on VictoriaMetrics: every scenario replayed through a real victoria-metrics
single-node and `vmalert -replay.*` (rulesgen/vmreplay.py), judged with the same expectations as the
promtool replay (rulesgen.replay.judge). Differences between the engines, and what was done about each,
are in docs/victoriametrics.md.

All 36 scenarios take about 1 minute on 2 cores (one victoria-metrics process, two scenarios at a
time). RULESGEN_VM_SCENARIOS=subset runs the representative subset below instead (every failure-mode
group, the scenarios behind each documented difference, three normal-load ones);
RULESGEN_VM_SCENARIOS=name,name runs the named ones.
"""
import dataclasses
import os
import time
from pathlib import Path

import pytest

from conftest import ROOT, tool
from rulesgen import vmreplay
from rulesgen.artifacts import DASHBOARD_ONLY
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.replay import format_outcome, judge
from rulesgen.scenarios import load_scenarios

SCENARIO_DIR = ROOT / "fixtures" / "scenarios"
ALL = sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))

SUBSET = [
    # health
    "ecc-uncorrectable-dbe", "memory-remap-failure", "gpu-lost-series-stop", "exporter-down",
    # efficiency
    "dataloader-starvation", "gpu-idle-allocated",
    # baselines
    "baseline-deviation-hot-gpu",
    # fleet (reads ALERTS written by the other groups)
    "fleet-capacity-degraded",
    # normal load
    "normal-exporter-restart-counter-reset", "normal-daily-temperature-cycle", "normal-steady-training",
]

# Scenario -> {failure_mode: reason}: outcomes that differ on VictoriaMetrics and are documented in
# docs/victoriametrics.md instead of being fixed in the rules. A listed failure mode is neither required
# nor counted as a false alert there; the test fails when the difference goes away, so the table
# cannot go stale. Empty: every difference found so far was fixed in catalog/signals.yaml (see the doc),
# or changes only first-firing times within the scenarios' budgets.
KNOWN_DIFFERENCES: dict[str, dict[str, str]] = {}


def selected() -> list[str]:
    choice = os.environ.get("RULESGEN_VM_SCENARIOS", "all").strip()
    if choice == "all":
        return ALL
    if choice == "subset":
        return SUBSET
    names = [n.strip() for n in choice.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ALL))
    assert not unknown, f"RULESGEN_VM_SCENARIOS names unknown scenarios: {unknown}"
    return names


def test_subset_covers_every_group_and_three_normal_scenarios():
    catalog = load_catalog(bundled_catalog_dir())
    group_of = {fm.id: fm.group for fm in catalog.failure_modes}
    scenarios = load_scenarios([SCENARIO_DIR / f"{n}.yaml" for n in SUBSET], list(group_of))
    groups = {group_of[e.failure_mode] for s in scenarios for e in s.expect}
    assert groups == set(group_of.values())
    assert sum(s.is_normal for s in scenarios) >= 3
    assert set(KNOWN_DIFFERENCES) <= set(ALL)


# --- pure parts (no binaries) ----------------------------------------------------------------------

def test_expand_follows_promtool_notation():
    S = vmreplay.STALE
    assert vmreplay.expand("1x3") == [1, 1, 1, 1]
    assert vmreplay.expand("1+1x2 5-1x2") == [1, 2, 3, 5, 4, 3]
    assert vmreplay.expand("_x3 1") == [None, None, None, 1]
    assert vmreplay.expand("1 _x0 2") == [1, 2]
    assert vmreplay.expand("_ 7 stale _x2") == [None, 7, S, None, None]
    assert vmreplay.expand("1x0 321e7 1e9+5e8x2") == [1, 3.21e9, 1e9, 1.5e9, 2e9]
    assert vmreplay.expand("9223372036854775794") == [9.223372036854776e18]
    with pytest.raises(vmreplay.VMReplayError):
        vmreplay.expand("1y3")


def test_every_scenario_expands_to_its_slot_count():
    catalog = load_catalog(bundled_catalog_dir())
    for s in load_scenarios([SCENARIO_DIR / f"{n}.yaml" for n in SUBSET], [fm.id for fm in catalog.failure_modes]):
        slots = s.duration // s.interval + 1
        for _, values in s.series[:50]:
            assert len(vmreplay.expand(values)) == slots, (s.name, values[:80])


def test_parse_series_unescapes_labels():
    assert vmreplay.parse_series('up{job="dcgm-exporter", instance="10.0.0.1:9400"}') == \
        {"__name__": "up", "job": "dcgm-exporter", "instance": "10.0.0.1:9400"}
    assert vmreplay.parse_series(r'm{a="x\"y", b="c\\d"}') == {"__name__": "m", "a": 'x"y', "b": "c\\d"}
    assert vmreplay.parse_series("m") == {"__name__": "m"}


def test_rule_levels_put_every_rule_after_its_inputs(rendered):
    paths = rule_files(rendered)
    levels = vmreplay.rule_levels(paths)
    level_of = {r.name: i for i, rules in enumerate(levels) for r in rules}
    recorded = {r.name for rules in levels for r in rules if "record" in r.rule}
    alerts = {r.name for rules in levels for r in rules if "alert" in r.rule}
    for i, rules in enumerate(levels):
        for r in rules:
            names = set(vmreplay._IDENT.findall(r.rule["expr"]))
            for dep in names & recorded - {r.name}:
                assert level_of[dep] < i, f"{r.name} (level {i}) reads {dep} (level {level_of[dep]})"
            if "ALERTS" in names:
                assert all(level_of[a] < i for a in alerts - {r.name}), r.name
    assert level_of["GPUFleetCapacityDegraded"] == len(levels) - 1


def test_snappy_literal_block_layout():
    assert vmreplay.snappy_literal(b"") == b"\x00"
    assert vmreplay.snappy_literal(b"abc") == b"\x03" + bytes([2 << 2]) + b"abc"
    big = bytes(range(256)) * 300  # 76800 bytes: two literals (65536 + 11264)
    out = vmreplay.snappy_literal(big)
    assert out[:3] == b"\x80\xd8\x04"  # varint 76800
    assert out[3] == 61 << 2 and int.from_bytes(out[4:6], "little") == 65535
    assert len(out) == 3 + 3 + 65536 + 3 + 11264


# --- the real server -------------------------------------------------------------------------------

def rule_files(rendered: Path) -> list[Path]:
    names = ["recording", "health", "efficiency", "baselines", "fleet"]
    paths = [rendered / "alerts" / "prometheus" / f"{n}.yaml" for n in names]
    assert all(p.exists() for p in paths)
    others = {p.relative_to(rendered).as_posix() for p in (rendered / "alerts" / "prometheus").glob("*.yaml")}
    assert others - {p.relative_to(rendered).as_posix() for p in paths} <= set(DASHBOARD_ONLY), \
        "a new rule file appeared: add it to rule_files()"
    return paths


@pytest.fixture(scope="session")
def vm_binaries():
    return tool("victoria-metrics"), tool("vmalert")


def test_server_imports_staleness_markers_and_always_stops(vm_binaries):
    """promtool's `stale` must end a series at that instant on VictoriaMetrics too, and the server
    is stopped and its storage removed even when the body raises."""
    base = (int(time.time()) // vmreplay.DAY - 3) * vmreplay.DAY
    server = vmreplay.VictoriaMetrics(vm_binaries[0])
    with pytest.raises(RuntimeError, match="boom"):
        with server as vm:
            pid, storage = vm.proc.pid, vm.dir
            points = [(base * 1000 + i * 30000, v) for i, v in enumerate(vmreplay.expand("1x9 stale"))]
            vm.import_samples([({"__name__": "probe", "k": "v"}, points)])
            vm.flush()
            assert [r["value"][1] for r in vm.query("probe", base + 270)] == ["1"]
            assert vm.query("probe", base + 300) == []  # the marker's slot: gone, as in promtool
            assert vm.export("probe", base, base + 600)[0][2][-1] is None  # exported as null
            raise RuntimeError("boom")
    assert server.proc is None and not Path(storage).exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.fixture(scope="session")
def vm_results(rendered, vm_binaries):
    names = selected()
    catalog = load_catalog(bundled_catalog_dir())
    scenarios = load_scenarios([SCENARIO_DIR / f"{n}.yaml" for n in names], [fm.id for fm in catalog.failure_modes])
    started = time.monotonic()
    results = vmreplay.replay_all(scenarios, rule_files(rendered), jobs=max(2, os.cpu_count() or 2),
                                  victoria_metrics=vm_binaries[0], vmalert=vm_binaries[1])
    wall = time.monotonic() - started
    print(f"\nVictoriaMetrics replay: {len(results)} scenarios in {wall:.0f}s")
    return {r.outcome.scenario.name: r for r in results}


@pytest.mark.parametrize("scenario", ALL)
def test_scenario_fires_the_same_failure_modes_on_victoriametrics(vm_results, scenario):
    if scenario not in vm_results:
        pytest.skip("not selected by RULESGEN_VM_SCENARIOS")
    outcome = vm_results[scenario].outcome
    known = KNOWN_DIFFERENCES.get(scenario, {})
    if known:
        s = outcome.scenario
        relaxed = dataclasses.replace(s, expect=tuple(e for e in s.expect if e.failure_mode not in known),
                                      also_allowed=tuple(sorted(set(s.also_allowed) | set(known))))
        relaxed_outcome = judge(relaxed, list(outcome.fired))
        assert relaxed_outcome.ok, format_outcome(relaxed_outcome)
        assert not outcome.ok, (f"{scenario} now agrees with promtool: remove it from KNOWN_DIFFERENCES and "
                                f"docs/victoriametrics.md ({known})")
        return
    assert outcome.ok, ("VictoriaMetrics/vmalert disagrees with the scenario (promtool agrees; see "
                        "docs/victoriametrics.md):\n" + format_outcome(outcome))
