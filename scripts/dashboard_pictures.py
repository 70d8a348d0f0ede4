"""Pictures of the rendered dashboards (issue 37 item 7): no Grafana server runs here, so each dashboard's layout
is drawn with matplotlib -- its rows, panel titles, units, thresholds -- filled with what its queries return over a
scenario replayed through the real promtool (the rendered rules, the scenario's input series, as `rulesgen replay`
runs them). The open rows are drawn with their panels; a collapsed row is a bar, except the row of the scenario's
fault, drawn open as an alert's dashboard_url opens it.

    .venv/bin/python scripts/dashboard_pictures.py [--scenario NAME] [--out docs/pictures]   (make pictures)

How a query is asked: every panel target becomes one promtool promql_expr_test per time (the instant panels at the
end of the replay, the time series at PICTURE_POINTS times), the dashboard variables at All, Grafana's $__range the
replay's length, its panel and time carried in labels; promtool prints every answer as a failed test's `got:`
line, read back here. Drawing: scripts/dashboard_drawing.py."""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]  # rulesgen from this checkout; dashboard_drawing

from dashboard_drawing import draw_dashboard  # noqa: E402 (scripts/, beside this file)

from rulesgen import artifacts as arts  # noqa: E402
from rulesgen.builders.promtool_tests import document  # noqa: E402
from rulesgen.catalog import bundled_catalog_dir  # noqa: E402
from rulesgen.durations import format_duration  # noqa: E402
from rulesgen.engines.replay import group_order, run_test  # noqa: E402
from rulesgen.load.scenarios import load_scenarios  # noqa: E402

SCENARIO = "ecc-uncorrectable-dbe"  # a fault on one GPU of a busy two-node fleet: rows in every firing table
PICTURE_POINTS = 48  # times a time-series panel is asked at
PANEL, AT = "rg_panel", "rg_at"
_GOT = re.compile(r"^\s*got:\s*(.*)$")
_SAMPLE = re.compile(r'\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}\s+([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|NaN|Inf))')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Answer:
    """One series a panel's target returned at one time (seconds from the start of the replay)."""
    dashboard: str
    panel: int
    ref: str
    at: int
    labels: tuple[tuple[str, str], ...]
    value: float


def grafana_free(expr: str, duration: int, step: int) -> str:
    """The query as Grafana would send it with every variable at All over a range as long as the replay."""
    expr = re.sub(r'=~"\$\{?\w+\}?"', '=~".*"', expr)
    for macro, value in (("$__rate_interval", "5m"), ("$__interval_ms", str(step * 1000)),
                         ("$__interval", format_duration(step)), ("$__range_s", str(duration)),
                         ("$__range", format_duration(duration))):
        expr = expr.replace(macro, value)
    return expr


def shown_panels(dashboard: dict, open_rows: set[int]) -> list[dict]:
    """The panels Grafana draws: those of open rows, and of the collapsed rows in open_rows."""
    out = []
    for p in dashboard["panels"]:
        if p["type"] != "row":
            out.append(p)
        elif p["id"] in open_rows:
            out.extend(p.get("panels", []))
    return out


def fault_rows(dashboard: dict, modes: set[str]) -> set[int]:
    """The collapsed rows whose annotations show the alerts of modes (the row an alert's dashboard_url opens)."""
    ids = set()
    for a in dashboard.get("annotations", {}).get("list", []):
        m = re.search(r'failure_mode="(\w+)"', a.get("expr", ""))
        if m and m.group(1) in modes:
            ids |= {(i // 100) * 100 for i in a.get("filter", {}).get("ids", [])}
    return ids


def queries(shown: dict[str, list[dict]], duration: int) -> list[dict]:
    """The promql_expr_tests asking every target of the shown panels (by dashboard id): instant ones at the end,
    the others at PICTURE_POINTS times from a step in."""
    step = max(60, duration // PICTURE_POINTS)
    tests = []
    for dashboard_id, p in ((d, p) for d, panels in sorted(shown.items()) for p in panels):
        for t in p.get("targets", []):
            expr = grafana_free(t["expr"], duration, step)
            times = [duration] if t.get("instant") else range(step, duration + 1, step)
            for at in times:
                tagged = f'label_replace(label_replace(({expr}), "{PANEL}", "{dashboard_id}:{p["id"]}.{t["refId"]}", "", ""), "{AT}", "{at}", "", "")'
                tests.append({"expr": tagged, "eval_time": format_duration(at), "exp_samples": []})
    return tests


def answers(output: str) -> list[Answer]:
    """Every sample of promtool's `got:` lines, by the panel, target and time in its labels."""
    out = []
    for line in output.splitlines():
        m = _GOT.match(line)
        for body, value in _SAMPLE.findall(m.group(1)) if m else ():
            labels = {k: bytes(v, "utf-8").decode("unicode_escape") for k, v in _LABEL.findall(body)}
            dashboard, tag = labels.pop(PANEL).split(":")
            panel, ref = tag.split(".")
            at = int(labels.pop(AT))
            out.append(Answer(dashboard, int(panel), ref, at, tuple(sorted(labels.items())), float(value)))
    return out


def replayed(scenario, rule_paths: list[Path], shown: dict[str, list[dict]], workdir: Path) -> list[Answer]:
    """One promtool run of the scenario answering every shown panel's queries."""
    doc = document(scenario, [str(p) for p in rule_paths], group_order(rule_paths), queries(shown, scenario.duration))
    return answers(run_test(doc, workdir, "pictures"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default=SCENARIO, help="a scenario of fixtures/scenarios/ (its name)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "pictures"), help="where the PNGs go")
    parser.add_argument("--only", default=None, help="one dashboard id (gpu-on-call ...), for a quick look")
    args = parser.parse_args(argv)
    plan = arts.plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)
    modes = [fm.id for fm in plan.catalog.failure_modes]
    (scenario,) = arts.for_settings(load_scenarios(
        [ROOT / "fixtures" / "scenarios" / f"{args.scenario}.yaml"], modes,
        known_metrics={n for m in plan.catalog.metrics for n in m.names},
        job_metrics=plan.settings.job_metrics.names), plan.settings, plan.resolved)
    dashboards = {Path(a.path).stem: json.loads(a.text) for a in plan.artifacts
                  if a.path.startswith("dashboards/") and a.path.endswith(".json") and args.only in (None, Path(a.path).stem)}
    faults = {e.failure_mode for e in scenario.expect}
    opened = {d: fault_rows(dashboard, faults) for d, dashboard in dashboards.items()}
    shown = {d: shown_panels(dashboard, opened[d]) for d, dashboard in dashboards.items()}
    with tempfile.TemporaryDirectory(prefix="rulesgen-pictures-") as tmp:
        arts.write_all(Path(tmp), [a for a in plan.artifacts if a.path.startswith("alerts/")])
        rule_paths = [Path(tmp, f.path) for f in plan.rules.files]  # the dashboards' aggregates too
        got = replayed(scenario, rule_paths, shown, Path(tmp))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for dashboard_id, dashboard in sorted(dashboards.items()):
        target = out / f"{dashboard_id}.png"
        draw_dashboard(dashboard, opened[dashboard_id], [a for a in got if a.dashboard == dashboard_id], scenario, target)
        shown = target.relative_to(ROOT) if target.is_relative_to(ROOT) else target
        print(f"{shown}: {sum(a.dashboard == dashboard_id for a in got)} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
