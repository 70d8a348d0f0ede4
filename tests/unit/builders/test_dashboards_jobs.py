"""rulesgen/builders/dashboards/jobs.py: the GPU Jobs dashboard's own panels (pick a namespace and pod: its GPUs,
the spread across its ranks, its alerts), from the bundled catalog built in-process; queries on parsed trees."""
from dataclasses import replace

import pytest

from rulesgen.builders.dashboards.jobs import job_panels, per_gpu_panels, pod_legend, pods_alerts_panel, rank_spread_panels
from rulesgen.model import grafana_units
from rulesgen.promql import tree
from unit_build import bundled, with_context


@pytest.fixture(scope="module")
def built():
    return bundled()


def test_the_job_row_top_to_bottom(built):
    titles = [p.title for p in job_panels(built.ctx)]
    assert titles[0] == "GPUs of the selected pods (GPU_UTIL now)"
    assert titles[4:6] == ["Spread across ranks: SM clock vs the job's median", "Spread across ranks: max - min SM active"]
    assert titles[-1] == "Firing alerts on the selected pods' GPUs"
    assert len(titles) == 1 + 3 + 2 + len(built.catalog.named_all("job_gpu_panels")) + 1


def test_one_panel_per_job_gpu_record_joined_to_the_selected_pods(built):
    records = built.catalog.named_all("job_gpu_panels")
    panels = per_gpu_panels(built.ctx)
    assert [tree.recorded_names(p.targets[0].expr)[0] for p in panels] == list(records)
    assert [p.unit for p in panels] == [grafana_units.display(built.ctx.signal(r).unit)[0] for r in records]
    assert all(p.targets[0].legendFormat == pod_legend(built.ctx) for p in panels)


def test_the_clock_spread_draws_the_straggler_threshold_below(built):
    clock, sm = rank_spread_panels(built.ctx)
    ratio = built.ctx.hand_made("jobs.rank_clock_spread").value("straggler_below")
    assert clock.thresholds == [{"color": "orange", "value": None}, {"color": "green", "value": ratio}]
    (s,) = tree.selectors(clock.targets[0].expr)
    assert s.name == built.ctx.named("sm_clock_vs_job")
    # max - min per job
    aggregations = tree.grouping(sm.targets[0].expr)
    by = ("by", (built.settings.cluster_label, built.settings.namespace_label, "workload"))
    assert aggregations[0] == by and aggregations[-1] == by


def test_pod_alerts_count_by_alert_and_join_hardware_alerts_to_the_pod(built):
    (target,) = pods_alerts_panel(built.ctx).targets
    assert tree.grouping(target.expr)[0] == ("by", ("alertname", "failure_mode"))
    names = [s.name for s in tree.selectors(target.expr)]
    # the pods' own alerts kept for the selected jobs' pods; hardware alerts joined to the pod holding their GPU
    assert names == ["ALERTS", built.ctx.named("workload"), "ALERTS", built.ctx.named("workload")]
    pod = built.settings.pod_label
    assert [(pod, "!=", "") in s.matchers for s in tree.selectors(target.expr)] == [True, True, False, True]
    assert [("workload", "=~", "$workload") in s.matchers for s in tree.selectors(target.expr)] == [False, True, False, True]


def test_a_pod_label_setting_reaches_the_legend():
    built = bundled()
    ctx = with_context(built, settings=replace(built.settings, pod_label="exported_pod"))
    assert pod_legend(ctx) == "{{exported_pod}} {{Hostname}}/{{gpu}}"


def test_undeclared_spread_panels_are_left_out(built):
    kept = tuple(p for p in built.catalog.hand_made_panels if not p.panel.startswith("jobs.rank_"))
    assert rank_spread_panels(with_context(built, catalog=replace(built.catalog, hand_made_panels=kept))) == []
