"""Every scenario replayed through the real promtool: each rule fires on its fault, in time, on the
right GPU, and nothing fires on normal load."""

import functools

import pytest
import yaml

import test_sharding
from conftest import ROOT, marked, promtool_jobs, replay_cases, replay_fixture, run_cli
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.durations import parse_duration
from rulesgen.promql.text import format_number
from rulesgen.load.scenarios import STALE, expand, load_scenarios

SCENARIOS = sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml"))
# Variants of other scenarios (the same rules at another magnitude, for the latency classes of
# benchmarks/latency_targets.yaml): `make test` leaves them to CI (marker slow, make test-scenarios-all)
# to stay within its budget.
VARIANTS = ("baseline-cooling-drift-quarter-degree", "baseline-clock-sag-seven-percent",
            "baseline-replaced-gpu-eight-degrees")
# The multi-day histories (8-9 days each, 108 h for the two repair-not-held, a day of temperature cycle) cost a
# third of the promtool replays; `make test` keeps one positive and one normal baseline history and
# leaves the others to CI with the variants (make test-scenarios-all).
LONG_HISTORIES = tuple(p.stem for p in SCENARIOS if p.stem.startswith("baseline-") and not p.stem.startswith("baseline-peers-")
                       and p.stem not in ("baseline-deviation-hot-gpu", "baseline-normal-constant-metric")) + (
    "repair-not-held-dbe-again", "repair-not-held-other-job", "normal-daily-temperature-cycle")
# What `make test` replays on promtool 3.5; CI replays every scenario (make test-scenarios-all), so that
# each failure mode is proven there. A replay costs about 15 s of CPU per 6 hours of scenario (promtool
# evaluates every group at every step), so make test keeps the identity transitions
# (ecc-uncorrectable-dbe: pods deleted and replaced, an exporter restart; memory-remap-failure: the driver
# label changed and renamed), two normal-load traps (a checkpoint's full memory, a node leaving the fleet),
# the short hard-loss scenarios (every GPU of a node lost, an NVLink fabric, a hung host engine) and one
# scenario per alert group the other engines' replays leave (a straggler: efficiency; the ghost-loss chain:
# jobs). With the other engines' make-test replays (vmalert-tool's SUBSET: baselines, fleet; the
# dialect cells; promtool 2.42) every alert group fires in make test:
# test_make_test_fires_every_alert_group keeps it so.
QUICK = (
    "ecc-uncorrectable-dbe", "ghost-loss-dbe-plateau", "gpu-lost-every-gpu", "memory-remap-failure",
    "normal-checkpoint-full-memory", "normal-node-leaves-fleet", "nvlink-fabric-gb200-nvl72", "straggler",
    "telemetry-frozen-hostengine-hang",
)


@functools.cache
def scenario_models():
    catalog = load_catalog(bundled_catalog_dir())
    return load_scenarios(SCENARIOS, [fm.id for fm in catalog.failure_modes])


# Every scenario; those outside QUICK are marked slow (make test-scenarios-all), and the multi-node ones
# `sharded`: the equality proof's one-server replay is the scenario's own promtool test (tests/test_sharding.py),
# so it judges that test as this file does, and CI leaves those to make test-sharding (-m "slow and not sharded").
REPLAYED = replay_cases([p.stem for p in SCENARIOS], QUICK,
                        marks=lambda name: (pytest.mark.sharded,) if name in test_sharding.PROVEN else ())


@replay_fixture
def promtool_results(request):
    """promtool on the selected scenarios' rendered tests, several to a run (tests/batches.py)."""
    rendered, promtool = request.getfixturevalue("rendered"), request.getfixturevalue("promtool")
    return lambda names: promtool_jobs(promtool, [rendered / "tests" / "promtool" / f"{name}.yaml" for name in names])


def test_at_least_six_normal_load_scenarios():
    normal = [s.name for s in scenario_models() if s.is_normal]
    assert len(normal) >= 6, normal


def test_variants_are_scenarios():
    assert set(VARIANTS) <= {p.stem for p in SCENARIOS}
    assert set(LONG_HISTORIES) <= {p.stem for p in SCENARIOS} and len(LONG_HISTORIES) >= 8
    assert not set(QUICK) & set(VARIANTS + LONG_HISTORIES)


def make_test_replays() -> set[str]:
    """Every scenario some engine replays in `make test` (each module's default selection)."""
    import test_dialects
    import test_engines
    import test_victoriametrics
    return (set(QUICK) | set(test_victoriametrics.SUBSET) | {name for name, _ in test_dialects.QUICK}
            | set(test_engines.QUICK_ON_2_42))


def test_make_test_fires_every_alert_group():
    """make test's replays, on whichever engine, still fire an alert of every group of the catalog, and
    promtool 3.5's replay the health, efficiency and jobs groups themselves."""
    models = scenario_models()
    assert set(QUICK) <= {s.name for s in models}
    group = {fm.id: fm.group for fm in load_catalog(bundled_catalog_dir()).failure_modes}
    fired = {name: {group[e.failure_mode] for e in s.expect} for s in models for name in [s.name]}
    assert set().union(*(fired[n] for n in make_test_replays())) == set(group.values())
    assert {"health", "efficiency", "jobs"} <= set().union(*(fired[n] for n in QUICK))


def test_the_sharded_mark_names_exactly_what_the_proof_replays():
    """CI replays a scenario on promtool 3.5 here (make test, or -m "slow and not sharded") or as the one-server
    replay of make test-sharding: the `sharded` scenarios are the proof's, and the proof replays only those."""
    sharded = marked(REPLAYED, "sharded")
    assert sharded == set(test_sharding.PROVEN) and sharded < {s.name for s in scenario_models()}
    assert [p.values[0] for p in test_sharding.PROOF] == test_sharding.MULTI_NODE
    assert marked(test_sharding.PROOF, "exhaustive") == set(test_sharding.MULTI_NODE) - sharded


@pytest.mark.parametrize("scenario", REPLAYED)
def test_scenario_passes_in_promtool(promtool_results, scenario):
    rc, output = promtool_results[scenario]
    assert rc == 0, f"promtool test rules tests/promtool/{scenario}.yaml failed " \
                    f"(run `rulesgen replay fixtures/scenarios/{scenario}.yaml` for details):\n{output}"


def first_hours(name: str, hours: int, out) -> str:
    """A copy of scenario `name` cut to its first hours (the replay CLI's behaviour, at a third of the
    CPU of the whole 6 hours)."""
    doc = yaml.safe_load((ROOT / "fixtures" / "scenarios" / f"{name}.yaml").read_text())
    slots = hours * 3600 // parse_duration(doc["interval"]) + 1
    word = {None: "_", STALE: "stale"}
    for s in doc["series"]:
        s["values"] = " ".join(word[v] if v is None or v is STALE else format_number(v) for v in expand(s["values"])[:slots])
    doc["duration"] = f"{hours}h"
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=100000))
    return str(path)


@pytest.mark.engines
def test_replay_reports_first_firing_and_exits_zero(tmp_path):
    result = run_cli("replay", first_hours("ecc-uncorrectable-preexisting", 2, tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("PASS ecc-uncorrectable-preexisting:")
    assert any("GPUECCUncorrectable" in line and "gpu=6" in line and "[expected]" in line for line in lines)
    assert lines[-1] == "1/1 scenarios match their expectations"


@pytest.mark.engines
def test_replay_exits_nonzero_on_a_mismatch(tmp_path):
    src = open(first_hours("ecc-uncorrectable-preexisting", 2, tmp_path)).read()
    wrong = tmp_path / "wrong-gpu.yaml"
    wrong.write_text(src.replace("name: ecc-uncorrectable-preexisting", "name: wrong-gpu")
                        .replace("gpu: '6'", "gpu: '5'", 1))
    result = run_cli("replay", str(wrong))
    assert result.returncode == 1
    assert "FAIL wrong-gpu" in result.stdout
    assert "MISSING: ecc_uncorrectable {'Hostname'" in result.stdout
    assert "[FALSE ALERT]" in result.stdout
