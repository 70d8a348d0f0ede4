"""rulesgen/builders/dashboards/layout.py: Grafana's 24-column grid, two panels a line, a row header above."""
import pytest
from grafanalib.core import RowPanel, TimeSeries

from rulesgen.builders.dashboards.layout import PANEL_HEIGHT, ROW_HEIGHT, lay_out, row, section


def panels(n):
    return [TimeSeries(title=f"p{k}") for k in range(n)]


def grid(laid):
    return [(p.id, p.gridPos.x, p.gridPos.y, p.gridPos.w, p.gridPos.h) for p in laid]


def test_two_panels_a_line_with_consecutive_ids():
    laid, end = lay_out(panels(4), 10, 5)
    assert grid(laid) == [(10, 0, 5, 12, 8), (11, 12, 5, 12, 8), (12, 0, 13, 12, 8), (13, 12, 13, 12, 8)]
    assert end == 5 + 2 * PANEL_HEIGHT
    assert [p.title for p in laid] == ["p0", "p1", "p2", "p3"]


@pytest.mark.parametrize("n, last", [(1, (1, 0, 0, 24, 8)), (3, (3, 0, 8, 24, 8))])
def test_an_odd_last_panel_takes_the_full_width(n, last):
    laid, end = lay_out(panels(n), 1, 0)
    assert grid(laid)[-1] == last
    assert end == ((n + 1) // 2) * PANEL_HEIGHT


def test_no_panels_take_no_height():
    assert lay_out([], 1, 7) == ([], 7)


def test_a_row_header_spans_the_grid():
    r = row("Fleet", 3, 9)
    assert isinstance(r, RowPanel) and (r.title, r.id, r.collapsed) == ("Fleet", 3, False)
    assert (r.gridPos.x, r.gridPos.y, r.gridPos.w, r.gridPos.h) == (0, 9, 24, ROW_HEIGHT)


def test_a_section_is_its_row_then_its_panels_below_it():
    out, end = section("Overview", 100, panels(3), 20)
    assert isinstance(out[0], RowPanel) and (out[0].id, out[0].gridPos.y) == (100, 20)
    assert grid(out[1:]) == [(101, 0, 21, 12, 8), (102, 12, 21, 12, 8), (103, 0, 29, 24, 8)]
    assert end == 20 + ROW_HEIGHT + 2 * PANEL_HEIGHT
