"""rulesgen/builders/dashboards/executive.py and on_call.py: the audience dashboards' chapters, each saying whom
it serves (chapters.py), drawn from what the catalog names; queries checked on their parsed trees."""
from dataclasses import replace

import pytest
from grafanalib.core import TimeSeries

from rulesgen.builders.dashboards import executive, on_call
from rulesgen.builders.dashboards.chapters import DEBUG, SEPARATOR, chapter_title, group_audience
from rulesgen.builders.dashboards.layout import lay_out
from rulesgen.model import kube_state
from rulesgen.promql import tree
from unit_build import bundled, grafana_free, with_context


@pytest.fixture(scope="module")
def built():
    return bundled()


def titles(chapters, ctx):
    return {c.title: [p.title for p in c.panels(ctx)] for c in chapters}


def test_the_executive_chapters_in_order(built):
    assert titles(executive.CHAPTERS, built.ctx) == {
        "Capacity": ["GPUs by model", "GPUs by health state", "GPUs reporting by model"],
        "Utilisation": ["GPU utilization (GPU_UTIL)", "SM active: the honest utilisation", "Tensor active"],
        "Utilisation over time": ["Fleet utilisation: SM active (GPU_UTIL dashed)", "GPU-hours in range: busy vs idle"],
        "Cost": ["Estimated cost and waste in range", "Cost per team (namespace) in range", "Cost per job in range (top 10)"],
        "Jobs": ["GPU job success rate", "GPU jobs finished: completed and failed"],
        "Inventory": ["Inventory by GPU model and driver"]}


def test_the_on_call_chapters_in_order(built):
    assert titles(on_call.CHAPTERS, built.ctx) == {
        "Firing now": ["Alerts firing now", "Firing alerts by failure mode"],
        "Nodes": ["Nodes by health", "dcgm-exporter targets", "GPUs lost"],
        "Workloads": ["GPUs requested by pending pods", "Top failing GPU jobs", "Jobs with the most GPU alerts"]}


def test_every_query_parses_and_reads_what_is_produced(built):
    known = set(built.ctx.series_names) | set(kube_state.SERIES) | {"ALERTS_FOR_STATE"}
    for chapter in (*executive.CHAPTERS, *on_call.CHAPTERS):
        for panel in chapter.panels(built.ctx):
            for t in panel.targets:
                expr = grafana_free(t.expr)
                assert tree.problems(expr) == [], (panel.title, expr)
                assert set(tree.names_read(expr)) <= known, (panel.title, set(tree.names_read(expr)) - known)


def test_a_catalog_without_the_inventory_or_tensor_record_draws_neither(built):
    roles = tuple((r, () if r in ("inventory", "tensor_active_per_gpu") else n) for r, n in built.catalog.roles)
    ctx = with_context(built, catalog=replace(built.catalog, roles=roles))
    drawn = titles(executive.CHAPTERS, ctx)
    assert drawn["Inventory"] == [] and "Tensor active" not in drawn["Utilisation"]


def test_the_on_call_panels_of_undeclared_failure_modes_are_not_drawn(built):
    panels = tuple(p for p in built.catalog.hand_made_panels if not p.panel.startswith("on_call."))
    ctx = with_context(built, catalog=replace(built.catalog, hand_made_panels=panels))
    assert titles(on_call.CHAPTERS, ctx)["Nodes"] == ["Nodes by health"]


def test_the_gpu_jobs_are_the_kubernetes_jobs_whose_pods_request_gpus(built):
    expr = executive.gpu_job_names(built.ctx)
    reads = tree.selectors(tree.parse(expr.replace("$namespace", ".*")))
    requests = next(s for s in reads if s.name == kube_state.REQUESTS)
    assert ("resource", "=", kube_state.GPU_RESOURCE) in requests.matchers
    assert ("owner_kind", "=", "Job") in next(s for s in reads if s.name == kube_state.POD_OWNER).matchers


def test_a_row_title_says_whom_it_serves():
    assert chapter_title("Cost", "leads") == f"Cost{SEPARATOR}leads"
    assert group_audience("health") == "on-call and the hardware team" and group_audience("new-group") == DEBUG


def test_three_panels_a_line_share_the_width():
    laid, end = lay_out([TimeSeries(title=str(k)) for k in range(5)], 1, 0, per_line=3)
    assert [(p.gridPos.x, p.gridPos.y, p.gridPos.w) for p in laid] == [(0, 0, 8), (8, 0, 8), (16, 0, 8), (0, 8, 12),
                                                                        (12, 8, 12)]
    assert end == 16
