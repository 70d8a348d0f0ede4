"""Every name rulesgen's code reads from the catalog is a contract checked at load (issue 24, item 3):
signals.yaml and metrics.yaml `roles:` declare the records and metrics the code asks for by role
(rulesgen/model/roles.py), and after build every series a rule or a dashboard query reads must be produced
(rulesgen/builders/series_check.py). For every such name of the bundled catalog: renamed everywhere, the
catalog renders and nothing reads the old name; renamed only where it is defined, the load fails on the
roles line; its role dropped as well, the load fails where the name should be defined, or renders without
it. No engine binary is needed."""
import ast
import re
import shutil
from pathlib import Path

import pytest
from grafanalib.core import Dashboard, Target, TimeSeries

from conftest import ROOT, errors_of
from rulesgen.promql import tree as promql_tree
from rulesgen.artifacts import load_inputs, plan
from rulesgen.builders import dashboards as dashboards_package
from rulesgen.builders import series_check
from rulesgen.builders.rules import build_rules
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.errors import Collector
from rulesgen.model.roles import METRIC, RECORD, ROLES
from rulesgen.model.output import DashboardFile, Rule, RuleFile, RuleGroup, RuleSet
from rulesgen.model.panels import PANELS

CONFIG = ROOT / "rulesgen.yaml"
BUNDLED = load_catalog(bundled_catalog_dir())
NAMES = sorted({n for _, names in BUNDLED.roles for n in names})
FILE = {RECORD: "signals.yaml", METRIC: "metrics.yaml"}
# The roles the bundled catalog needs: required ones, the records of its hand-made panels (it declares
# every one), GPU_UTIL for its busy-only baselines.
NEEDED = ({r for r, s in ROLES.items() if s.required} | {r for p in PANELS.values() for r in p.records}
          | {"util_per_gpu"})


def kind_of(name: str) -> str:
    return RECORD if ":" in name else METRIC


def renamed(name: str) -> str:
    """A new valid name: level:metric_renamed:operations, or DCGM_..._RENAMED."""
    if kind_of(name) == RECORD:
        level, metric, operation = name.split(":")
        return f"{level}:{metric}_renamed:{operation}"
    return name + "_RENAMED"


def pattern(name: str) -> re.Pattern:
    """The name as a whole word (gpu:dcgm_sm_clock:max is not part of gpu:dcgm_sm_clock_vs_job:ratio)."""
    return re.compile(r"(?<![\w:])" + re.escape(name) + r"(?![\w:])")


def whole_words(text: str) -> set[str]:
    """Every name that stands in `text` as pattern() finds it: the runs of word characters and colons."""
    return set(re.findall(r"[\w:]+", text))


def roles_line(path: Path) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith("roles:"))


def copy(tmp_path) -> Path:
    d = tmp_path / "catalog"
    shutil.copytree(bundled_catalog_dir(), d)
    return d


def rename_everywhere(catalog: Path, old: str, new: str) -> None:
    for path in catalog.glob("*.yaml"):
        path.write_text(pattern(old).sub(new, path.read_text()))


def built(catalog: Path):
    """(catalog, every series name its rules and dashboard queries read): the readers of the names, built
    with the series check after build (build_dashboards), no query reading a series nothing produces."""
    c, s = load_inputs(catalog, CONFIG)
    rules = build_rules(c, s)
    out = {n for r in rules.rules for n in promql_tree.names_read(r.expr)}
    for d in dashboards_package.build_dashboards(c, s, rules):
        for _, expr in series_check.queries(d):
            for macro, value in series_check.MACROS:
                expr = macro.sub(value, expr)
            out |= set(promql_tree.names_read(expr))
    return c, out


@pytest.fixture(scope="module")
def bundled_reads() -> set[str]:
    return built(bundled_catalog_dir())[1]


def test_every_name_renamed_at_once_renders_everything(tmp_path, bundled_reads):
    """The whole render (rules, dashboards, runbooks, tests, exporter counters ...) with every name the code
    reads renamed at once (one render, not one per name: make test's budget): the code asks for the new
    name wherever it asked for the old, every query reads the new names where it read the old ones, and no
    renderer spells an old one."""
    catalog = copy(tmp_path)
    for name in NAMES:
        rename_everywhere(catalog, name, renamed(name))
    loaded, reads = built(catalog)
    for role, names in BUNDLED.roles:
        assert loaded.named_all(role) == tuple(renamed(n) for n in names), role
    assert not set(NAMES) & reads
    assert {n for n in NAMES if renamed(n) in reads} == set(NAMES) & bundled_reads
    words = whole_words("\n".join(a.text for a in plan(catalog, CONFIG, None).artifacts))
    assert [n for n in NAMES if n in words] == []
    assert [n for n in NAMES if renamed(n) not in words] == []


@pytest.mark.parametrize("name", NAMES)
def test_renamed_definition_is_a_load_error_on_each_roles_line(tmp_path, name):
    catalog = copy(tmp_path)
    kind = kind_of(name)
    path = catalog / FILE[kind]
    key = "record" if kind == RECORD else "name"
    text = path.read_text()
    assert text.count(f"  - {key}: {name}\n") == 1
    path.write_text(text.replace(f"  - {key}: {name}\n", f"  - {key}: {renamed(name)}\n"))
    what = "signal" if kind == RECORD else "metric"
    lines = path.read_text().splitlines()
    expected = []
    for i, line in enumerate(lines[roles_line(path):], roles_line(path) + 1):
        for m in pattern(name).finditer(line):
            role = line.split(":")[0].strip() if ":" in line.split(name)[0] else None
            if role is None or role not in ROLES:  # a flow list's continuation line: the role is above
                role = next(lines[j - 1].split(":")[0].strip() for j in range(i, 0, -1) if re.match(r"^  \w+:", lines[j - 1]))
            col = m.start() + 1 if ROLES[role].many else 3  # a list item's position, else the role's
            expected.append(f"{path}:{i}:{col}: error[unknown-{what}]: {FILE[kind]} roles.{role} "
                            f"({ROLES[role].about}): no {what} {name!r} in {FILE[kind]}")  # then a did-you-mean
    assert expected
    errors = errors_of(load_catalog, catalog)
    assert [e for e in errors if e.startswith(tuple(expected))] == [
        next(e for e in errors if e.startswith(x)) for x in expected], errors


def drop_role(catalog: Path, role: str) -> None:
    """Remove `role:` (and a flow list's continuation lines) from its roles: section."""
    path = catalog / FILE[ROLES[role].kind]
    lines = path.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {role}: "))
    end = start + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    path.write_text("".join(lines[:start] + lines[end:]))


@pytest.mark.parametrize("role", sorted(ROLES))
def test_dropped_role_fails_where_it_should_be_defined_or_builds_without_it(tmp_path, role):
    catalog = copy(tmp_path)
    drop_role(catalog, role)
    spec = ROLES[role]
    for name in spec.default:
        rename_everywhere(catalog, name, renamed(name))  # the default the code falls back to: gone
    if role in NEEDED:
        path = catalog / FILE[spec.kind]
        key = "signals" if spec.kind == RECORD else "metrics"
        line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith(f"{key}:"))
        errors = errors_of(load_catalog, catalog)
        assert [e for e in errors if "error[missing-name]" in e] == [
            e for e in errors if e.startswith(f"{path}:{line}:1: error[missing-name]: {FILE[spec.kind]}: ")
            and f"role {role!r}" in e], errors
        assert any(f"role {role!r}" in e for e in errors), errors
    else:
        loaded, reads = built(catalog)
        assert loaded.named_all(role) == ()
        assert not set(spec.default) & reads


def test_an_unknown_role_is_an_unknown_key_and_the_role_takes_its_default(tmp_path):
    catalog = copy(tmp_path)
    path = catalog / "signals.yaml"
    text = path.read_text()
    path.write_text(text.replace("\n  fleet_gpus: fleet:dcgm_gpus:count\n", "\n  fleet_gpu: fleet:dcgm_gpus:count\n"))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if t.startswith("  fleet_gpu: "))
    errors = errors_of(load_catalog, catalog)
    assert [e.split(" (did you mean")[0] for e in errors] == [
        f"{path}:{line}:3: error[unknown-key]: signals.yaml roles: unknown key 'fleet_gpu'"]


def test_no_signal_takes_a_name_rulesgen_writes(tmp_path):
    catalog = copy(tmp_path)
    path = catalog / "signals.yaml"
    path.write_text(path.read_text().replace("  - record: fleet:dcgm_gpus:count\n", "  - record: model:dcgm_gpus:count\n"))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if t == "  - record: model:dcgm_gpus:count")
    assert f"{path}:{line}:5: error[reserved-name]: signal model:dcgm_gpus:count: rulesgen writes this record itself " \
           "(rulesgen/model/conventions.py); choose another name" in errors_of(load_catalog, catalog)


def test_series_check_names_the_rule_and_the_panel_that_read_nothing():
    catalog, settings = load_inputs(bundled_catalog_dir(), CONFIG)
    rules = RuleSet(files=(RuleFile("alerts/prometheus/x.yaml", (RuleGroup("g", (
        Rule(record="gpu:x:max", expr="max by (gpu) (DCGM_FI_DEV_GPU_TEMP)"),
        Rule(alert="GPUStale", expr="gpu:x:mx > 1")), 30),)),))
    dash = DashboardFile("d", "dashboards/d.json", Dashboard(title="d", panels=[TimeSeries(
        title="GPUs", targets=[Target(expr="sum(fleet:dcgm_gpus:count) + gpu:x:max * 0 + sum(up)"),
                               Target(expr="sum(avg_over_time(fleet:dcgm_gpu:count[$__range:5m])) * $__range_s")])]))
    errors = Collector()
    known = series_check.produced(catalog, settings, rules)
    series_check.rule_problems(rules, known, errors)
    series_check.dashboard_problems([dash], known, errors)
    assert [str(e) for e in errors.items] == [
        "alerts/prometheus/x.yaml:1:1: error[unknown-series]: alert GPUStale (alerts/prometheus/x.yaml, group g) reads "
        "'gpu:x:mx': no rule records it and no catalog metric has that name (did you mean 'gpu:x:max'?)",
        "dashboards/d.json:1:1: error[unknown-series]: dashboard d, panel 'GPUs' reads 'fleet:dcgm_gpus:count': no rule "
        "records it and no catalog metric has that name",
        "dashboards/d.json:1:1: error[unknown-series]: dashboard d, panel 'GPUs' reads 'fleet:dcgm_gpu:count': no rule "
        "records it and no catalog metric has that name",
    ]


def test_a_panel_drawing_a_rules_wrong_name_is_that_rules_error_only():
    """A failure mode's expression reading a name nothing produces is drawn by its panel too: one error, at
    the rule's position (the catalog line in a real build), not a second one at the dashboard file."""
    catalog, settings = load_inputs(bundled_catalog_dir(), CONFIG)
    rules = RuleSet(files=(RuleFile("alerts/prometheus/x.yaml", (RuleGroup("g", (
        Rule(alert="GPUHot", expr="A > 85"),), 30),)),))
    dash = DashboardFile("d", "dashboards/d.json", Dashboard(title="d", panels=[TimeSeries(
        title="Hot", targets=[Target(expr="A"), Target(expr="B")])]))
    errors = Collector()
    known = series_check.produced(catalog, settings, rules)
    reported = series_check.rule_problems(rules, known, errors)
    series_check.dashboard_problems([dash], known, errors, reported)
    assert reported == {"A"}
    assert [(e.path, e.message.split(" reads ")[1][:3]) for e in errors.items] == [
        ("alerts/prometheus/x.yaml", "'A'"), ("dashboards/d.json", "'B'")]


def test_bundled_render_reads_only_produced_series():
    catalog, settings = load_inputs(bundled_catalog_dir(), CONFIG)
    rules = build_rules(catalog, settings)
    dashboards = dashboards_package.build_dashboards(catalog, settings, rules)
    errors = Collector()
    known = series_check.produced(catalog, settings, rules)
    series_check.rule_problems(rules, known, errors)
    series_check.dashboard_problems(dashboards, known, errors)
    assert errors.items == []
    assert sum(1 for d in dashboards for _ in series_check.queries(d)) > 200  # the walk finds the queries


# Where Python may spell a catalog record or metric name (outside docstrings): the roles' defaults, the replay
# dialects' help text (prose about dcgm-exporter's options), and the driver-version labels lint's alert-identity
# check knows are not identity (label names, not series read).
SPELLED = {"rulesgen/model/roles.py": None, "rulesgen/load/dialects.py": "AXES",
           "rulesgen/checks/alert_identity.py": "NOT_IDENTITY"}


def spelled_names(source: str, names: set[str]) -> list[tuple[int, str, str]]:
    """(line, name, the assignment it sits in) of each catalog name inside a string constant of source, docstrings
    left out."""
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    word = re.compile(r"(?<![\w:])(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")(?![\w:])")
    out = []
    for top in tree.body:
        target = top.targets[0].id if isinstance(top, ast.Assign) and isinstance(top.targets[0], ast.Name) else ""
        for node in ast.walk(top):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                out += [(node.lineno, m.group(1), target) for m in word.finditer(node.value)]
    return out


def test_python_spells_no_catalog_name_but_the_roles_defaults():
    names = {s.record for s in BUNDLED.signals} | {n for m in BUNDLED.metrics for n in m.names}
    planted = 'X = 1\ndef f(ctx):\n    """gpu:dcgm_workload:info"""\n    return f"{ctx}\\n and gpu:dcgm_workload:info{{}}"\n'
    assert spelled_names(planted, names) == [(4, "gpu:dcgm_workload:info", "")]  # found in an f-string, not the docstring
    found = {}
    for path in sorted((ROOT / "rulesgen").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        hits = [h for h in spelled_names(path.read_text(), names) if rel not in SPELLED or
                (SPELLED[rel] is not None and h[2] != SPELLED[rel])]
        if hits:
            found[rel] = hits
    assert found == {}


def test_an_unknown_record_in_a_literal_block_is_reported_on_its_line_and_column(tmp_path):
    """A record renamed where it is defined: every expression still naming it fails on the line that names it,
    at its column (not on the `expr: |` line above), for records no role holds too."""
    catalog = copy(tmp_path)
    signals = catalog / "signals.yaml"
    signals.write_text(signals.read_text().replace("  - record: gpu:dcgm_xid:recent\n", "  - record: gpu:dcgm_xid:recently\n"))
    c, s = load_inputs(catalog, CONFIG)
    expected = []
    for path in (catalog / "failure_modes.yaml", signals):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            found = pattern("gpu:dcgm_xid:recent").search(line)
            if found:  # a line naming it (descriptions too: the errors must be a subset)
                expected.append((str(path), i, found.start() + 1))
    errors = errors_of(build_rules, c, s)
    assert all("error[unknown-signal]" in e and "'gpu:dcgm_xid:recent'" in e for e in errors)
    got = [(p, int(line), int(col)) for p, line, col, _ in (e.split(":", 3) for e in errors)]
    assert got and set(got) <= set(expected), (got, expected)
    assert len({p for p, _, _ in got}) == 2  # signals.yaml and failure_modes.yaml
