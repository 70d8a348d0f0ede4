"""Proof of equality for `topology: sharded` (README "Sharded topology"): every multi-node scenario split
by node across two shards, each shard replaying the shard files on its half, the global tier replaying
the global files on what the shards' allowlist forwards, gives the same alerts at every evaluation step
as one server over everything (tests/shard_equality.py says how, on promtool).

The proof is a longer suite, outside `make test` (each scenario is four promtool replays): `make
test-sharding` (marker `equality`) replays every multi-node scenario and the check that the harness can
fail; CI the cross-shard scenarios and those the proof once caught (RULESGEN_SHARDING=found)."""
import os
import tempfile
from pathlib import Path

import pytest

import shard_equality as se
from conftest import ROOT
from rulesgen import artifacts
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.load.scenarios import load_scenarios
from rulesgen.load.settings import load_settings

SCENARIOS = sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml"))
# Faults one shard alone cannot judge (the scenario, the nodes that must land on different shards).
CROSS_SHARD = {
    "shard-capacity-two-plus-two": ("gpu-h100-w01", "gpu-h100-w02"),      # capacity guard at 2 + 2 of 16 + 16
    "shard-ghost-loss-dbe-other-node": ("gpu-h100-g11", "gpu-h100-g12"),  # the loss on one, the DBE on the other
    "step-time-straggler-transceiver": ("gpu-h100-t01", "gpu-h100-t02"),  # a job spanning both shards
    "exporter-down": ("gpu-h100-m01", "gpu-h100-m02"),                    # one shard's exporter down
    "baseline-replaced-gpu-eight-degrees": ("gpu-h100-y04", "gpu-h100-y05"),  # judged by fleet peers, both shards
}
# Scenarios in which the proof once found a difference (each fixed since): RULESGEN_SHARDING=found replays
# them with the cross-shard ones (as CI does), `make test-sharding` with every multi-node scenario.
FOUND = ("thermal-throttling-cooling-failure",  # a cleared local part held 10m by its slow read (the end marker)
         "normal-frozen-lookalikes", "normal-hard-loss-lookalikes-15s", "normal-hard-loss-lookalikes-30s",
         "normal-hard-loss-lookalikes-60s", "normal-nvlink-fabric-boot-pcie", "nvlink-fabric-gb200-nvl72")
# (an exporter restarted under a new instance on the other shard: telemetry_frozen judged a GPU whose
# series ended; now the GPU must be served, and the split is by node)


def _scenarios():
    catalog = load_catalog(bundled_catalog_dir())
    settings = load_settings(ROOT / "rulesgen.yaml")
    return {s.name: s for s in artifacts.for_settings(
        load_scenarios(SCENARIOS, [fm.id for fm in catalog.failure_modes]), settings)}


ALL = _scenarios()
MULTI_NODE = sorted(name for name, s in ALL.items() if se.is_multi_node(s))
SELECTIONS = {"all": tuple(MULTI_NODE), "ci": tuple(CROSS_SHARD), "found": tuple(CROSS_SHARD) + FOUND}
_SELECTION = os.environ.get("RULESGEN_SHARDING", "all").strip()
assert _SELECTION in SELECTIONS, f"RULESGEN_SHARDING={_SELECTION!r}: expected one of {sorted(SELECTIONS)}"
CHOSEN = [name for name in MULTI_NODE if name in SELECTIONS[_SELECTION]]


def _hosts(series) -> set[str]:
    return {labels[h] for s, _ in series for labels in [se.parse_series(s)[1]] for h in se.HOST_LABELS if h in labels}


@pytest.mark.parametrize("name", sorted(CROSS_SHARD))
def test_cross_shard_scenarios_put_their_nodes_on_different_shards(name):
    first, second = CROSS_SHARD[name]
    halves = se.split(ALL[name])
    assert first in _hosts(halves[0]) and second in _hosts(halves[1]), name
    assert not _hosts(halves[0]) & _hosts(halves[1])
    assert sorted(halves[0] + halves[1]) == sorted(ALL[name].series)  # every series on exactly one shard


@pytest.mark.equality
@pytest.mark.parametrize("name", CHOSEN)
def test_two_shards_and_the_global_tier_alert_as_one_server(name, rendered, promtool):
    with tempfile.TemporaryDirectory(prefix="rulesgen-shards-") as tmp:
        verdict = se.compare(promtool, ALL[name], se.rendered_topology(rendered), Path(tmp))
    assert verdict.equal, verdict.describe()
    assert verdict.forwarded_series > 0


@pytest.mark.equality
def test_shards_alone_miss_what_only_the_fleet_shows(rendered, promtool):
    """The harness can fail: the single-topology files on each shard and no global tier miss the
    capacity guard of 2 + 2 of 16 + 16 (each shard has 2 GPUs to drain, under the 3-GPU minimum), and
    their fleet peer statistics, over one shard's GPUs, make a baseline alert pending that one server
    does not."""
    with tempfile.TemporaryDirectory(prefix="rulesgen-shards-") as tmp:
        verdict = se.compare(promtool, ALL["shard-capacity-two-plus-two"], se.single_topology(rendered), Path(tmp))
    missing = {dict(a)["alertname"] for _, a in verdict.missing}
    extra = {dict(a)["alertname"] for _, a in verdict.extra}
    assert missing == {"GPUFleetCapacityDegraded"} and extra <= {"GPUBaselineDeviation"}, verdict.describe()
