"""A dashboard's layout drawn with matplotlib (scripts/dashboard_pictures.py asks the queries): Grafana's 24-column
grid as the JSON places it, each row as a bar with its title (a collapsed one with its panel count), each panel a
box with its title and unit, filled by its type -- a time series' lines, legend and threshold lines, a stat's or a
gauge's values, a table's rows (columns, renames and value mappings as its transformations and overrides say).

Deterministic as far as matplotlib goes: fixed size, fonts and dpi, series sorted, no timestamp in the file."""
from __future__ import annotations

import math
import re
import textwrap

WIDTH_IN, UNIT_IN, DPI = 18.0, 0.25, 80  # the figure's width, the height of one grid unit (Grafana: 30 px): 1440 px, 20 px
COLORS = ("#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9", "#705da0", "#508642",
          "#cca300", "#447ebc", "#c15c17")
THRESHOLD_COLORS = {"green": "#56a64b", "orange": "#ff9830", "red": "#e02f44", "yellow": "#fade2a"}
TABLE_ROWS = 7
MAX_LINES = 8


def fmt(value: float, unit: str) -> str:
    """A value in a Grafana unit, as its panel shows it (the units the rendered dashboards use)."""
    if value is None or math.isnan(value):
        return "-"
    if unit == "percentunit":
        return f"{value * 100:.0f}%" if abs(value) >= 0.1 else f"{value * 100:.1f}%"
    if unit == "celsius":
        return f"{value:.0f} °C"
    if unit == "watt":
        return f"{value:.0f} W"
    if unit == "hertz":
        return f"{value / 1e9:.2f} GHz" if value >= 1e9 else f"{value / 1e6:.0f} MHz"
    if unit == "Bps":
        return f"{value / 1e9:.1f} GB/s" if value >= 1e9 else f"{value / 1e6:.0f} MB/s"
    if unit in ("s", "m"):
        return f"{value:.3g} {unit}"
    if unit.startswith("currency"):
        return f"${value:,.2f}"
    if unit == "dateTimeAsIso":
        return f"{int(value) // 3600:02d}:{int(value) % 3600 // 60:02d}"
    if abs(value) >= 1000:
        return f"{value / 1000:.1f}K"
    return f"{value:.3g}"


def legend(fmt_string: str, labels: dict) -> str:
    text = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt_string or "").strip()
    return text or ", ".join(f"{k}={v}" for k, v in labels.items() if k != "__name__") or "value"


def layout(dashboard: dict, opened: set[int]) -> list[tuple[dict, int]]:
    """(panel, y) of what Grafana draws: the rows, the open rows' panels, and the panels of the collapsed rows in
    opened below their row, everything under them moved down by their height."""
    out, shift = [], 0
    for p in dashboard["panels"]:
        out.append((p, p["gridPos"]["y"] + shift))
        if p["type"] == "row" and p["id"] in opened and p.get("panels"):
            inner = p["panels"]
            top = min(q["gridPos"]["y"] for q in inner)
            for q in inner:
                out.append((q, p["gridPos"]["y"] + shift + 1 + q["gridPos"]["y"] - top))
            shift += max(q["gridPos"]["y"] + q["gridPos"]["h"] for q in inner) - top
    return out


def _pyplot():
    """matplotlib's pyplot on the Agg backend, imported when a picture is drawn: the tests import this module
    at every collection, and matplotlib takes longer to import than they take to read it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def draw_dashboard(dashboard: dict, opened: set[int], answers: list, scenario, out) -> None:
    """dashboard's picture at out: answers (scripts/dashboard_pictures.Answer) fill its panels."""
    plt = _pyplot()
    placed = layout(dashboard, opened)
    height = max(y + p["gridPos"]["h"] for p, y in placed) + 3
    fig = plt.figure(figsize=(WIDTH_IN, height * UNIT_IN), dpi=DPI)
    fig.patch.set_facecolor("#f4f5f5")
    by_panel: dict[int, list] = {}
    for a in answers:
        by_panel.setdefault(a.panel, []).append(a)
    title = (f"{dashboard['title']}  —  filled by replaying {scenario.name} ({scenario.duration // 3600} h) through "
             "promtool; variables at All; no Grafana")
    fig.text(0.005, 1 - 0.9 / height, title, fontsize=13, weight="bold", va="top")
    fig.text(0.005, 1 - 2.0 / height, textwrap.shorten(dashboard.get("description", ""), 240), fontsize=9,
             color="#555", va="top")
    for p, y in placed:
        box = _box(p["gridPos"], y + 3, height)
        if p["type"] == "row":
            _row(fig, p, box, p["id"] in opened)
        else:
            _panel(fig, p, box, sorted(by_panel.get(p["id"], []), key=lambda a: (a.ref, a.labels, a.at)), scenario)
    fig.savefig(out, dpi=DPI, metadata={"Software": None})
    plt.close(fig)


def _box(grid: dict, y: int, height: int) -> tuple[float, float, float, float]:
    """Figure coordinates (left, bottom, width, height) of a grid position, a small gap around it."""
    gap = 0.003
    return (grid["x"] / 24 + gap, 1 - (y + grid["h"]) / height + gap * 2, grid["w"] / 24 - 2 * gap,
            grid["h"] / height - gap * 4)


def _row(fig, p: dict, box, opened: bool) -> None:
    left, bottom, width, h = box
    marker = "▾" if not p.get("collapsed") or opened else "▸"
    n = len(p.get("panels", []))
    count = f"   ({n} panel{'' if n == 1 else 's'}, collapsed)" if p.get("collapsed") and not opened else ""
    fig.text(left, bottom + h / 2, f"{marker} {p['title']}{count}", fontsize=11, weight="bold", va="center",
             color="#1f60c4" if p.get("collapsed") and not opened else "#222")
    from matplotlib.lines import Line2D
    fig.add_artist(Line2D([left, left + width], [bottom, bottom], color="#ccc", linewidth=0.8))


def _frame(fig, p: dict, box):
    from matplotlib.patches import FancyBboxPatch
    left, bottom, width, h = box
    fig.add_artist(FancyBboxPatch((left, bottom), width, h, boxstyle="square,pad=0", facecolor="white",
                                  edgecolor="#d0d0d0", linewidth=0.8, transform=fig.transFigure, zorder=-1))
    unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
    title = textwrap.shorten(p["title"], int(width * WIDTH_IN * 10))
    fig.text(left + 0.004, bottom + h - 0.004, title, fontsize=9, weight="bold", va="top")
    fig.text(left + width - 0.004, bottom + h - 0.004, f"[{p['type']} · {unit}]", fontsize=7, color="#888",
             va="top", ha="right")
    return fig.add_axes((left + 0.004, bottom + 0.004, width - 0.008, h - 0.03))


def _panel(fig, p: dict, box, got: list, scenario) -> None:
    ax = _frame(fig, p, box)
    draw = {"timeseries": _timeseries, "stat": _stat, "gauge": _gauge, "table": _table}.get(p["type"], _timeseries)
    if not got:
        ax.axis("off")
        no_value = p.get("fieldConfig", {}).get("defaults", {}).get("noValue")
        ax.text(0.5, 0.5, no_value or "No data", ha="center", va="center", fontsize=11, color="#999",
                transform=ax.transAxes)
        return
    draw(ax, p, got, scenario)


def _series(got: list) -> dict:
    out: dict = {}
    for a in got:
        out.setdefault((a.ref, a.labels), []).append((a.at, a.value))
    return out


def _thresholds(p: dict) -> list[tuple[float, str]]:
    steps = p.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps", [])
    return [(s["value"], s["color"]) for s in steps if isinstance(s.get("value"), (int, float))]


def _timeseries(ax, p: dict, got: list, scenario) -> None:
    from matplotlib.ticker import FuncFormatter
    unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit", "short")
    legends = {t["refId"]: t.get("legendFormat", "") for t in p.get("targets", [])}
    dashed = {o["matcher"]["options"] for o in p.get("fieldConfig", {}).get("overrides", [])
              if o.get("matcher", {}).get("id") == "byFrameRefID"}
    series = sorted(_series(got).items())
    for i, ((ref, labels), points) in enumerate(series[:MAX_LINES]):
        xs, ys = zip(*sorted(points))
        ax.plot([x / 3600 for x in xs], ys, color=COLORS[i % len(COLORS)], linewidth=1.3, marker="." if len(xs) < 4 else None,
                linestyle="--" if ref in dashed else "-", label=textwrap.shorten(legend(legends.get(ref), dict(labels)), 38))
    for value, color in _thresholds(p):
        ax.axhline(value, color=THRESHOLD_COLORS.get(color, color), linestyle="--", linewidth=1)
    ax.set_xlim(0, scenario.duration / 3600)
    ax.tick_params(labelsize=7)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v, unit)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0f}h"))
    ax.grid(alpha=0.25)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    more = f" (+{len(series) - MAX_LINES} more)" if len(series) > MAX_LINES else ""
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False,
              title=f"{len(series)} series{more}" if more else None, title_fontsize=6.5)
    ax.set_position(_shrunk(ax.get_position()))


def _shrunk(pos):
    """Room on the right for the legend, as Grafana's legend table on the right takes it."""
    return (pos.x0 + 0.03, pos.y0 + 0.022, pos.width * 0.62 - 0.03, pos.height - 0.024)


def _last(got: list) -> list:
    end = max(a.at for a in got)
    return [a for a in got if a.at == end]


def _stat(ax, p: dict, got: list, scenario) -> None:
    ax.axis("off")
    unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit", "short")
    legends = {t["refId"]: t.get("legendFormat", "") for t in p.get("targets", [])}
    values = sorted(_last(got), key=lambda a: ([t["refId"] for t in p["targets"]].index(a.ref), a.labels))[:6]
    for i, a in enumerate(values):
        x = (i + 0.5) / len(values)
        ax.text(x, 0.55, fmt(a.value, unit), ha="center", va="center", fontsize=20, weight="bold", color="#3d71d9",
                transform=ax.transAxes)
        ax.text(x, 0.2, textwrap.shorten(legend(legends.get(a.ref), dict(a.labels)), 28), ha="center", va="center",
                fontsize=8, color="#444", transform=ax.transAxes)


def _gauge(ax, p: dict, got: list, scenario) -> None:
    from matplotlib.patches import Wedge
    ax.axis("off")
    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-0.5, 1.2)
    ax.set_aspect("equal")
    a = _last(got)[0]
    share = min(max(a.value, 0.0), 1.0)
    ax.add_patch(Wedge((0, 0), 1, 0, 180, width=0.25, facecolor="#e6e6e6"))
    ax.add_patch(Wedge((0, 0), 1, 180 - 180 * share, 180, width=0.25, facecolor="#3d71d9"))
    ax.text(0, 0.15, fmt(a.value, "percentunit"), ha="center", va="center", fontsize=20, weight="bold")


def _table(ax, p: dict, got: list, scenario) -> None:
    """The rows as Grafana's table shows them after merge and organize: a row per label set (targets merged on
    their common labels), the organize step's order, renames and hidden columns, value mappings."""
    ax.axis("off")
    organize = next((t["options"] for t in p.get("transformations", []) if t["id"] == "organize"), {})
    hidden = set(organize.get("excludeByName", {})) | _hidden(p)
    rename = organize.get("renameByName", {})
    rows: dict = {}
    for a in _last(got):
        key = tuple((k, v) for k, v in a.labels if k != "__name__")
        values = rows.setdefault(key, {})
        values[f"Value #{a.ref}" if len(p["targets"]) > 1 else "Value"] = a.value
    labels = sorted({k for key in rows for k, _ in key})
    values = sorted({v for r in rows.values() for v in r})
    place = organize.get("indexByName", {})
    columns = sorted(labels + values, key=lambda c: (place.get(c, 99), c in values, c))
    columns = [c for c in columns if c not in hidden and rename.get(c) not in hidden]
    mappings = _mappings(p)
    units = _column_units(p)
    unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit", "short")
    table = []
    for key, values in rows.items():
        labels = dict(key)
        table.append([_cell(c, labels, values, rename, mappings, units, unit) for c in columns])
    order = _sort(p, [rename.get(c, c) for c in columns])
    if order is not None:
        index, desc = order
        table.sort(key=lambda r: _sortable(r[index]), reverse=desc)
    shown = table[:TABLE_ROWS]
    cells = ax.table(cellText=shown or [["" for _ in columns]], colLabels=[rename.get(c, c) for c in columns],
                     loc="upper center", cellLoc="left", colLoc="left")
    cells.auto_set_font_size(False)
    cells.set_fontsize(7)
    cells.scale(1, 1.15)
    for (r, _), cell in cells.get_celld().items():
        cell.set_edgecolor("#e0e0e0")
        if r == 0:
            cell.set_facecolor("#f0f0f0")
            cell.set_text_props(weight="bold")
    if len(table) > TABLE_ROWS:
        ax.text(0.99, 0.01, f"{len(table)} rows, first {TABLE_ROWS} shown", ha="right", va="bottom", fontsize=7,
                color="#888", transform=ax.transAxes)


def _hidden(p: dict) -> set[str]:
    return {o["matcher"]["options"] for o in p.get("fieldConfig", {}).get("overrides", [])
            for prop in o.get("properties", []) if prop.get("id") == "custom.hidden" and prop.get("value")}


def _mappings(p: dict) -> dict[str, dict]:
    out = {}
    for o in p.get("fieldConfig", {}).get("overrides", []):
        for prop in o.get("properties", []):
            if prop.get("id") == "mappings":
                out[o["matcher"]["options"]] = {k: v["text"] for m in prop["value"] for k, v in m["options"].items()}
    return out


def _column_units(p: dict) -> dict[str, str]:
    return {o["matcher"]["options"]: prop["value"] for o in p.get("fieldConfig", {}).get("overrides", [])
            for prop in o.get("properties", []) if prop.get("id") == "unit"}


def _cell(column: str, labels: dict, values: dict, rename: dict, mappings: dict, units: dict, unit: str) -> str:
    shown = rename.get(column, column)
    if column in values:
        value = values[column]
        if units.get(shown) == "dateTimeAsIso":  # the replay starts at 0: its time, as hh:mm from the start
            return "at " + fmt(value / 1000, "dateTimeAsIso")
        return fmt(value, units.get(shown, unit))
    text = labels.get(column, "")
    return mappings.get(shown, {}).get(text, text)


def _sort(p: dict, names: list[str]) -> tuple[int, bool] | None:
    for s in p.get("options", {}).get("sortBy", []) or []:
        if s.get("displayName") in names:
            return names.index(s["displayName"]), bool(s.get("desc"))
    return None


def _sortable(text: str):
    number = re.match(r"[$]?([-0-9.,]+)", text)
    severity = ("critical", "warning", "info")
    if text in severity:
        return (0, severity.index(text), "")
    return (1, float(number.group(1).replace(",", "")), "") if number else (2, 0.0, text)

