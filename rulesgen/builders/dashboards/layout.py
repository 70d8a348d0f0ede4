"""Where panels go on Grafana's 24-column grid: a row header, then two panels per line."""
from __future__ import annotations

import attr
from grafanalib.core import GridPos, Panel, RowPanel

ROW_HEIGHT, PANEL_HEIGHT = 1, 8


def lay_out(panels: list[Panel], first_id: int, y: int) -> tuple[list[Panel], int]:
    """Two panels per line (an odd last one takes the full width); ids first_id, first_id + 1 ..."""
    out = []
    for k, p in enumerate(panels):
        full = k == len(panels) - 1 and k % 2 == 0
        out.append(attr.evolve(p, id=first_id + k,
                               gridPos=GridPos(h=PANEL_HEIGHT, w=24 if full else 12, x=0 if full or k % 2 == 0 else 12,
                                               y=y + (k // 2) * PANEL_HEIGHT)))
    return out, y + ((len(panels) + 1) // 2) * PANEL_HEIGHT


def row(title: str, panel_id: int, y: int, collapsed: bool = False, panels=()) -> RowPanel:
    return RowPanel(title=title, id=panel_id, gridPos=GridPos(h=ROW_HEIGHT, w=24, x=0, y=y), collapsed=collapsed,
                    panels=list(panels))


def section(title: str, row_id: int, panels: list[Panel], y: int) -> tuple[list[Panel], int]:
    """A row with its panels below it, from height y; returns the panels and the height after them."""
    laid, end = lay_out(panels, row_id + 1, y + ROW_HEIGHT)
    return [row(title, row_id, y), *laid], end


def collapsed_section(title: str, row_id: int, panels: list[Panel], y: int) -> tuple[list[Panel], int]:
    """A collapsed row at height y holding its panels (Grafana keeps a collapsed row's panels in the row's
    `panels`, laid out as they stand when it opens); returns [the row] and the height after it. An alert's
    viewPanel link opens a panel of a collapsed row (Grafana >= 7.0.3, grafana/grafana#25316)."""
    laid, _ = lay_out(panels, row_id + 1, y + ROW_HEIGHT)
    return [row(title, row_id, y, collapsed=True, panels=laid)], y + ROW_HEIGHT


def flattened(panels: list[Panel]) -> list[Panel]:
    """The panels with those of collapsed rows after their row."""
    return [q for p in panels for q in (p, *(p.panels if isinstance(p, RowPanel) else ()))]
