"""rulesgen/builders/dashboards/baselines.py: one panel per baseline signal (now, history, peers, alert edge) and
the baseline_deviation row, from the bundled catalog built in-process; queries checked on their parsed trees."""
from dataclasses import replace

import promql_parser as pp
import pytest

from rulesgen.builders.dashboards.baselines import baseline_mode_panels, baseline_panels
from rulesgen.model import conventions, grafana_units
from rulesgen.promql import tree
from unit_build import bundled, with_context


@pytest.fixture(scope="module")
def built():
    return bundled()


def test_one_panel_per_baseline_signal_with_an_edge_only_when_it_alerts(built):
    panels = baseline_panels(built.ctx)
    signals = built.catalog.baselines
    assert len(panels) == len(signals) and len(signals) >= 2
    for panel, b in zip(panels, signals):
        assert panel.unit == grafana_units.display(b.unit)[0]  # MHz is drawn in hertz
        assert [t.refId for t in panel.targets] == ["A", "B", "C", "D"][:4 if b.alert else 3]
        # every query reads this signal's series only
        for t in panel.targets:
            assert ("signal", "=", b.signal) in {m for s in tree.selectors(t.expr) for m in s.matchers}


def test_the_alert_edge_is_mean_plus_z_times_the_floored_spread(built):
    b = next(b for b in built.catalog.baselines if b.alert and b.direction == "up")
    panel = baseline_panels(built.ctx)[list(built.catalog.baselines).index(b)]
    edge = panel.targets[3].expr
    z = built.ctx.hand_made("baselines.signals").value("alert_edge")
    numbers = {tree.number(e) for e in tree.nodes(edge)} - {None}
    assert {z, b.floor.value} <= numbers
    assert {conventions.BASELINE_HISTORY_MEAN, conventions.BASELINE_HISTORY_STDDEV} <= set(tree.recorded_names(edge))
    assert "clamp_min" in {e.func.name for e in tree.nodes(edge) if isinstance(e, pp.Call)}


def test_the_node_peers_median_is_read_per_node(built):
    peers = baseline_panels(built.ctx)[0].targets[2].expr
    (s,) = tree.selectors(peers)
    assert s.name == conventions.baseline_peers("node", "median")


def test_the_deviation_row_draws_each_alerting_signal_against_its_edges(built):
    reads = built.ctx.hand_made("rows.baseline_deviation")
    history, peers = baseline_mode_panels(built.ctx, reads)
    alerting = [b for b in built.catalog.baselines if b.alert]
    assert len(history.targets) == len(peers.targets) == len(alerting)
    assert [t.refId for t in history.targets] == [chr(ord("A") + i) for i in range(len(alerting))]
    assert history.thresholds[-1]["value"] == reads.value("history_edge")
    assert peers.thresholds[-1]["value"] == reads.value("peer_edge")


def test_undeclared_in_the_catalog_no_panel_is_drawn(built):
    kept = tuple(p for p in built.catalog.hand_made_panels if p.panel != "baselines.signals")
    assert baseline_panels(with_context(built, catalog=replace(built.catalog, hand_made_panels=kept))) == []
