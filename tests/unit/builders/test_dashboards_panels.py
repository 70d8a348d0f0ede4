"""rulesgen/builders/dashboards/panels.py: panel constructors with the project's defaults, threshold colours, runbook
links, and a failure mode's row read from its alerts (bundled catalog, built in-process)."""
import pytest

from rulesgen.builders.dashboards.context import DATASOURCE
from rulesgen.builders.dashboards.panels import (
    alert_panels, comparison_panel, drawn, firing_alerts_panel, runbook_link, target, threshold_steps, time_series)
from rulesgen.builders.dashboards.reading import Comparison
from rulesgen.model import grafana_units
from rulesgen.promql import tree
from unit_build import bundled


@pytest.fixture(scope="module")
def built():
    return bundled()


@pytest.mark.parametrize("op, severity, steps", [
    (">", "critical", [{"color": "green", "value": None}, {"color": "red", "value": 5}]),
    (">=", "warning", [{"color": "green", "value": None}, {"color": "orange", "value": 5}]),
    ("<", "info", [{"color": "yellow", "value": None}, {"color": "green", "value": 5}]),
    ("==", "critical", [{"color": "green", "value": None}])])
def test_threshold_steps_colour_the_bad_side_by_severity(op, severity, steps):
    assert threshold_steps(op, 5, severity) == steps


def test_no_value_no_threshold_line():
    assert threshold_steps(">", None, "critical") == [{"color": "green", "value": None}]


def test_runbook_links(built):
    fm = built.catalog.failure_mode("ecc_uncorrectable")
    (link,) = runbook_link(built.ctx, fm)
    assert link.title == f"Runbook: {fm.title}" and link.linkUrl.endswith("/ecc-uncorrectable.md") and link.isNewTab
    (index,) = runbook_link(built.ctx, None)
    assert (index.title, index.linkUrl) == ("Runbooks", built.settings.runbook_base_url)


def test_targets_and_time_series_defaults():
    t = target("up", "{{instance}}", "C", instant=True, table=True)
    assert (t.refId, t.instant, t.format, t.datasource) == ("C", True, "table", DATASOURCE)
    ts = time_series("T", "d", "s", [t], [], steps=[{"color": "green", "value": None}, {"color": "red", "value": 1}],
                     dashed_refs=("C",), stacked=True)
    assert (ts.thresholdsStyleMode, ts.fillOpacity, ts.stacking["mode"]) == ("dashed", 10, "normal")
    assert ts.overrides[0]["matcher"] == {"id": "byFrameRefID", "options": "C"}
    plain = time_series("T", "d", "s", [t], [])
    assert (plain.thresholdsStyleMode, plain.overrides, plain.stacking["mode"]) == ("off", [], "none")


def test_drawn_only_when_declared(built):
    assert drawn(built.ctx, "fleet.cost", lambda ctx, reads: reads.panel) == ["fleet.cost"]
    with pytest.raises(KeyError):
        drawn(built.ctx, "fleet.no_such_panel", lambda ctx, reads: reads)


def test_firing_alerts_of_the_modes_given(built):
    modes = [built.catalog.failure_mode("gpu_lost"), built.catalog.failure_mode("xid_error")]
    (t,) = firing_alerts_panel(built.ctx, modes).targets
    (s,) = tree.selectors(t.expr)
    assert ("failure_mode", "=~", "gpu_lost|xid_error") in s.matchers and ("alertstate", "=", "firing") in s.matchers
    (t,) = firing_alerts_panel(built.ctx, []).targets
    assert ("failure_mode", "=~", "none") in tree.selectors(t.expr)[0].matchers


def test_a_comparison_with_a_reference_series_draws_it_dashed(built):
    fm = built.catalog.failure_mode("thermal_throttling")
    c = Comparison(lhs="gpu:dcgm_gpu_temp:max", op=">=", rhs="gpu:dcgm_limit_gpu_max_operating_temp_c:value",
                   threshold=None, value=None, severity="warning", alert="GPUThermalThrottling")
    panel = comparison_panel(built.ctx, fm, c, "GPU temperature", "legend")
    assert [t.refId for t in panel.targets] == ["A", "B"] and panel.targets[1].legendFormat == "alert line: legend"
    assert panel.overrides[0]["matcher"]["options"] == "B"
    assert tree.recorded_names(panel.targets[0].expr)[0] == "gpu:dcgm_gpu_temp:max" and panel.title == "GPU temperature"
    # filtered by the dashboard's cluster variable
    assert ("cluster", "=~", "$cluster") in tree.selectors(panel.targets[0].expr)[0].matchers


def test_a_mode_s_row_opens_with_its_title_and_shows_each_record_once(built):
    fm = built.catalog.failure_mode("thermal_throttling")
    panels = alert_panels(built.ctx, fm)
    assert panels[0].title.startswith(f"{fm.title}: ") and not panels[1].title.startswith(fm.title)
    first_reads = [tuple(tree.recorded_names(t.expr)[:1]) for p in panels for t in p.targets[:1]]
    assert len(first_reads) == len(set(first_reads))


def test_a_unit_grafana_has_no_id_for_is_drawn_through_one_it_has():
    """MHz -> hertz: every query and threshold step is multiplied by 1e6; a Grafana id is drawn as it is."""
    steps = [{"color": "green", "value": None}, {"color": "red", "value": 1500}]
    panel = time_series("SM clock", "d", "MHz", [target("gpu:dcgm_sm_clock:max", "x")], [], steps)
    assert panel.unit == "hertz" == grafana_units.display("MHz")[0]
    assert panel.targets[0].expr == "(gpu:dcgm_sm_clock:max) * 1000000"
    assert [s["value"] for s in panel.thresholds] == [None, 1.5e9]
    plain = time_series("T", "d", "celsius", [target("gpu:dcgm_gpu_temp:max", "x")], [], steps)
    assert plain.unit == "celsius" and plain.targets[0].expr == "gpu:dcgm_gpu_temp:max" and plain.thresholds == steps
