"""fixtures/scenariogen/check.py (build_scenarios.py --check): accepts a file the generator wrote, and
rejects each planted fault with its message."""
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures"))

from scenariogen import check, cli, document, faults, fields, fleet, gpus, physics, reads  # noqa: E402


def written(tmp_path, name="unit-check"):
    """A scenario file as the generator writes it: one node, two GPUs, one expectation."""
    sc = fleet.Scenario(name, "a scenario of the checker's tests", duration="20m")
    nd = sc.node("gpu-h100-k01", "10.9.1.1", gpus.H100, n_gpus=2, fields=fields.h100_fields(prof=False))
    physics.build(sc)
    physics.finish(sc)
    sc.expect_alert("gpu_lost", nd.gpus[1], "10m", "5m")
    path = tmp_path / (name + ".yaml")
    path.write_text(document.dump(document.to_doc(sc)))
    return path


def planted(tmp_path, change):
    path = written(tmp_path)
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_written_file_passes(tmp_path):
    errs, n_series, n = check.check_file(written(tmp_path))
    read = reads.fields_read(("gpu_lost",))  # a fault scenario carries what its modes' alerts read
    assert errs == [] and n == 41 and n_series == 1 + 2 * len(read & set(fields.CORE)) < 1 + 2 * len(fields.CORE)


def _short(doc):
    doc["series"][3]["values"] += " 1"


def _bad_expect(key, value):
    def change(doc):
        doc["expect"][0][key] = value
    return change


@pytest.mark.parametrize("change, message", [
    (lambda doc: doc.update(owner="me"), "unknown keys ['owner']"),
    (lambda doc: doc.update(name="other"), "name other != file unit-check"),
    (_short, "42 slots, want 41"),
    (_bad_expect("failure_mode", "gpu_gone"), "unknown failure mode gpu_gone"),
    (_bad_expect("labels", {"Hostname": "gpu-h100-k01", "gpu": "7"}), "match no series"),
    (_bad_expect("labels", {"Hostname": "gpu-h100-k01", "gpu": 1}), "non-string label value"),
    (_bad_expect("continuous", False), "expect keys"),
    (_bad_expect("after", "1h"), "after beyond duration"),
    (_bad_expect("labels", {"Hostname": "gpu-h100-k01", "signal": "fan_speed"}), "unknown signal fan_speed"),
    (lambda doc: doc.update(also_allowed=["xid_errors"]), "unknown also_allowed xid_errors"),
], ids=["key", "name", "slots", "mode", "labels", "label-type", "continuous", "after", "signal", "allowed"])
def test_a_planted_fault_is_reported(tmp_path, change, message):
    errs, _, _ = check.check_file(planted(tmp_path, change))
    assert errs and message in errs[0], errs


def test_labels_only_the_rules_add_are_not_looked_up(tmp_path):
    def change(doc):
        doc["expect"][0]["labels"] = {"signal": "gpu_temp"}
        doc["expect"].append(dict(doc["expect"][0], labels={"blind_failure_mode": "ecc_uncorrectable"}))
    assert check.check_file(planted(tmp_path, change))[0] == []


def test_the_command_fails_on_a_bad_file(tmp_path, capsys):
    written(tmp_path, "unit-a")
    assert cli.main(["--check"], out_dir=str(tmp_path)) == 0
    planted(tmp_path, _short)
    assert cli.main(["--check"], out_dir=str(tmp_path)) == 1
    out = capsys.readouterr().out
    assert "unit-check.yaml" in out and "FAIL" in out and "42 slots, want 41" in out


def test_every_failure_mode_of_the_catalog_is_known():
    catalog = yaml.safe_load((ROOT / "catalog" / "failure_modes.yaml").read_text())
    ids = {m["id"] for m in catalog["failure_modes"]}
    assert set(check.FAILURE_MODES) == ids  # read from the catalog, not kept by hand


def _uuids(path):
    return {line.split('UUID="')[1].split('"')[0] for line in path.read_text().splitlines() if 'UUID="' in line}


def _four_gpus(tmp_path, mode):
    """One node, four GPUs: GPU 1 carries the fault its mode's alert names, GPU 2 an older XID (an event
    the rules must stay quiet on), GPUs 0 and 3 nothing."""
    sc = fleet.Scenario("unit-trim", "a scenario of the GPU trim's tests", duration="20m")
    nd = sc.node("gpu-h100-k01", "10.9.1.1", gpus.H100, n_gpus=4, fields=fields.h100_fields(extra=fields.ECC))
    physics.build(sc)
    faults.dbe_event(sc, nd.gpus[1], sc.idx("10m"))
    faults.xid_event(sc, nd.gpus[2], 0, 13)
    physics.finish(sc)
    sc.expect_alert(mode, nd.gpus[1], "10m", "5m")
    path = tmp_path / "unit-trim.yaml"
    path.write_text(document.dump(document.to_doc(sc)))
    return nd, path


def test_a_mode_that_judges_each_gpu_alone_keeps_the_faults_gpus_and_one_peer(tmp_path):
    nd, path = _four_gpus(tmp_path, "ecc_uncorrectable")
    assert _uuids(path) == {g.uuid for g in nd.gpus[:3]}  # GPU 3 is a healthy peer no expected alert reads
    assert check.check_file(path)[0] == []


@pytest.mark.parametrize("mode", ["straggler", "baseline_deviation", "fleet_capacity_degraded"])
def test_a_mode_that_compares_peers_keeps_every_gpu(tmp_path, mode):
    nd, path = _four_gpus(tmp_path, mode)
    assert not reads.judges_each_gpu_alone(mode)
    assert _uuids(path) == {g.uuid for g in nd.gpus}


def test_which_modes_judge_each_gpu_alone_is_read_from_the_rules():
    assert reads.judges_each_gpu_alone("ecc_uncorrectable") and reads.judges_each_gpu_alone("xid_error")
    # node peers (a median by node), a cluster's count, and a job's ranks
    assert not any(map(reads.judges_each_gpu_alone, ("thermal_throttling", "gpu_lost", "step_time_straggler")))
