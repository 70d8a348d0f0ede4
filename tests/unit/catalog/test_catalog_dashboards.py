"""rulesgen/catalog/dashboards.py: dashboards.yaml's hand-made panels (the failure mode, thresholds and alerts each
reads) and their texts (placeholders checked), on a small file (tests/test_catalog_names.py plants its errors in
the bundled catalog)."""
from dataclasses import replace

import pytest

from conftest import MINIMAL_CATALOG
from rulesgen.catalog.dashboards import read_dashboards, read_texts
from rulesgen.catalog.failure_modes import read_failure_modes
from rulesgen.errors import Collector
from rulesgen.model.panels import ALWAYS_TEXTS
from unit_yaml import printed, written

PANELS = """\
panels:
  - panel: fleet.gpu_hours
    failure_mode: idle
    thresholds: {idle_util: util}
  - panel: jobs.hardware_alerts
    failure_mode: hot_gpu
    alerts_of: [hot_gpu, idle]
"""


def texts(*ids, extra="    shows: x\n    normal: y\n    do: z\n"):
    return "texts:\n" + "".join(f"  {i}:\n" + extra for i in ids)


@pytest.fixture
def modes(tmp_path):
    """hot_gpu (threshold celsius) from the minimal catalog, and `idle`, a copy with threshold util."""
    _, doc = written(tmp_path, "failure_modes.yaml", MINIMAL_CATALOG["failure_modes.yaml"])
    (hot,) = read_failure_modes(doc, Collector(), {"DCGM_FI_DEV_GPU_TEMP"}, set())
    return [hot, replace(hot, id="idle", thresholds=(replace(hot.thresholds[0], name="util"),))]


def test_panels_with_their_thresholds_by_role_and_alerts(tmp_path, modes):
    _, doc = written(tmp_path, "dashboards.yaml", PANELS)
    errors = Collector()
    panels = read_dashboards(doc, errors, modes)
    assert errors.items == []
    assert [(p.panel, p.failure_mode, p.thresholds, p.alerts_of, p.where.line) for p in panels] == [
        ("fleet.gpu_hours", "idle", (("idle_util", "util"),), (), 2),
        ("jobs.hardware_alerts", "hot_gpu", (), ("hot_gpu", "idle"), 5)]


def test_a_threshold_of_another_mode_and_an_unknown_mode_in_alerts_of(tmp_path, modes):
    text = PANELS.replace("{idle_util: util}", "{idle_util: celsius}").replace("[hot_gpu, idle]", "[hot_gpu, idel]")
    path, doc = written(tmp_path, "dashboards.yaml", text)
    errors = Collector()
    panels = read_dashboards(doc, errors, modes)
    assert panels[1].alerts_of == ("hot_gpu",)
    assert printed(errors) == [
        f"{path}:4:18: error[unknown-threshold]: dashboards.yaml: panel fleet.gpu_hours reads threshold 'celsius' of "
        "failure mode idle: no such threshold (known: util)",
        f"{path}:7:26: error[unknown-failure-mode]: dashboards.yaml: panel jobs.hardware_alerts reads failure mode "
        "'idel': not in failure_modes.yaml (did you mean 'idle'?)",
    ]


def test_a_panel_declared_twice_is_an_error_at_the_second(tmp_path, modes):
    path, doc = written(tmp_path, "dashboards.yaml", PANELS + PANELS.split("\n", 1)[1])
    errors = Collector()
    read_dashboards(doc, errors, modes)
    assert printed(errors) == [
        f"{path}:8:5: error[duplicate-id]: dashboards.yaml: panel fleet.gpu_hours already declared on line 2",
        f"{path}:11:5: error[duplicate-id]: dashboards.yaml: panel jobs.hardware_alerts already declared on line 5"]


def test_texts_for_every_panel_drawn(tmp_path, modes):
    ids = (*ALWAYS_TEXTS, "fleet.gpu_hours", "jobs.hardware_alerts")
    _, doc = written(tmp_path, "dashboards.yaml", PANELS + texts(*ids))
    errors = Collector()
    out = read_texts(doc, errors, read_dashboards(doc, errors, modes))
    assert errors.items == []
    assert [(t.id, t.shows, t.normal, t.do) for t in out] == [(i, "x", "y", "z") for i in ids]


def test_a_file_without_texts_draws_none(tmp_path, modes):
    _, doc = written(tmp_path, "dashboards.yaml", PANELS)
    assert read_texts(doc, Collector(), []) == ()


def test_missing_unused_and_unknown_placeholder_texts(tmp_path, modes):
    ids = (*ALWAYS_TEXTS, "fleet.cost")
    body = texts(*ids).replace("  fleet.cost:\n    shows: x", "  fleet.cost:\n    shows: '[[ idle_utl ]]'")
    path, doc = written(tmp_path, "dashboards.yaml", PANELS + body)
    errors = Collector()
    read_texts(doc, errors, read_dashboards(doc, errors, modes))
    cost_line = 9 + 4 * len(ALWAYS_TEXTS)
    assert printed(errors) == [
        f"{path}:8:1: error[missing-text]: dashboards.yaml texts: no text 'fleet.gpu_hours' (the description of a panel "
        "drawn: declared under panels:)",
        f"{path}:8:1: error[missing-text]: dashboards.yaml texts: no text 'jobs.hardware_alerts' (the description of a "
        "panel drawn: declared under panels:)",
        f"{path}:{cost_line}:3: error[unused-text]: dashboards.yaml texts: fleet.cost is the text of a panel this file "
        "does not declare (panels:); it is drawn nowhere",
        f"{path}:{cost_line + 1}:5: error[unknown-placeholder]: dashboards.yaml text fleet.cost shows: [[ idle_utl ]] is "
        "not a value of this panel (did you mean 'idle_util'?) (known: idle_util, price_default, model_prices, runbook_do)",
    ]


def test_a_title_is_a_template_of_the_panels_placeholders_and_never_promql(tmp_path, modes):
    """title: optional beside shows/normal/do (a file written before it was read draws rulesgen's words); its
    placeholders are the panel's, and a title of PromQL or over 60 characters is bad-title at its line."""
    ids = (*ALWAYS_TEXTS, "fleet.gpu_hours", "jobs.hardware_alerts")
    body = (texts(*ids)
            .replace("  jobs.per_gpu:\n", "  jobs.per_gpu:\n    title: '[[ signal_title ]] per GPU'\n")
            .replace("  fleet.gpu_hours:\n", "  fleet.gpu_hours:\n    title: 'sum by (cluster) (x)'\n")
            .replace("  jobs.hardware_alerts:\n", "  jobs.hardware_alerts:\n    title: '[[ signal ]] alerts'\n"))
    path, doc = written(tmp_path, "dashboards.yaml", PANELS + body)
    errors = Collector()
    out = {t.id: t.title for t in read_texts(doc, errors, read_dashboards(doc, errors, modes))}
    assert out["jobs.per_gpu"] == "[[ signal_title ]] per GPU" and out["alerts.firing"] == ""
    assert out["fleet.gpu_hours"] == ""  # refused: rulesgen's words are drawn
    assert [(d.code, d.message.split(":")[0]) for d in errors.items] == [
        ("bad-title", "dashboards.yaml text fleet.gpu_hours title 'sum by (cluster) (x)'"),
        ("unknown-placeholder", "dashboards.yaml text jobs.hardware_alerts title")]
