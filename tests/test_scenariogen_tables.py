"""fixtures/scenariogen/gpus.py, fields.py and phases.py: the generator's tables are consistent in
themselves and with the catalog the rules are built from."""
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures"))

from scenariogen import fields, gpus, phases  # noqa: E402

MODELS = {name: m for name, m in vars(gpus).items() if isinstance(m, gpus.Model)}
CATALOG_MODELS = yaml.safe_load((ROOT / "catalog" / "gpu_models.yaml").read_text())["models"]
CATALOG_METRICS = {e["name"] for e in yaml.safe_load((ROOT / "catalog" / "metrics.yaml").read_text())["metrics"]}
KEYS = {"key", "name", "tdp", "idle_w", "max_clock", "idle_clock", "cap_floor", "mem_clock", "fb_total",
        "fb_reserved", "max_op", "slowdown", "hbm_max", "t0", "r", "m0", "rm", "dram_k", "has_mem_temp",
        "pcie_max", "driver", "pci"}


def test_the_table_has_the_boards_the_scenarios_use():
    assert {"H100", "A100", "L40S", "B200", "GB200", "GB300", "H200", "GB200_NVL72"} <= set(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gpu_model_is_consistent(name):
    m = MODELS[name]
    assert KEYS <= set(vars(m)) <= KEYS | {"shutdown"}
    assert 0 < m.idle_w < m.tdp
    assert m.idle_clock < m.cap_floor < m.max_clock
    assert m.max_op < m.slowdown < getattr(m, "shutdown", m.slowdown + 3)
    assert 0 < m.fb_reserved < m.fb_total
    assert m.has_mem_temp == (m.hbm_max is not None) == (m.rm > 0)
    assert len(m.pci) in (4, 8) and len(set(m.pci)) == len(m.pci)
    assert all(re.fullmatch(r"[0-9A-F]{8}:[0-9A-F]{2}:00\.0", p) for p in m.pci)
    # a healthy board at full power in a 25 C data hall runs below its own limits (what throttles is a fault)
    assert 25 + m.t0 + m.r * m.tdp < m.max_op
    if m.has_mem_temp:
        assert 25 + m.m0 + m.rm * m.tdp + m.dram_k * 0.45 < m.hbm_max


@pytest.mark.parametrize("name", ["H100", "A100", "L40S"])
def test_table_gpus_agree_with_the_catalog(name):
    """The boards the catalog knows: same model name match, power, framebuffer and limits, and a PCIe
    bandwidth below the link's raw rate. (H200 reports its own, higher limits on purpose: own_limits.)"""
    m = MODELS[name]
    entry = next(c for c in CATALOG_MODELS if re.fullmatch(c["match"], m.name))
    assert m.tdp == entry["tdp_watts"]
    assert m.fb_total == entry["fb_mib"]
    assert m.max_op == entry["gpu_max_operating_temp_c"]
    if m.has_mem_temp:
        assert m.hbm_max == entry["memory_max_temp_c"]
    assert m.pcie_max < entry["pcie_max_bytes_per_second"]


def test_mig_profiles():
    assert set(gpus.MIG_FB) == set(gpus.MIG_SLICES)
    for profile, slices in gpus.MIG_SLICES.items():
        assert profile.startswith("%dg." % slices)
        assert gpus.MIG_FB[profile] <= gpus.A100.fb_total - gpus.A100.fb_reserved


def test_every_field_is_a_catalog_metric_with_a_rounding():
    assert set(fields.METRICS) <= CATALOG_METRICS
    groups = [fields.CORE, fields.PROF, fields.PROF_HELM, fields.POWER_EXTRA, fields.ECC, fields.REMAP,
              fields.RETIRED, fields.NVLINK, fields.HELM_DEFAULT_NO_PROF, fields.OWN_LIMITS, fields.FABRIC]
    for group in groups:
        assert set(group) <= set(fields.METRICS), group
        assert len(set(group)) == len(group)
    assert fields.MIG_INSTANCE_FIELDS <= set(fields.METRICS)
    assert fields.r_int(2.5) == 2 and fields.r_1(0.26) == 0.3 and fields.r_mb(2_345_678) == 2_000_000


def test_h100_fields():
    f = fields.h100_fields(extra=["DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_GPU_TEMP"])
    assert f == fields.CORE + fields.PROF + ["DCGM_FI_DEV_POWER_VIOLATION"]
    assert fields.h100_fields(prof=False) == fields.CORE
    assert fields.h100_fields() is not fields.CORE


def test_fabric_constants():
    # two-bit sub-fields: every condition false (2), partition assigned (1)
    assert fields.MASK_HEALTHY & 0x3 == 2 and fields.MASK_DEGRADED_BW & 0x3 == 1
    assert fields.MASK_HEALTHY >> 2 == fields.MASK_DEGRADED_BW >> 2
    assert (fields.FM_NOT_STARTED, fields.FM_IN_PROGRESS, fields.FM_SUCCESS, fields.FM_FAILURE) == (1, 2, 3, 4)
    assert 79 in fields.XID_MSG and 120 in fields.XID_MSG
    assert fields.HEALTH_WATCHES[0] == "PCIE" and len(set(fields.HEALTH_WATCHES)) == 10


@pytest.mark.parametrize("name", sorted(phases.PH))
def test_phase_specs_are_well_formed(name):
    sp = phases.PH[name]
    assert sp["kind"] in ("idle", "ctx", "active", "low")
    for key in ("util", "sm", "occ", "tensor", "dram", "gr", "rx", "tx", "memcopy"):
        mean, sd, lo, hi = sp[key]
        assert lo <= mean <= hi and sd >= 0, (key, sp[key])
    for key in ("sm", "occ", "tensor", "dram", "gr"):
        assert 0 <= sp[key][3] <= 1
    assert (sp["demand"] is None) == (sp["kind"] in ("idle", "ctx"))


def test_load_and_pcie_specs_scale():
    low, high = phases.load_spec(0.1), phases.load_spec(0.9)
    assert low["util"][0] < high["util"][0] and low["demand"][0] < high["demand"][0]
    assert phases.load_spec(7) == phases.load_spec(1)
    assert phases.pcie_bound_spec(gpus.H100)["rx"][0] == pytest.approx(0.95 * gpus.H100.pcie_max)
