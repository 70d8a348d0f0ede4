"""rulesgen/builders/dashboards/job_signals.py: the GPU Jobs panels and rows of the training jobs' own metrics,
from the bundled catalog built in-process; queries checked on their parsed trees."""
from dataclasses import replace

import pytest

from rulesgen.builders.dashboards.job_signals import HARDWARE_TITLE, ROWS, header_panels, mode_panels
from rulesgen.promql import tree
from unit_build import bundled, with_context


@pytest.fixture(scope="module")
def built():
    return bundled()


def test_header_panels_hardware_alerts_then_loss_and_step_per_rank(built):
    panels = header_panels(built.ctx)
    assert [p.title for p in panels] == [HARDWARE_TITLE, "Training loss per rank", "Step time per rank"]
    loss = panels[1]
    assert [tree.recorded_names(t.expr)[0] for t in loss.targets] == [
        built.ctx.named("rank_loss"), built.ctx.named("job_loss_smoothed")]
    assert panels[2].unit == "s"


def test_no_header_panels_when_job_metrics_are_off(built):
    settings = replace(built.settings, job_metrics=replace(built.settings.job_metrics, enabled=False))
    assert header_panels(replace(built.ctx, settings=settings)) == []


def test_hardware_alerts_are_those_of_the_declared_modes_joined_to_the_pods(built):
    reads = built.ctx.hand_made("jobs.hardware_alerts")
    (target,) = header_panels(built.ctx)[0].targets
    alerts = next(s for s in tree.selectors(target.expr) if s.name == "ALERTS")
    modes = dict((label, value) for label, op, value in alerts.matchers if op == "=~")["failure_mode"]
    assert modes.split("|") == [m.id for m in reads.alerts_of]
    assert tree.grouping(target.expr)[0] == ("by", ("alertname", built.settings.host_label, "gpu"))


def test_every_declared_row_starts_with_its_mode_s_main_comparison(built):
    for row, build in ROWS.items():
        reads = built.ctx.hand_made(row)
        panels = build(built.ctx, reads)
        assert panels[0].title.startswith(f"{reads.fm.title}: ")
        assert all(tree.selectors(t.expr) for p in panels for t in p.targets)


def test_the_divergence_row_draws_its_threshold(built):
    reads = built.ctx.hand_made("rows.loss_divergence")
    main = ROWS["rows.loss_divergence"](built.ctx, reads)[0]
    assert main.thresholds[-1]["value"] == reads.value("diverging_above")
    assert tree.recorded_names(main.targets[0].expr)[0] == built.ctx.named("job_loss_vs_best")


def test_the_plateau_row_compares_with_one_window_earlier(built):
    reads = built.ctx.hand_made("rows.loss_plateau")
    main = ROWS["rows.loss_plateau"](built.ctx, reads)[0]
    earlier = tree.selectors(main.targets[1].expr)[0]
    assert earlier.offset == int(reads.value("earlier_by"))


def test_a_mode_without_a_row_shows_its_firing_alerts(built):
    fm = built.catalog.failure_mode("loss_divergence")
    (panel,) = mode_panels(built.ctx, fm)
    (s,) = tree.selectors(panel.targets[0].expr)
    assert (s.name, ("failure_mode", "=", fm.id) in s.matchers) == ("ALERTS", True)
    assert panel.title == f"{fm.title}: firing alerts"  # dashboards.yaml texts: rows.job_alerts title


def test_an_undeclared_panel_is_left_out(built):
    kept = tuple(p for p in built.catalog.hand_made_panels if p.panel != "jobs.hardware_alerts")
    ctx = with_context(built, catalog=replace(built.catalog, hand_made_panels=kept))
    assert [p.title for p in header_panels(ctx)] == ["Training loss per rank", "Step time per rank"]
