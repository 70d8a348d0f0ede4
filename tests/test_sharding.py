"""Proof of equality for `topology: sharded` (README "Sharded topology"): every multi-node scenario split
by node across two shards, each shard replaying the shard files on its half, the global tier replaying
the global files on what the shards' allowlist forwards, gives the same alerts at every evaluation step
as one server over everything (tests/shard_equality.py says how, on promtool).

The proof is a longer suite, outside `make test` (each scenario is three promtool replays: one server, both shards in one run, the global tier): `make
test-sharding` (marker `equality`, in every CI run) replays PROVEN below (each failure mode at each scrape
interval, 49 of the 81 multi-node scenarios) and the checks that the harness can fail; `make test-exhaustive`
(marker exhaustive, on demand) the others; `pytest -m sharding_quick tests/test_sharding.py` (a quicker loop):
the cross-shard scenarios, those the proof once caught and one scenario for each failure mode they leave. The
one-server replay is the scenario's own promtool test, so CI's tests/test_scenarios.py leaves PROVEN (marker
`sharded`) to this file (make test-scenarios-all REPLAY=rest-not-sharded: -m "slow and not sharded")."""
import json
import tempfile
from pathlib import Path

import pytest
import yaml

import batches
import shard_equality as se
from conftest import (ROOT, cheapest_per_mode, cheapest_per_mode_and_interval, marked, modes_at_intervals, replay_cost,
                      replay_fixture)
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
# Scenarios in which the proof once found a difference (each fixed since): the quick loop (marker sharding_quick)
# replays them with the cross-shard ones and PER_MODE, `make test-sharding` (CI) with every multi-node scenario.
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


def _fired(names) -> set[str]:
    return {e.failure_mode for name in names for e in ALL[name].expect}


# For every failure mode the scenarios above do not fire, the multi-node scenario that fires it at the least
# replay cost, modes in name order: with them, the quick loop (marker sharding_quick) fires every failure
# mode a multi-node scenario fires.
PER_MODE = tuple(cheapest_per_mode({name: ALL[name] for name in MULTI_NODE}, sorted(_fired(MULTI_NODE)),
                                   covered=(*CROSS_SHARD, *FOUND)))
QUICK_LOOP = tuple(CROSS_SHARD) + FOUND + PER_MODE
# CI's proof (make test-sharding): the quick loop, each failure mode at each scrape interval, and the multi-node
# scenarios that ride in their batches without adding one (batches.filled); the others repeat a failure mode the
# proof holds at their scrape interval: marked exhaustive (make test-exhaustive, on demand), their promtool test
# in make test-scenarios-all.
SAMPLED = (*QUICK_LOOP, *cheapest_per_mode_and_interval({name: ALL[name] for name in MULTI_NODE},
                                                         sorted(_fired(MULTI_NODE)), covered=QUICK_LOOP))
PROVEN = batches.filled(SAMPLED, MULTI_NODE)
PROOF = [pytest.param(name, marks=((pytest.mark.sharding_quick,) if name in QUICK_LOOP else ())
                      + (() if name in PROVEN else (pytest.mark.exhaustive,))) for name in MULTI_NODE]


@pytest.fixture(scope="module")
def sharded_plan():
    return artifacts.plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)


def _topology_of(root: Path, remote_write: str) -> se.Topology:
    path = root / "alerts" / "sharded" / "remote-write-shard-0.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(remote_write)
    return se.rendered_topology(root)


def test_the_harness_forwards_exactly_what_the_rendered_remote_write_keeps(sharded_plan, tmp_path):
    """The harness reads every write_relabel_configs rule, as Prometheus applies them (a series passes every
    keep rule and no drop rule): every name the global rules read passes, ALERTS only of the alerts they read
    (the second keep rule: the first alone forwarded every alert's), and a name none reads is refused. A keep
    or drop rule planted in a copy of remote-write-shard-0.yaml changes the result; a rewriting rule is refused."""
    plan = sharded_plan
    fragment = next(a.text for a in plan.artifacts if a.path == "alerts/sharded/remote-write-shard-0.yaml")
    topology = _topology_of(tmp_path / "rendered", fragment)
    assert len(topology.relabel) == 2 and topology.listed.startswith("ALERTS|")
    shard = {topology.shard_label: "shard-0"}
    forwarded = set(plan.sharded.forwarded)
    assert all(topology.forwards(name, {**shard, "gpu": "0"}) for name in forwarded - {"ALERTS"})
    read = dict(plan.sharded.alerts_read)
    for label, values in read.items():
        assert all(topology.forwards("ALERTS", {**shard, "alertstate": "firing", label: v}) for v in values), label
    unread = [(r.alert, r.failure_mode) for r in plan.rules.rules
              if r.alert and r.alert not in read["alertname"] and r.failure_mode not in read["failure_mode"]]
    assert len(unread) > 10
    assert not any(topology.forwards("ALERTS", {**shard, "alertname": a, "failure_mode": fm}) for a, fm in unread)
    kept_home = {r.record for f in plan.sharded.shard_files for g in f.groups for r in g.rules if r.record} - forwarded
    assert kept_home and not any(topology.forwards(name, shard) for name in kept_home | {"DCGM_FI_DEV_GPU_TEMP"})
    # a third keep rule, then a drop rule, planted in a copy
    doc = yaml.safe_load(fragment)
    rules = doc["remote_write"][0]["write_relabel_configs"]
    rules.append({"source_labels": ["__name__"], "regex": "ALERTS|training_loss", "action": "keep"})
    planted = _topology_of(tmp_path / "keep", yaml.safe_dump(doc))
    assert planted.forwards("training_loss", shard) and not planted.forwards("gpu:dcgm_workload:info", shard)
    assert topology.forwards("gpu:dcgm_workload:info", shard)
    rules[-1] = {"source_labels": ["__name__"], "regex": "training_.*", "action": "drop"}
    dropped = _topology_of(tmp_path / "drop", yaml.safe_dump(doc))
    assert not dropped.forwards("training_loss", shard) and dropped.forwards("gpu:dcgm_workload:info", shard)
    rules[-1] = {"action": "labeldrop", "regex": "shard"}
    with pytest.raises(ValueError, match="labeldrop"):
        _topology_of(tmp_path / "rewrite", yaml.safe_dump(doc))


def _hosts(series) -> set[str]:
    return {labels[h] for s, _ in series for labels in [se.parse_series(s)[1]] for h in se.HOST_LABELS if h in labels}


def test_the_quick_loop_fires_every_failure_mode_of_the_multi_node_scenarios():
    assert set(QUICK_LOOP) <= set(MULTI_NODE)
    assert _fired(QUICK_LOOP) == _fired(MULTI_NODE)
    assert all(_fired([name]) - _fired((*CROSS_SHARD, *FOUND)) for name in PER_MODE)  # none is there for nothing


def test_cis_proof_holds_every_failure_mode_at_every_scrape_interval():
    """What CI's proof leaves to make test-exhaustive repeats a failure mode it proves at the same scrape
    interval; what rides along costs no batch more (2026-12-01: 49 scenarios in 8 batches, 14 for all 80)."""
    left = marked(PROOF, "exhaustive")
    assert set(QUICK_LOOP) < set(PROVEN) and left == set(MULTI_NODE) - set(PROVEN) != set()
    assert modes_at_intervals(ALL[n] for n in PROVEN) == modes_at_intervals(ALL[n] for n in MULTI_NODE)
    assert len(batches.groups(PROVEN)) == len(batches.groups(SAMPLED)) < len(batches.groups(MULTI_NODE))


@pytest.mark.parametrize("name", sorted(CROSS_SHARD))
def test_cross_shard_scenarios_put_their_nodes_on_different_shards(name):
    first, second = CROSS_SHARD[name]
    halves = se.split(ALL[name])
    assert first in _hosts(halves[0]) and second in _hosts(halves[1]), name
    assert not _hosts(halves[0]) & _hosts(halves[1])
    assert sorted(halves[0] + halves[1]) == sorted(ALL[name].series)  # every series on exactly one shard


# The shards-in-one-run check (below) on the two cross-shard scenarios cheapest to replay alone (the check is of
# the harness's tagging, which the data does not change; 2026-12-01: 135 s of the five's 167 s of test time
# were the other three).
ONE_RUN_CHECKED = tuple(sorted(CROSS_SHARD, key=lambda name: (replay_cost(ALL[name]), name))[:2])


@replay_fixture
def sharding_verdicts(request):
    """The comparisons of the multi-node scenarios, several to a job (shard_equality.compare_batch, in the
    batches of tests/batches.py), each run by the first test that reads one of its scenarios."""
    rendered, promtool = request.getfixturevalue("rendered"), request.getfixturevalue("promtool")
    topology = se.rendered_topology(rendered)
    tests = rendered / "tests" / "promtool"

    def job(names: tuple[str, ...]) -> dict[str, se.Verdict]:
        with tempfile.TemporaryDirectory(prefix="rulesgen-shards-") as tmp:
            return se.compare_batch(promtool, [ALL[n] for n in names], topology, Path(tmp),
                                    [tests / f"{n}.yaml" for n in names], keep=frozenset(ONE_RUN_CHECKED))

    return lambda names: batches.per_batch([tests / f"{n}.yaml" for n in names], job)


@pytest.mark.equality
@pytest.mark.parametrize("name", PROOF)
def test_two_shards_and_the_global_tier_alert_as_one_server(name, sharding_verdicts):
    """The one server's replay is the scenario's own promtool test (listings added), so it also proves the
    scenario as tests/test_scenarios.py does: CI replays the multi-node scenarios only here."""
    verdict = sharding_verdicts[name]
    assert not verdict.expectations, (
        f"promtool test rules tests/promtool/{name}.yaml fails (run `rulesgen replay fixtures/scenarios/{name}.yaml`"
        " for details):\n" + "\n".join(verdict.expectations)[-3000:])
    assert verdict.equal, verdict.describe()
    assert verdict.forwarded_series > 0


@pytest.mark.equality
@pytest.mark.parametrize("name", ONE_RUN_CHECKED)
def test_the_shards_in_one_replay_write_what_each_shard_alone_writes(name, rendered, promtool, tmp_path, sharding_verdicts):
    """The proof replays both shards in one promtool run, told apart by a suffix on the cluster label
    (shard_equality.shard_runs), beside the other scenarios of its batch (another suffix): on the scenarios
    whose nodes meet across shards, every sample each shard writes for the scenario in the proof's own run
    (records, ALERTS, its inputs) is the same, value for value, as in a run of that shard alone over the
    scenario alone. (This test joins the scenario's batch, so it reads the proof's run of it.)"""
    scenario, topology = ALL[name], se.rendered_topology(rendered)
    merged = sharding_verdicts[name].shards
    assert merged is not None, f"{name}: the proof replayed the shards apart (a shard rule mixed them: Mixed)"
    alone = se.runs_apart(promtool, topology, se.split(scenario), scenario, f"ALERTS|{topology.listed}", tmp_path)
    assert all(run.samples for run in merged)
    for i, (one, other) in enumerate(zip(merged, alone)):
        assert one.samples.keys() == other.samples.keys(), (i, sorted(set(one.samples) ^ set(other.samples))[:4])
        differ = [k for k in one.samples if one.samples[k] != other.samples[k]]
        assert not differ, (i, differ[:4])


def test_a_series_of_no_single_shard_stops_the_one_replay():
    """A shard rule that aggregated or joined across the cluster label writes a series whose tag names no
    shard (here: none, and a stray one): untagged refuses it, and shard_runs replays the shards apart."""
    run = se.Run()
    run.add({"__name__": "gpu:x", "cluster": "prod" + se.TAG + "1", "gpu": "0"}, 60, 1.0)
    run.add({"__name__": "ALERTS", "alertname": "A", "cluster": se.TAG + "0"}, 60, 1.0)
    first, second = se.untagged(run, 2, "cluster")
    assert first.samples == {("ALERTS", (("alertname", "A"),)): {60: 1.0}}
    assert second.samples == {("gpu:x", (("cluster", "prod"), ("gpu", "0"))): {60: 1.0}}
    for stray in ({"cluster": "prod"}, {}, {"cluster": "prod" + se.TAG + "2"}):
        mixed = se.Run()
        mixed.add({"__name__": "fleet:x", **stray}, 60, 1.0)
        with pytest.raises(se.Mixed):
            se.untagged(mixed, 2, "cluster")


def test_the_reference_replay_judges_the_scenarios_own_test(rendered, promtool, tmp_path):
    """The harness can fail on a scenario's expectations: a copy of a scenario test with every expected value
    turned from 1 to 0 fails on each of them, while its listings still give the same alerts."""
    name = "gpu-lost-every-gpu"
    original = rendered / "tests" / "promtool" / f"{name}.yaml"
    doc = batches.load(original)
    expected = [sample for case in doc["tests"][0]["promql_expr_test"] for sample in case["exp_samples"]]
    assert expected and all(sample["value"] == 1 for sample in expected)
    for sample in expected:
        sample["value"] = 0
    planted = tmp_path / "planted.yaml"
    planted.write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 30))
    files = se.rendered_topology(rendered).single
    run, failures = se.replay_test(promtool, original, ALL[name], files, tmp_path)
    planted_run, planted_failures = se.replay_test(promtool, planted, ALL[name], files, tmp_path)
    assert failures == () and len(planted_failures) == len(expected)
    assert all("exp: {} 0E+00" in f and "got: {} 1E+00" in f for f in planted_failures), planted_failures[:2]
    assert planted_run.samples == run.samples and se.alerts(run, "shard")


BATCH = ("pcie-errors-storm", "shard-capacity-two-plus-two")  # same intervals: one batch


@pytest.fixture(scope="module")
def replay_once():
    """se.replay_test, each (test, rule files, listings) replayed once for the two harness checks of BATCH below
    (one worker: their xdist_group): both replay its scenarios side by side and each alone through the single
    files, so they share those three promtool runs."""
    done, replay_test = {}, se.replay_test

    def once(promtool, test, scenario, files, workdir, listed="ALERTS"):
        key = (str(test) if isinstance(test, Path) else json.dumps(test, sort_keys=True), tuple(map(str, files)), listed)
        if key not in done:
            done[key] = replay_test(promtool, test, scenario, files, workdir, listed)
        return done[key]
    return once


@pytest.mark.equality
@pytest.mark.xdist_group("batch-harness")
def test_shards_alone_miss_what_only_the_fleet_shows(rendered, promtool, monkeypatch, replay_once):
    """The harness can fail: the single-topology files on each shard and no global tier miss the
    capacity guard of 2 + 2 of 16 + 16 (each shard has 2 GPUs to drain, under the 3-GPU minimum), and
    their fleet peer statistics, over one shard's GPUs, make a baseline alert pending that one server
    does not. In a batch (compare_batch) the difference is found, and the scenario's own comparison
    reports it."""
    alone, compare = [], se.compare
    monkeypatch.setattr(se, "compare", lambda p, s, *a, **k: alone.append(s.name) or compare(p, s, *a, **k))
    monkeypatch.setattr(se, "replay_test", replay_once)
    with tempfile.TemporaryDirectory(prefix="rulesgen-shards-") as tmp:
        verdict = se.compare_batch(promtool, [ALL[n] for n in BATCH], se.single_topology(rendered), Path(tmp),
                                   [rendered / "tests" / "promtool" / f"{n}.yaml" for n in BATCH])[BATCH[1]]
    assert alone[0].startswith("batch: ") and BATCH[1] in alone[1:]
    missing = {dict(a)["alertname"] for _, a in verdict.missing}
    extra = {dict(a)["alertname"] for _, a in verdict.extra}
    assert missing == {"GPUFleetCapacityDegraded"} and extra <= {"GPUBaselineDeviation"}, verdict.describe()


@pytest.mark.equality
@pytest.mark.xdist_group("batch-harness")
def test_a_batch_replays_each_scenario_as_its_own_run(rendered, promtool, tmp_path, replay_once):
    """The one server's replay of a batch (tests/batches.py: the scenarios side by side, told apart by a
    suffix on the cluster label) gives each scenario, step for step, the alerts of its own replay."""
    topology, tests = se.rendered_topology(rendered), rendered / "tests" / "promtool"
    docs = [batches.load(tests / f"{n}.yaml") for n in BATCH]
    together, _ = se.tagged_together([ALL[n] for n in BATCH], "cluster")
    run, failures = replay_once(promtool, batches.merged(docs), together, topology.single, tmp_path)
    assert not failures
    for k, name in enumerate(BATCH):
        own, _ = replay_once(promtool, tests / f"{name}.yaml", ALL[name], topology.single, tmp_path)
        in_batch = {t: {tuple(sorted(labels.items())) for member, labels in map(batches.untag, map(dict, alerts))
                        if member == k} for t, alerts in se.alerts(run, "shard").items()}
        assert {t: a for t, a in in_batch.items() if a} == se.alerts(own, "shard") != {}, name
