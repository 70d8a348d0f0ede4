"""Issue 37 item 7, pictures: no Grafana server runs here, so scripts/dashboard_pictures.py (make pictures) draws
each rendered dashboard's layout with matplotlib, filled with what its queries return over a scenario replayed
through promtool, and docs/dashboards.md shows them.

Here: the docs show a current picture of every dashboard; the queries are asked of the real promtool and its
answers read back by panel, target and time; a collapsed row opens in place; the same answers draw the same bytes.
The full replay (a few minutes) is make pictures', not make test's.
"""
import json
import re
import struct
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from dashboard_views import DASHBOARD_IDS, bundled_plan, dashboards_of
from rulesgen.render import yamltext

sys.path.insert(0, str(ROOT / "scripts"))
import dashboard_drawing as drawing  # noqa: E402
import dashboard_pictures as pictures  # noqa: E402

DOCS = ROOT / "docs" / "dashboards.md"
FAULTS = {e["failure_mode"] for e in yamltext.load(  # libyaml: read at every collection (0.05 s, not 0.5)
    (ROOT / "fixtures" / "scenarios" / f"{pictures.SCENARIO}.yaml").read_text())["expect"]}


@pytest.fixture(scope="module")
def dashboards():
    return {path.split("/")[1].removesuffix(".json"): d for path, d in dashboards_of(bundled_plan()).items()}


def png_size(path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("dashboard_id", DASHBOARD_IDS)
def test_the_docs_show_a_picture_of_every_dashboard_as_laid_out_now(dashboards, dashboard_id):
    """docs/dashboards.md shows docs/pictures/<id>.png; the picture is as tall as the dashboard's grid is now (with
    the scenario's fault row open), so a layout change without `make pictures` fails here."""
    picture = ROOT / "docs" / "pictures" / f"{dashboard_id}.png"
    assert f"](pictures/{dashboard_id}.png)" in DOCS.read_text()
    width, height = png_size(picture)
    d = dashboards[dashboard_id]
    opened = pictures.fault_rows(d, FAULTS)
    rows = max(y + p["gridPos"]["h"] for p, y in drawing.layout(d, opened)) + 3
    assert (width, height) == (round(drawing.WIDTH_IN * drawing.DPI), round(rows * drawing.UNIT_IN * drawing.DPI))
    assert (drawing.UNIT_IN * drawing.DPI).is_integer()  # matplotlib truncates a fractional height


def test_the_docs_say_no_grafana_server_runs_here():
    assert re.search(r"[Nn]o Grafana server runs here", DOCS.read_text())


def test_the_fault_row_opens_in_place_and_moves_the_rest_down(dashboards):
    health = dashboards["gpu-health"]
    (ecc,) = pictures.fault_rows(health, {"ecc_uncorrectable"})
    row = next(p for p in health["panels"] if p["id"] == ecc)
    placed = drawing.layout(health, {ecc})
    ys = {p["id"]: y for p, y in placed}
    inner = [q["id"] for q in row["panels"]]
    assert min(ys[i] for i in inner) == ys[ecc] + 1
    after = next(p for p in health["panels"] if p["gridPos"]["y"] > row["gridPos"]["y"])
    assert ys[after["id"]] == after["gridPos"]["y"] + max(q["gridPos"]["y"] + q["gridPos"]["h"] for q in row["panels"]) \
        - min(q["gridPos"]["y"] for q in row["panels"])
    assert [p["id"] for p, _ in drawing.layout(health, set())] == [p["id"] for p in health["panels"]]


def test_promtool_answers_are_read_back_by_panel_target_and_time(promtool, dashboards, tmp_path):
    """The on-call dashboard's exporter panel asked at the end of a planted 10 minutes: promtool's answers, read
    from its `got:` lines, carry the dashboard, panel, target, time and labels."""
    panel = next(p for p in dashboards["gpu-on-call"]["panels"] if p.get("title") == "dcgm-exporter targets")
    tests = pictures.queries({"gpu-on-call": [panel]}, 600)
    assert {t["eval_time"] for t in tests} == {"10m"} and len(tests) == len(panel["targets"])
    doc = {"rule_files": [], "evaluation_interval": "1m", "tests": [{"interval": "1m", "input_series": [
        {"series": 'up{job="dcgm-exporter", instance="a:9400", cluster="c"}', "values": "1x10"},
        {"series": 'up{job="dcgm-exporter", instance="b:9400", cluster="c"}', "values": "0x10"},
        {"series": 'fleet:dcgm_exporter_targets:count{cluster="c"}', "values": "2x10"}],
        "promql_expr_test": tests}]}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(doc))
    proc = subprocess.run([promtool, "test", "rules", str(tmp_path / "t.yaml")], capture_output=True, text=True)
    got = {(a.dashboard, a.panel, a.ref, a.at): a.value for a in pictures.answers(proc.stdout + proc.stderr)}
    assert got == {("gpu-on-call", panel["id"], "A", 600): 2.0, ("gpu-on-call", panel["id"], "B", 600): 1.0,
                   ("gpu-on-call", panel["id"], "C", 600): 0.0}


def test_a_time_series_is_asked_along_the_replay_and_the_variables_at_all(dashboards):
    panel = next(p for p in dashboards["gpu-executive"]["panels"] if p.get("title") == "GPUs reporting by model")
    tests = pictures.queries({"gpu-executive": [panel]}, 6 * 3600)
    assert len(tests) == pictures.PICTURE_POINTS and tests[-1]["eval_time"] == "6h"
    assert all("$" not in t["expr"] and '=~".*"' in t["expr"] for t in tests)


def test_the_same_answers_draw_the_same_bytes(dashboards, tmp_path):
    scenario = type("Scenario", (), {"name": "planted", "duration": 3600})()
    on_call = dashboards["gpu-on-call"]
    table = next(p for p in on_call["panels"] if p.get("title") == "Alerts firing now")
    labels = (("Hostname", "n1"), ("alertname", "GPUECCUncorrectable"), ("failure_mode", "ecc_uncorrectable"),
              ("gpu", "3"), ("priority", "1"), ("runbook", "ecc-uncorrectable"), ("workload", "llm"))
    answers = [pictures.Answer("gpu-on-call", table["id"], "A", 3600, labels, 1_800_000.0),
               pictures.Answer("gpu-on-call", table["id"] + 1, "A", 1800, (("failure_mode", "ecc_uncorrectable"),), 1.0)]
    for name in ("a.png", "b.png"):
        drawing.draw_dashboard(on_call, set(), answers, scenario, tmp_path / name)
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert drawing.fmt(0.87, "percentunit") == "87%" and drawing.fmt(1.41e9, "hertz") == "1.41 GHz"
    assert json.dumps(drawing.fmt(1800, "dateTimeAsIso")) == '"00:30"'
