"""rulesgen/builders/dashboards/prose.py: panel titles from record names, units, and the description every panel
carries (shows, normal, do), for comparisons written here and the bundled catalog's texts."""
import pytest

from rulesgen.builders.dashboards.prose import (
    comparison_description, comparison_title, comparison_unit, describe, humanize, one_line, panel_text, record_title,
    wrapped_record)
from rulesgen.builders.dashboards.reading import Comparison
from unit_build import bundled

THERMAL = "gpu:dcgm_clock_event_thermal:active"


@pytest.fixture(scope="module")
def built():
    return bundled()


def comparison(lhs, op=">", rhs="0.5", threshold=None, value=0.5):
    return Comparison(lhs=lhs, op=op, rhs=rhs, threshold=threshold, value=value, severity="warning", alert="GPUHot")


@pytest.mark.parametrize("name, words", [("dcgm_ecc_sbe_rate", "ECC SBE rate"), ("gpu:dcgm_nvlink_crc:total", "GPU NVLink CRC total"),
                                         ("pcie_rx_bytes", "PCIe RX bytes")])
def test_humanize(name, words):
    assert humanize(name) == words


def test_record_titles_drop_plain_operations():
    assert record_title("gpu:dcgm_gpu_temp:max") == "GPU temp"
    assert record_title("gpu:dcgm_ecc_sbe:rate_per_minute") == "ECC SBE rate per minute"


def test_wrapped_record_reads_one_record_alone_or_in_one_function():
    assert wrapped_record("max_over_time(gpu:a:max[10m])") == ("gpu:a:max", "max_over_time", "10m")
    assert wrapped_record("gpu:a:max") == ("gpu:a:max", None, None)
    assert wrapped_record("DCGM_FI_DEV_GPU_TEMP") is None and wrapped_record("gpu:a:max + gpu:b:max") is None


def test_titles_and_units_of_a_record_read_through_a_function(built):
    avg = comparison(f"avg_over_time({THERMAL}[4m])")
    assert comparison_title(avg) == "Clock event thermal active (avg over 4m)"
    assert built.ctx.unit(THERMAL) == "bool"
    assert comparison_unit(built.ctx, avg) == "percentunit"  # the average of a 0/1 signal is a share of time
    median = comparison(f"quantile_over_time(0.5, {THERMAL}[4m])")
    assert comparison_title(median) == "Clock event thermal active (median over 4m)"
    rate = comparison("increase(gpu:dcgm_xid:count[10m])")
    assert comparison_title(rate) == "XID count: increase in 10m"
    assert comparison_unit(built.ctx, rate) == "short"


def test_a_raw_comparison_is_titled_by_its_threshold(built):
    fm = built.catalog.failure_mode("thermal_throttling")
    threshold = fm.thresholds[0]
    c = comparison("rate(DCGM_FI_DEV_X[5m])", threshold=threshold, value=3.0)
    assert comparison_title(c) == f"{humanize(threshold.name)} ({threshold.unit})"
    assert comparison_unit(built.ctx, c) == "percentunit"  # unit ratio


def test_a_description_says_what_is_normal_and_what_to_do(built):
    fm = built.catalog.failure_mode("thermal_throttling")
    text = comparison_description(built.ctx, fm, comparison(f"avg_over_time({THERMAL}[4m])", op=">="))
    shows, normal, do, link = text.split("\n\n")
    assert shows.endswith("Read as avg_over_time(...[4m]), as alert GPUHot reads it.")
    assert normal == "**Normal:** below 0.5; GPUHot (warning) fires past it."
    assert do == "**Do:** " + "; ".join(fm.runbook.act)
    assert link.startswith("Runbook: ") and link.endswith("/thermal-throttling.md")


def test_a_reference_series_is_named_in_the_normal_line(built):
    fm = built.catalog.failure_mode("thermal_throttling")
    text = comparison_description(built.ctx, fm, comparison("gpu:dcgm_gpu_temp:max", ">=", "gpu:x:value", value=None))
    assert "**Normal:** below the dashed series (`gpu:x:value`); GPUHot (warning) fires past it." in text


def test_panel_text_fills_the_catalog_template(built):
    text = panel_text(built.ctx, "fleet.gpu_hours", idle_util="0.07", mode="m1", threshold="t1")
    assert text.startswith("**Shows:** ") and "0.07" in text and "m1" in text
    assert text.count("\n\n") == 2  # shows, normal, do; no runbook given
    assert panel_text(built.ctx, "no.such.text") == ""


def test_describe_and_one_line():
    assert describe("a", "b", "c", "u") == "**Shows:** a\n\n**Normal:** b\n\n**Do:** c\n\nRunbook: u"
    assert one_line(" a\n  b\tc ") == "a b c"
