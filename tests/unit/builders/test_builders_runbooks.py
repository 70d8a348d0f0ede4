"""rulesgen/builders/runbooks.py: a runbook page per failure mode, with what this configuration renders of it
(its alerts, effective thresholds, limits, dashboard panel), built in-process from the bundled catalog."""
from dataclasses import replace

import pytest

from rulesgen.builders.rules import build_rules
from rulesgen.builders.runbooks import build_runbooks
from rulesgen.load.resolved import resolve
from rulesgen.load.settings import FailureModeSettings
from rulesgen.promql import tree
from unit_build import bundled


@pytest.fixture(scope="module")
def built():
    return bundled()


@pytest.fixture(scope="module")
def pages(built):
    return {p.fm.id: p for p in build_runbooks(built.catalog, built.settings, built.rules, built.resolved)}


@pytest.fixture(scope="module")
def overridden(built):
    """ecc_correctable_rate with another threshold and `for`, pcie_errors disabled, another Grafana."""
    settings = replace(built.settings, grafana_base_url="https://grafana.test", failure_modes=(
        ("ecc_correctable_rate", FailureModeSettings(for_seconds=1200, thresholds=(("per_minute", 7.0),))),
        ("pcie_errors", FailureModeSettings(enabled=False))))
    resolved = resolve(built.catalog, settings)
    return {p.fm.id: p for p in build_runbooks(built.catalog, settings, build_rules(built.catalog, settings, resolved), resolved)}


def test_one_page_per_failure_mode_at_its_path(built, pages):
    assert list(pages) == [fm.id for fm in built.catalog.failure_modes]
    assert pages["ecc_uncorrectable"].path == "runbooks/ecc-uncorrectable.md"


def test_a_page_lists_the_rules_alerts_of_its_mode(built, pages):
    page = pages["ecc_uncorrectable"]
    rules = [r for r in built.rules.rules if r.failure_mode == "ecc_uncorrectable"]
    assert [a["alert"] for a in page.alerts] == [r.alert for r in rules] == ["GPUECCUncorrectable"]
    (alert,) = page.alerts
    assert (alert["severity"], alert["action"], alert["for_text"]) == ("critical", "drain", "1m")
    # the expression is the rule's own: it reads the DBE records
    assert {"gpu:dcgm_ecc_dbe_volatile:max", "gpu:dcgm_ecc_dbe_aggregate:increase15m"} <= set(tree.recorded_names(alert["expr"]))


def test_the_dashboard_link_has_no_query_and_the_health_table_is_on_its_own_page(pages):
    assert all("?" not in p.dashboard and p.dashboard.startswith("http") for p in pages.values())
    assert [m for m, p in pages.items() if p.health is not None] == ["dcgm_health"]


def test_limits_and_job_inputs_come_with_the_modes_that_read_them(pages):
    assert [limit["key"] for limit in pages["thermal_throttling"].limits] == ["gpu_max_operating_temp_c"]
    assert pages["ecc_uncorrectable"].limits == ()
    assert pages["ghost_loss"].job_inputs == ("training_loss",)
    assert pages["ecc_uncorrectable"].job_inputs == ()


def test_the_configuration_s_threshold_for_and_grafana_reach_the_page(overridden, pages):
    page = overridden["ecc_correctable_rate"]
    assert [(t["name"], t["value"]) for t in page.thresholds] == [("per_minute", 7.0)]
    assert [t["value"] for t in pages["ecc_correctable_rate"].thresholds] == [10]
    assert [a["for_text"] for a in page.alerts] == ["20m"]
    assert page.dashboard.startswith("https://grafana.test/d/")
    # the threshold's source is on one line
    assert "\n" not in page.thresholds[0]["source"]


def test_a_disabled_mode_keeps_its_page_and_says_why_without_alerts(overridden):
    page = overridden["pcie_errors"]
    assert (page.alerts, page.inactive) == ((), "disabled in rulesgen.yaml")
