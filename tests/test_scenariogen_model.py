"""fixtures/scenariogen/fleet.py, workload.py, physics.py, faults.py, emission.py, document.py, training.py
and history.py on a small scenario built here: the physics behaves like hardware, faults change what they
should, the emitted series follow Prometheus (stale markers, new series for new labels), and the build is
deterministic."""
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures"))

from rulesgen.load import scenarios as reader  # noqa: E402
from scenariogen import document, emission, faults, fields, fleet, gpus, history, physics, training, workload  # noqa: E402,E501
from scenariogen.check import parse_series  # noqa: E402


def small(name="unit-small", xid_count=False):
    """One H100 node, 4 GPUs, 40 minutes at 30 s: GPU 0 and 1 train, GPU 2 takes an uncorrectable ECC error
    at 20m while training, GPU 3 is idle and drops out of DCGM at 30m."""
    sc = fleet.Scenario(name, "a small scenario of the unit tests", duration="40m")
    nd = sc.node("gpu-h100-u01", "10.9.0.1", gpus.H100, n_gpus=4,
                 fields=fields.h100_fields(extra=fields.POWER_EXTRA + fields.ECC))
    nd.xid_count = xid_count
    workload.run_job(sc, nd.gpus[:3], "ml", fleet.pods("train", 3), "pytorch", 0, sc.n, startup="3m",
                     ckpt_every=None)
    physics.build(sc)
    faults.dbe_event(sc, nd.gpus[2], sc.idx("20m"))
    if xid_count:
        faults.xid_event(sc, nd.gpus[1], sc.idx("25m"), 31)
    for i in range(sc.idx("30m"), sc.n):
        nd.gpus[3].visible[i] = False
    physics.finish(sc)
    return sc, nd


def series_of(sc):
    out = []
    for text, values in emission.emit(sc):
        name, labels = parse_series(text)
        out.append((name, labels, reader.expand(values)))
    return out


@pytest.fixture(scope="module")
def built():
    return small()


def test_fleet_identity(built):
    sc, nd = built
    assert sc.n == 81 and sc.idx("20m") == 40 and sc.t(40) == 1200
    assert len({g.uuid for g in nd.gpus}) == 4 and all(g.uuid.startswith("GPU-") for g in nd.gpus)
    assert nd.gpus[0].uuid == fleet.uuid_for("unit-small", "gpu-h100-u01", 0)
    replacement = fleet.GPU(nd, 0, tag="rma")
    assert replacement.uuid != nd.gpus[0].uuid and replacement.pci == nd.gpus[0].pci


def test_workload_places_pods_and_phases(built):
    sc, nd = built
    assert nd.gpus[0].pod[0] == {"container": "pytorch", "namespace": "ml", "pod": "train-0"}
    assert nd.gpus[3].pod[0] is None
    assert nd.gpus[0].spec[1]["kind"] == "low" and nd.gpus[0].spec[sc.idx("10m")]["kind"] == "active"
    other, _ = small("unit-workload")
    g = other.nodes[0].gpus[0]
    workload.end_pods(other, [g], other.n - 2)
    assert g.pod[other.n - 1] is None and g.pod[other.n - 3] is not None and g.spec[-1] is workload.PH["idle"]


def test_physics_behaves_like_hardware(built):
    sc, nd = built
    m = gpus.H100
    busy, idle = nd.gpus[0].d, nd.gpus[3].d
    late = range(sc.idx("10m"), sc.idx("30m"))
    assert all(busy["power"][i] <= m.tdp + 1 for i in range(sc.n))
    assert statistics.mean(busy["power"][i] for i in late) > 0.8 * m.tdp
    assert statistics.mean(idle["power"][i] for i in late) == pytest.approx(m.idle_w, abs=5)
    assert statistics.mean(busy["temp"][i] for i in late) > statistics.mean(idle["temp"][i] for i in late) + 20
    assert set(idle["clock"][i] for i in late) == {m.idle_clock} and set(idle["cer"][i] for i in late) == {1}
    capped = [i for i in late if busy["cer"][i] == 4]           # SW power cap: clocks below boost
    assert capped and all(m.cap_floor <= busy["clock"][i] <= m.max_clock for i in capped)
    assert statistics.mean(busy["clock"][i] for i in capped) < m.max_clock - 15
    energy = busy["energy"]
    assert all(b >= a for a, b in zip(energy, energy[1:]))
    joules = (energy[-1] - energy[0]) / 1000
    assert joules == pytest.approx(statistics.mean(busy["power"]) * (sc.n - 1) * sc.dt, rel=0.02)
    # every field the exporter may send has its array
    assert {key for key, _ in fields.METRICS.values()} <= set(busy)


def test_uncorrectable_ecc_fault(built):
    sc, nd = built
    g, i = nd.gpus[2], sc.idx("20m")
    assert g.d["dbe_vol"][i] - g.d["dbe_vol"][i - 1] == 1 and g.d["dbe_agg"][i] - g.d["dbe_agg"][i - 1] == 1
    assert g.d["remap_pend"][i] == 1 and g.xid[i - 1:i + 2] == [0, 48, 94]


def test_emission_follows_prometheus(built):
    sc, nd = built
    out = series_of(sc)
    temps = [(labels, values) for name, labels, values in out if name == "DCGM_FI_DEV_GPU_TEMP"]
    assert len(temps) == 4
    lost_labels, lost = next((l, v) for l, v in temps if l["gpu"] == "3")
    a = sc.idx("30m")
    assert all(isinstance(v, float) for v in lost[:a]) and lost[a] is reader.STALE
    assert lost[a + 1:] == [None] * (sc.n - a - 1)
    assert "pod" not in lost_labels
    busy_labels = next(l for l, _ in temps if l["gpu"] == "0")
    assert {"job": "dcgm-exporter", "instance": "10.9.0.1:9400", "Hostname": "gpu-h100-u01", "UUID": nd.gpus[0].uuid,
            "modelName": gpus.H100.name, "pod": "train-0", "namespace": "ml"}.items() <= busy_labels.items()
    # the XID gauge: one series per code (err_code is a label), each ending where the next begins
    xids = {l["err_code"]: v for name, l, v in out if name == "DCGM_FI_DEV_XID_ERRORS" and l["gpu"] == "2"}
    assert set(xids) == {"0", "48", "94"}
    i = sc.idx("20m")
    assert xids["0"][i] is reader.STALE and xids["48"][i] == 48.0 and xids["48"][i + 1] is reader.STALE
    assert xids["94"][i + 1:] == [94.0] * (sc.n - i - 1)
    ups = [v for name, _, v in out if name == "up"]
    assert ups == [[1.0] * sc.n]


def test_exp_xid_count_series():
    sc, nd = small("unit-xid-count", xid_count=True)
    out = [(labels, values) for name, labels, values in series_of(sc)
           if name == "DCGM_EXP_XID_ERRORS_COUNT" and labels["gpu"] == "1"]
    by_xid = {labels.get("xid"): values for labels, values in out}
    i, window = sc.idx("25m"), fields.XID_COUNT_WINDOW // sc.dt
    assert by_xid["31"][i:i + window] == [1.0] * window and by_xid["31"][i + window] is reader.STALE
    assert by_xid[None][i] is reader.STALE and by_xid[None][i - 1] == 0.0
    assert not [1 for _, labels, _ in series_of(small("unit-no-count")[0]) if "xid" in labels]


def test_document_is_deterministic_and_complete(built):
    sc, _ = built
    again, _ = small()
    text = document.dump(document.to_doc(sc))
    assert text == document.dump(document.to_doc(again))
    assert text.startswith(document.HEADER)
    doc = document.to_doc(sc)
    assert list(doc) == ["name", "description", "interval", "evaluation_interval", "duration", "series", "expect"]
    assert doc["evaluation_interval"] == "1m"       # 30 s scrapes evaluate every minute unless listed
    sc.expect_alert("ecc_uncorrectable", sc.nodes[0].gpus[2], "20m", "5m", continuous=True)
    sc.allow("xid_error", "memory_remap", "xid_error")
    doc = document.to_doc(sc)
    assert doc["expect"] == [{"failure_mode": "ecc_uncorrectable", "labels": {"Hostname": "gpu-h100-u01", "gpu": "2"},
                              "after": "20m", "within": "5m", "continuous": True}]
    assert doc["also_allowed"] == ["memory_remap", "xid_error"]


@pytest.mark.parametrize("interval, name, pinned, want", [
    ("30s", "unit", None, "1m"), ("30s", "exporter-down", None, "30s"), ("15s", "unit", None, "15s"),
    ("5m", "unit", None, "30m"), ("5m", "unit", "5m", "5m")])
def test_evaluation_interval(interval, name, pinned, want):
    sc = fleet.Scenario(name, "x", interval=interval, duration="1h")
    if pinned:
        sc.evaluation = pinned
    assert document.evaluation_interval(sc) == want


def test_training_run_series():
    sc = fleet.Scenario("unit-training", "x", duration="2h")
    nd = training.job_node(sc, "gpu-h100-u02", "10.9.0.2", n=8)
    run = training.start_run(sc, nd.gpus[:2], "ml", "llm", eval_every=None)
    run.progress(0, sc.n)
    run.fill(0, sc.n)
    training.finish_with_jobs(sc, run)
    series = [(parse_series(t), reader.expand(v)) for t, v in sc.extra_series]
    names = sorted((name, labels["rank"]) for (name, labels), _ in series)
    assert names == [("training_loss", "0"), ("training_loss", "1"),
                     ("training_step_duration_seconds", "0"), ("training_step_duration_seconds", "1")]
    loss = next(v for (name, labels), v in series if name == "training_loss" and labels["rank"] == "0")
    assert loss[0] is None                          # no step yet: the gauge does not exist
    assert loss[-1] < loss[sc.idx("20m")] < 10.8    # the loss falls as training goes on
    assert training.pretrain_loss(0.0) == pytest.approx(10.8, abs=0.1)
    assert sc.extra_series[0] in emission.emit(sc)


def test_history_helpers():
    sc = fleet.Scenario("unit-history", "x", interval="5m", duration="50h")
    assert history.at(sc, 1, 2, 30) == (86400 + 9000) // 300
    nd = history.long_node(sc, "gpu-h100-u03", "10.9.0.3")
    assert nd.fields == history.BASELINE_FIELDS
    history.clamp_offsets(nd.gpus, 0.5)
    assert all(abs(g.toff) <= 0.5 for g in nd.gpus)
    assert history.train_like(0.8)["demand"] == (0.8, 0.04)
    history.expect_baseline(sc, nd.gpus[1], "1h", "2h", signal="gpu_temp")
    assert sc.expect[-1]["labels"] == {"Hostname": "gpu-h100-u03", "gpu": "1", "signal": "gpu_temp"}
