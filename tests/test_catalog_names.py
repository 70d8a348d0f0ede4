"""Every catalog name the Python code or a hand-made panel reads is checked when the catalog loads (issue 15,
item 3): catalog/dashboards.yaml declares the hand-made dashboard panels and the failure modes and thresholds
they read, and the baseline alerts' failure mode is checked against baselines.yaml. A renamed failure mode
or threshold is a load error at the line that names it, never a panel drawn empty or with a stale value."""
import ast
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, edit, errors_of
from rulesgen.artifacts import load_inputs, plan
from rulesgen.builders.dashboards import build_dashboards
from rulesgen.builders.dashboards.chapters import SEPARATOR
from rulesgen.builders.dashboards.context import Context
from rulesgen.model.panels import PANELS, ROW
from rulesgen.builders.dashboards.rows import HAND_MADE_ROWS
from rulesgen.builders.rules import build_rules
from rulesgen.catalog import bundled_catalog_dir, load_catalog

DASHBOARDS_PACKAGE = ROOT / "rulesgen/builders/dashboards"
# The modules that draw the hand-made panels (prose.py and reading.py only word and read the alerts).
HAND_MADE_MODULES = ("baselines.py", "context.py", "fleet.py", "job_signals.py", "jobs.py", "panels.py", "rows.py",
                     "__init__.py", "../../model/panels.py")


def line_of(path: Path, text: str, nth: int = 0) -> int:
    """1-based line of the nth line of path that starts with text (after indentation)."""
    return [i for i, line in enumerate(path.read_text().splitlines(), 1) if line.strip().startswith(text)][nth]


@pytest.fixture
def bundled_copy(tmp_path) -> Path:
    d = tmp_path / "catalog"
    shutil.copytree(bundled_catalog_dir(), d)
    return d


def test_renamed_failure_mode_is_a_load_error_at_each_dashboards_line(bundled_copy):
    dash = bundled_copy / "dashboards.yaml"
    edit(bundled_copy / "failure_modes.yaml", "  - id: gpu_idle_allocated\n", "  - id: idle_gpu_allocated\n")
    expected = [
        f"{dash}:{line_of(dash, 'failure_mode: gpu_idle_allocated', n)}:5: error[unknown-failure-mode]: dashboards.yaml: "
        f"panel {panel} reads failure mode 'gpu_idle_allocated': not in failure_modes.yaml (did you mean 'idle_gpu_allocated'?)"
        for n, panel in enumerate(("fleet.gpu_hours", "fleet.cost", "jobs.pods_gpus"))]
    assert errors_of(load_catalog, bundled_copy) == expected
    assert len({e.split(":")[1] for e in expected}) == 3  # three lines, one per panel


def test_renamed_threshold_is_a_load_error_at_the_dashboards_line(bundled_copy):
    dash = bundled_copy / "dashboards.yaml"
    edit(bundled_copy / "failure_modes.yaml", "      - name: clock_ratio\n", "      - name: sm_clock_ratio\n")
    line = line_of(dash, "thresholds: {straggler_below: clock_ratio}")
    assert errors_of(load_catalog, bundled_copy) == [
        f"{dash}:{line}:18: error[unknown-threshold]: dashboards.yaml: panel jobs.rank_clock_spread reads threshold "
        "'clock_ratio' of failure mode straggler: no such threshold (did you mean 'sm_clock_ratio'?) "
        "(known: sm_clock_ratio)",
    ]


def test_unknown_panel_and_roles_the_builder_does_not_draw(bundled_copy):
    dash = bundled_copy / "dashboards.yaml"
    edit(dash, "  - panel: fleet.cost\n", "  - panel: fleet.costs\n")
    edit(dash, "thresholds: {straggler_below: clock_ratio}", "thresholds: {straggler: clock_ratio}")
    edit(dash, "  - panel: jobs.pods_gpus\n", "  - panel: jobs.pods_gpus\n    alerts_of: [xid_error]\n")
    cost, spread = line_of(dash, "- panel: fleet.costs"), line_of(dash, "thresholds: {straggler: clock_ratio}")
    pods = line_of(dash, "alerts_of: [xid_error]")
    assert errors_of(load_catalog, bundled_copy) == [
        f"{dash}:{cost}:5: error[unknown-panel]: dashboards.yaml: rulesgen has no hand-made panel 'fleet.costs' "
        f"(did you mean 'fleet.cost'?) (known: {', '.join(PANELS)})",
        f"{dash}:{pods}:5: error[unknown-key]: dashboards.yaml panel jobs.pods_gpus: unknown key 'alerts_of'",
        f"{dash}:{spread}:17: error[missing-key]: panel jobs.rank_clock_spread thresholds: missing required key "
        "'straggler_below'",
        f"{dash}:{spread}:18: error[unknown-key]: panel jobs.rank_clock_spread thresholds: unknown key 'straggler'"
        " (did you mean 'straggler_below'?)",
        f"{dash}:{line_of(dash, 'fleet.cost:')}:3: error[unused-text]: dashboards.yaml texts: fleet.cost is the text "
        "of a panel this file does not declare (panels:); it is drawn nowhere",
    ]


def test_minimal_catalog_renders_and_draws_only_the_declared_hand_made_panels(minimal_catalog):
    def fleet_titles() -> list[str]:
        artifacts = plan(minimal_catalog, None, None).artifacts
        fleet = json.loads(next(a.text for a in artifacts if a.path == "dashboards/gpu-fleet-overview.json"))
        return [p["title"].split(SEPARATOR)[0] for p in fleet["panels"]]

    # No fleet:dcgm_gpus:count (role fleet_gpus) in the minimal catalog: no GPU count, never a query of nothing.
    assert fleet_titles() == ["Fleet", "Firing alerts by failure mode", "Alerts firing now"]
    (minimal_catalog / "dashboards.yaml").write_text("panels:\n  - panel: fleet.health_state\n    failure_mode: hot_gpu\n")
    signals = minimal_catalog / "signals.yaml"
    assert errors_of(load_catalog, minimal_catalog) == [
        f"{signals}:1:1: error[missing-name]: signals.yaml: hand-made panel fleet.health_state (dashboards.yaml line 2) "
        "reads the signal of role 'fleet_gpus' (GPUs reporting per cluster and model: the fleet dashboard's GPU count "
        "(drawn when defined)): no signal 'fleet:dcgm_gpus:count' in signals.yaml; define it, or name another under "
        "`roles:` (fleet_gpus: NAME)"]
    with signals.open("a") as out:
        out.write("  - record: fleet:dcgm_gpus:count\n    unit: short\n    description: GPUs reporting\n"
                  "    expr: count by ([[ fleet ]], modelName) (gpu:dcgm_reporting:timestamp)\n")
    assert fleet_titles() == ["Fleet", "GPUs by model", "GPUs by health state", "Firing alerts by failure mode",
                              "Alerts firing now"]


def test_bundled_catalog_declares_every_hand_made_panel_and_each_is_drawn(monkeypatch):
    catalog, settings = load_inputs(bundled_catalog_dir(), ROOT / "rulesgen.yaml")
    assert sorted(p.panel for p in catalog.hand_made_panels) == sorted(PANELS)
    assert sorted(HAND_MADE_ROWS) == sorted(p for p, spec in PANELS.items() if spec.kind == ROW)
    asked = []
    original = Context.hand_made
    monkeypatch.setattr(Context, "hand_made", lambda self, panel: asked.append(panel) or original(self, panel))
    build_dashboards(catalog, settings, build_rules(catalog, settings))
    assert sorted(set(asked)) == sorted(PANELS), "a registered panel no builder asks for"


def catalog_literals(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, string) of each string constant of source that is one of names."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names]


def test_hand_made_panels_name_no_failure_mode_or_threshold_in_python():
    catalog = load_catalog(bundled_catalog_dir())
    names = {m.id for m in catalog.failure_modes} | {t.name for m in catalog.failure_modes for t in m.thresholds}
    assert catalog_literals('reads = ctx.mode("straggler")\nratio = t["clock_ratio"]\n', names) == [
        (1, "straggler"), (2, "clock_ratio")]  # the check finds a planted name
    found = {name: catalog_literals((DASHBOARDS_PACKAGE / name).read_text(), names) for name in HAND_MADE_MODULES}
    assert {name: hits for name, hits in found.items() if hits} == {}


BASELINES = """\
statistics:
  mad_to_sigma: {value: 1.4826, source: test}
  min_history_points: {value: 24, source: test}
  peer_outlier_z: {value: 2.5, source: test}
baselines:
  - signal: gpu_temp
    metric: DCGM_FI_DEV_GPU_TEMP
    unit: celsius
    description: GPU temperature.
    value: quantile_over_time(0.5, gpu:dcgm_gpu_temp:max[[ short_range ]])
    busy_only: true
    direction: up
    alert: true
    floor: {value: 0.5, source: test}
    min_delta: {value: 3, source: test}
"""


def test_baselines_need_the_baseline_failure_mode_and_its_thresholds(minimal_catalog):
    (minimal_catalog / "baselines.yaml").write_text(BASELINES)
    with (minimal_catalog / "signals.yaml").open("a") as out:  # busy_only reads GPU_UTIL (role util_per_gpu)
        out.write("  - record: gpu:dcgm_gpu_util:ratio\n    unit: percentunit\n    description: GPU_UTIL\n"
                  "    expr: max by ([[ gpu ]]) ([[ v.DCGM_FI_DEV_GPU_TEMP ]]) * 0\n")
    fm = minimal_catalog / "failure_modes.yaml"
    assert errors_of(load_catalog, minimal_catalog) == [
        f"{fm}:1:1: error[unknown-failure-mode]: failure_modes.yaml: baselines.yaml has 1 signal(s), whose alerts "
        "belong to the failure mode 'baseline_deviation': not in failure_modes.yaml",
    ]
    edit(fm, "  - id: hot_gpu\n", "  - id: baseline_deviation\n")
    assert errors_of(load_catalog, minimal_catalog) == [
        f"{fm}:2:5: error[unknown-threshold]: failure mode baseline_deviation: the baseline alerts read its thresholds "
        "z, z_release, peer_z, peer_z_release, busy_util, same_load_ratio, node_peers_min, fleet_peers_min (missing: z, "
        "z_release, peer_z, peer_z_release, busy_util, same_load_ratio, node_peers_min, fleet_peers_min)",
    ]


# --- the hand-made panels' prose is catalog data (dashboards.yaml texts:) -------------------------------------

def _description(catalog_dir: Path, dashboard: str, title: str) -> str:
    artifacts = plan(catalog_dir, None, None).artifacts
    board = json.loads(next(a.text for a in artifacts if a.path == f"dashboards/{dashboard}.json"))
    panels = [p for p in board["panels"] for p in [p, *p.get("panels", [])]]
    [panel] = [p for p in panels if p.get("title") == title]
    return panel["description"]


def test_a_panels_prose_comes_from_dashboards_yaml(bundled_copy):
    """Edit a text in a copy of the catalog: the dashboard's description says the new words, placeholders filled."""
    dash = bundled_copy / "dashboards.yaml"
    assert "**Normal:** to drain and to investigate at 0." in _description(
        bundled_copy, "gpu-fleet-overview", "GPUs by health state")
    edit(dash, "      to drain and to investigate at 0.\n", "      every GPU healthy, say the planted words.\n")
    edit(dash, "      busy far above idle for a training fleet.\n", "      planted: [[ mode ]] reads [[ threshold ]].\n")
    assert "**Normal:** every GPU healthy, say the planted words." in _description(
        bundled_copy, "gpu-fleet-overview", "GPUs by health state")
    assert "**Normal:** planted: gpu_idle_allocated reads gpu_util." in _description(
        bundled_copy, "gpu-fleet-overview", "GPU-hours in range: busy vs idle")


def _key_line(path: Path, text_id: str, key: str) -> int:
    """1-based line of `key:` in the text text_id of dashboards.yaml."""
    lines = path.read_text().splitlines()
    at = lines.index(f"  {text_id}:")
    return next(i for i in range(at, len(lines)) if lines[i].strip().startswith(f"{key}:")) + 1


def test_a_texts_placeholder_the_builder_does_not_fill_fails_on_its_line(bundled_copy):
    dash = bundled_copy / "dashboards.yaml"
    edit(dash, "with GPU_UTIL above [[ idle_util ]] (busy)", "with GPU_UTIL above [[ idle_utl ]] (busy)")
    edit(dash, "      no series: nothing fires.\n", "      no series: [% if nothing %]nothing fires.\n")
    syntax, placeholder = errors_of(load_catalog, bundled_copy)
    assert syntax.startswith(f"{dash}:{_key_line(dash, 'alerts.firing', 'normal')}:5: error[template-syntax]: "
                             "dashboards.yaml text alerts.firing normal: Unexpected end of template.")
    assert placeholder == (
        f"{dash}:{_key_line(dash, 'fleet.gpu_hours', 'shows')}:5: error[unknown-placeholder]: dashboards.yaml text "
        "fleet.gpu_hours shows: [[ idle_utl ]] is not a value of this panel (did you mean 'idle_util'?) (known: "
        "idle_util, mode, threshold)")


def test_texts_are_complete_known_and_drawn(bundled_copy):
    dash = bundled_copy / "dashboards.yaml"
    edit(dash, "  jobs.rank_sm_spread:\n", "  jobs.rank_sm_spreads:\n")
    edit(dash, "  - panel: fleet.cost\n    failure_mode: gpu_idle_allocated\n"
               "    thresholds: {idle_util: gpu_util}  # waste: GPU-hours held by a pod at or below it\n", "")
    texts, spreads, cost = line_of(dash, "texts:"), line_of(dash, "jobs.rank_sm_spreads:"), line_of(dash, "fleet.cost:")
    assert errors_of(load_catalog, bundled_copy) == [
        f"{dash}:{texts}:1: error[missing-text]: dashboards.yaml texts: no text 'jobs.rank_sm_spread' (the description "
        "of a panel drawn: declared under panels:)",
        f"{dash}:{cost}:3: error[unused-text]: dashboards.yaml texts: fleet.cost is the text of a panel this file does "
        "not declare (panels:); it is drawn nowhere",
        f"{dash}:{spreads}:3: error[unknown-text]: dashboards.yaml texts: rulesgen draws no panel text "
        "'jobs.rank_sm_spreads' (did you mean 'jobs.rank_sm_spread'?)",
    ]


def test_no_panel_prose_is_left_in_the_hand_made_builders():
    """The builders of the hand-made panels hold no sentences: a string of six words or more ending a sentence,
    not a docstring, is prose that belongs in dashboards.yaml texts: (titles stay in the code)."""
    def sentences(source: str) -> list[tuple[int, str]]:
        tree = ast.parse(source)
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                and id(n) not in docs and len(n.value.split()) >= 6 and n.value.rstrip().endswith(".")]
    assert sentences('x = "a planted sentence of six words."\n') == [(1, "a planted sentence of six words.")]
    found = {name: sentences((DASHBOARDS_PACKAGE / name).read_text())
             for name in ("fleet.py", "jobs.py", "job_signals.py", "baselines.py", "panels.py")}
    assert {name: hits for name, hits in found.items() if hits} == {}
