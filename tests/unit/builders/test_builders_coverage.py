"""rulesgen/builders/coverage.py: which failure modes a dcgm-exporter counters file leaves blind, from the
fields each mode's rules read (through the recording rules), on the bundled catalog built in-process."""
import pytest

from rulesgen.builders.coverage import Coverage, coverage
from unit_build import bundled


@pytest.fixture(scope="module")
def built():
    return bundled()


def every_name(built):
    return {n for m in built.catalog.metrics for n in m.names}


def test_every_field_enabled_covers_every_mode(built):
    states = coverage(built.catalog, built.rules, every_name(built))
    assert set(states) == {fm.id for fm in built.catalog.failure_modes}
    assert set(states.values()) == {Coverage("covered", ())}


def test_no_field_enabled_leaves_each_mode_blind_to_its_own_fields(built):
    states = coverage(built.catalog, built.rules, set())
    assert {s.state for s in states.values()} == {"blind"}
    assert states["ecc_uncorrectable"].missing == ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
    assert states["pcie_errors"].missing == ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",)


def test_one_of_two_fields_is_partial_and_names_the_other(built):
    enabled = every_name(built) - {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"}
    states = coverage(built.catalog, built.rules, enabled)
    assert states["ecc_uncorrectable"] == Coverage("partial", ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",))
    assert states["ecc_uncorrectable"].describe() == "partial: missing DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"
    assert states["pcie_errors"].state == "covered"


def test_an_alias_enables_its_metric_and_unknown_names_are_ignored(built):
    pcie = built.catalog.metric("DCGM_FI_DEV_PCIE_REPLAY_COUNTER")
    enabled = (every_name(built) - set(pcie.names)) | {"DCGM_FI_NOT_IN_THE_CATALOG"}
    assert coverage(built.catalog, built.rules, enabled)["pcie_errors"] == Coverage("blind", ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",))
    gpu_temp = built.catalog.metric("DCGM_FI_DEV_GPU_TEMP")
    alias = gpu_temp.names[1]
    states = coverage(built.catalog, built.rules, (every_name(built) - {gpu_temp.name}) | {alias})
    assert states["exporter_down"].state == "covered"  # enabled under its other name


def test_describe_blind():
    assert Coverage("blind", ("A", "B")).describe() == "BLIND: needs A, B"
