"""rulesgen/builders/dashboards/prose.py: panel titles and units from the catalog's words (signals.yaml and
threshold titles, never a query's text), and the description every panel carries (shows, normal, do), for
comparisons written here and the bundled catalog's texts."""
import pytest

from rulesgen.builders.dashboards.prose import (
    ENGINE_WORDS, comparison_description, comparison_title, comparison_unit, describe, one_line, one_series,
    panel_text, record_title, series_words)
from rulesgen.builders.dashboards.reading import Comparison
from rulesgen.model.catalog import humanized
from unit_build import bundled

THERMAL = "gpu:dcgm_clock_event_thermal:active"


@pytest.fixture(scope="module")
def built():
    return bundled()


def comparison(lhs, op=">", rhs="0.5", threshold=None, value=0.5):
    return Comparison(lhs=lhs, op=op, rhs=rhs, threshold=threshold, value=value, severity="warning", alert="GPUHot")


@pytest.mark.parametrize("name, words", [("dcgm_ecc_sbe_rate", "ECC SBE rate"), ("nvlink_crc_total", "NVLink CRC total"),
                                         ("pcie_rx_bytes", "PCIe RX bytes")])
def test_a_catalog_without_titles_gets_the_name_in_words(name, words):
    assert humanized(name) == words


def test_record_titles_are_the_signals_titles(built):
    assert record_title(built.ctx, "gpu:dcgm_gpu_temp:max") == "GPU temperature"
    assert record_title(built.ctx, "gpu:dcgm_ecc_sbe:rate_per_minute") == "Correctable ECC errors per minute"
    assert record_title(built.ctx, "model:dcgm_gpus:count") == "GPUs"  # rulesgen's own record: its name in words


def test_one_series_reads_a_named_series_alone_or_in_one_range_function(built):
    read = one_series(built.ctx, "max_over_time(gpu:dcgm_gpu_temp:max[10m])")
    assert (read.words.title, read.function, read.window) == ("GPU temperature", "max_over_time", "10m")
    assert one_series(built.ctx, "up{job=\"x\"}").words.title == ENGINE_WORDS["up"][0]
    assert one_series(built.ctx, "DCGM_FI_DEV_GPU_TEMP") is None  # a raw field: no catalog title
    assert one_series(built.ctx, "gpu:dcgm_gpu_temp:max + gpu:dcgm_memory_temp:max") is None
    assert one_series(built.ctx, "deriv(gpu:dcgm_gpu_temp:max[10m])") is None  # a function no title says
    assert series_words(built.ctx, "gpu:no_such:record") is None


def test_titles_and_units_of_a_record_read_through_a_function(built):
    avg = comparison(f"avg_over_time({THERMAL}[4m])")
    assert comparison_title(built.ctx, avg) == "Thermal slowdown active (avg over 4m)"
    assert built.ctx.unit(THERMAL) == "bool"
    assert comparison_unit(built.ctx, avg) == "percentunit"  # the average of a 0/1 signal is a share of time
    median = comparison(f"quantile_over_time(0.5, {THERMAL}[4m])")
    assert comparison_title(built.ctx, median) == "Thermal slowdown active (median over 4m)"
    changes = comparison("changes(gpu:dcgm_power_usage:max[10m])")
    assert comparison_title(built.ctx, changes) == "Power draw: changes in 10m"
    assert comparison_unit(built.ctx, changes) == "short"
    assert comparison_unit(built.ctx, comparison("gpu:dcgm_sm_clock:max")) == "MHz"  # drawn in hertz by panels.py


def test_a_comparison_of_an_expression_is_titled_by_its_threshold_or_not_at_all(built):
    fm = built.catalog.failure_mode("gpu_lost")
    threshold = fm.thresholds[0]
    c = comparison("max by (cluster) (gpu:dcgm_reporting:timestamp) - gpu:dcgm_reporting:timestamp",
                   threshold=threshold, value=60.0)
    assert comparison_title(built.ctx, c) == threshold.title == "Seconds since the GPU's last sample, behind its node"
    assert comparison_unit(built.ctx, c) == "s"
    assert comparison_title(built.ctx, comparison("floor(gpu:dcgm_fabric_health_mask:max / 16) % 4")) is None


def test_a_description_says_what_is_normal_and_what_to_do(built):
    fm = built.catalog.failure_mode("thermal_throttling")
    text = comparison_description(built.ctx, fm, comparison(f"avg_over_time({THERMAL}[4m])", op=">="))
    shows, normal, do, link = text.split("\n\n")
    assert shows.endswith("Read over 4m (avg_over_time), as alert GPUHot reads it.")
    assert normal == "**Normal:** below 0.5; GPUHot (warning) fires past it."
    assert do == "**Do:** " + "; ".join(fm.runbook.act)
    assert link.startswith("Runbook: ") and link.endswith("/thermal-throttling.md")


def test_a_reference_series_is_named_by_its_title_not_its_query(built):
    fm = built.catalog.failure_mode("thermal_throttling")
    text = comparison_description(built.ctx, fm, comparison("gpu:dcgm_gpu_temp:max", ">=", "gpu:dcgm_memory_temp:max",
                                                            value=None))
    assert "**Normal:** below the dashed line (Memory (HBM) temperature); GPUHot (warning) fires past it." in text
    unnamed = comparison_description(built.ctx, fm, comparison("gpu:dcgm_gpu_temp:max", ">=", "vector(1)", value=None))
    assert "the dashed line (the alert's reference)" in unnamed


def test_panel_text_fills_the_catalog_template(built):
    text = panel_text(built.ctx, "fleet.gpu_hours", idle_util="0.07", mode="m1", threshold="t1")
    assert text.startswith("**Shows:** ") and "0.07" in text and "m1" in text
    assert text.count("\n\n") == 2  # shows, normal, do; no runbook given
    assert panel_text(built.ctx, "no.such.text") == ""


def test_describe_and_one_line():
    assert describe("a", "b", "c", "u") == "**Shows:** a\n\n**Normal:** b\n\n**Do:** c\n\nRunbook: u"
    assert one_line(" a\n  b\tc ") == "a b c"
