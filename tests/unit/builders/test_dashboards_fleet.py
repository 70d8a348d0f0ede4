"""rulesgen/builders/dashboards/fleet.py: the GPU Fleet Overview's own panels, from the catalog's declarations
(catalog/dashboards.yaml) and the settings' prices; queries checked on their parsed trees."""
from dataclasses import replace

import pytest

from rulesgen.builders.dashboards.fleet import fleet_panels, priced
from rulesgen.load.settings import FailureModeSettings
from rulesgen.promql import tree
from unit_build import bundled, grafana_free, with_context


@pytest.fixture(scope="module")
def built():
    return bundled()


def by_title(panels):
    return {p.title: p for p in panels}


def test_the_fleet_row_in_order(built):
    assert [p.title for p in fleet_panels(built.ctx)] == [
        "GPUs by model", "GPUs by health state", "Fleet utilisation: SM active (GPU_UTIL dashed)",
        "GPU-hours in range: busy vs idle", "Estimated cost and waste in range", "Firing alerts by failure mode"]


def test_busy_and_idle_hours_split_at_the_idle_threshold(built):
    hours = by_title(fleet_panels(built.ctx))["GPU-hours in range: busy vs idle"]
    idle = built.ctx.hand_made("fleet.gpu_hours").value("idle_util")
    ops = []
    for t in hours.targets:
        (c,) = tree.comparisons(grafana_free(t.expr))
        assert c.bool and tree.number(c.rhs) == idle
        assert tree.recorded_names(c.lhs) == (built.ctx.named("util_per_gpu"),)
        ops.append(c.op)
    assert ops == [">", "<="]
    assert [t.refId for t in hours.targets] == ["A", "B"]


def test_a_threshold_override_moves_the_split(built):
    fm = built.ctx.hand_made("fleet.gpu_hours").fm
    name = dict(built.catalog.hand_made("fleet.gpu_hours").thresholds)["idle_util"]
    settings = replace(built.settings, failure_modes=((fm.id, FailureModeSettings(thresholds=((name, 0.2),))),))
    hours = by_title(fleet_panels(with_context(built, settings=settings)))["GPU-hours in range: busy vs idle"]
    assert {tree.number(tree.comparisons(grafana_free(t.expr))[0].rhs) for t in hours.targets} == {0.2}


def test_prices_the_first_matching_model_pattern_then_the_default(built):
    dashboards = replace(built.settings.dashboards, prices=(("H100.*", 4.5), ("A100", 1.5)), price_default=2.0)
    ctx = with_context(built, settings=replace(built.settings, dashboards=dashboards))
    expr = priced(ctx, lambda matcher: f"count({{{matcher}}})" if matcher else "count(up)")
    top = tree.unwrap(tree.parse(expr))
    terms = []
    while str(getattr(top, "op", "")) == "or":  # left-associative: ((a or b) or c)
        terms.insert(0, tree.unwrap(top.rhs))
        top = tree.unwrap(top.lhs)
    terms.insert(0, top)
    assert [tree.number(t.rhs) for t in terms] == [4.5, 1.5, 2.0]
    assert [tree.selectors(t)[0].matchers for t in terms[:2]] == [(("modelName", "=~", "H100.*"),),
                                                                   (("modelName", "=~", "A100"),)]
    assert tree.selectors(terms[2])[0].name == "up"


def test_a_panel_the_catalog_does_not_declare_is_not_drawn(built):
    kept = tuple(p for p in built.catalog.hand_made_panels if p.panel not in ("fleet.cost", "fleet.health_state"))
    ctx = with_context(built, catalog=replace(built.catalog, hand_made_panels=kept))
    titles = [p.title for p in fleet_panels(ctx)]
    assert "Estimated cost and waste in range" not in titles and "GPUs by health state" not in titles
    assert len(titles) == 4


def test_the_firing_alerts_panel_counts_every_failure_mode(built):
    (target,) = by_title(fleet_panels(built.ctx))["Firing alerts by failure mode"].targets
    assert tree.grouping(target.expr) == (("by", ("failure_mode",)),)
    (alerts,) = tree.selectors(target.expr)
    modes = dict((label, value) for label, op, value in alerts.matchers if op == "=~")["failure_mode"]
    assert modes.split("|") == [fm.id for fm in built.catalog.failure_modes]
