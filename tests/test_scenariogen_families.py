"""fixtures/scenariogen/registry.py, families/ and cli.py, and the package's layout: every family registers
its scenarios in a fixed order, the registry and fixtures/scenarios/ hold the same names, a few scenarios
rebuilt here equal their committed files byte for byte, imports go downward only, no module is long."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
PACKAGE = FIXTURES / "scenariogen"
sys.path.insert(0, str(FIXTURES))

from scenariogen import cli, families, registry  # noqa: E402

# The layers of scenariogen/__init__.py's docstring, lowest first: a module imports only modules before it.
LAYERS = ["notation", "gpus", "fields", "phases", "fleet", "workload", "physics", "faults", "history",
          "emission", "training", "reads", "document", "registry", "families", "check", "cli"]
# One scenario per code path worth rebuilding in a unit test (each under a second): 5-minute samples over
# 28 hours, the hard-loss loop's registration, a board with its own limits, a training job's own series.
REBUILT = ["counters-missing-ecc", "gpu-lost-hard-loss-60s", "memory-overheat-gb200-own-limit",
           "ghost-loss-thermal-drift"]


def names():
    return [fn.__name__.replace("_", "-") for fn in families.builders()]


def test_registry_and_committed_files_hold_the_same_scenarios():
    assert len(names()) == len(set(names()))
    assert set(names()) == {p.stem for p in (FIXTURES / "scenarios").glob("*.yaml")}
    assert families.builders() == registry.SCENARIOS and families.builders() is not registry.SCENARIOS


def test_each_family_registers_its_scenarios_in_import_order():
    modules = [fn.__module__.rsplit(".", 1)[-1] for fn in families.builders()]
    order = [m.__name__.rsplit(".", 1)[-1] for m in families.FAMILIES]
    assert sorted(set(modules)) == sorted(order)
    assert modules == sorted(modules, key=order.index)     # one contiguous block per family, in FAMILIES order
    assert names()[:2] == ["normal-checkpoint-full-memory", "normal-allreduce-stall"]
    assert names()[-1] == "shard-ghost-loss-dbe-other-node"


@pytest.mark.parametrize("name", REBUILT)
def test_rebuilt_scenario_equals_its_committed_file(tmp_path, name):
    assert cli.main([name], out_dir=str(tmp_path)) == 0
    assert [p.name for p in tmp_path.iterdir()] == [name + ".yaml"]
    assert (tmp_path / (name + ".yaml")).read_bytes() == (FIXTURES / "scenarios" / (name + ".yaml")).read_bytes()


def test_the_command_line_writes_the_named_scenario(tmp_path):
    """fixtures/build_scenarios.py --out DIR NAME: the entry point finds its package from any working
    directory, and writes only the named scenario."""
    run = subprocess.run([sys.executable, str(FIXTURES / "build_scenarios.py"), "--out", str(tmp_path),
                          "counters-missing-ecc"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "counters-missing-ecc.yaml").read_bytes() == \
        (FIXTURES / "scenarios" / "counters-missing-ecc.yaml").read_bytes()


def _imports(path):
    """scenariogen modules a module imports (relative imports, resolved to their top-level layer)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            parts = list(path.relative_to(PACKAGE).with_suffix("").parts)[:-node.level]
            target = parts + (node.module.split(".") if node.module else [])
            out.add(target[0] if target else "__init__")
            if not target:
                out.update(alias.name for alias in node.names)
    return out


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_downward(path):
    rel = path.relative_to(PACKAGE).with_suffix("").parts
    layer = rel[0] if rel[0] != "__init__" else None
    if layer is None:
        assert _imports(path) == set()
        return
    allowed = set(LAYERS[:LAYERS.index(layer)])
    if layer == "families":
        allowed.add("families") if rel[-1] == "__init__" else None
    assert _imports(path) <= allowed, (path, _imports(path) - allowed)


def test_every_module_is_listed_in_the_layers():
    assert {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"} == set(LAYERS) - {"families"}
    doc = (PACKAGE / "__init__.py").read_text()
    assert all("    %s " % layer in doc or "    %s/" % layer in doc for layer in LAYERS)


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_no_module_is_over_400_lines(path):
    assert len(path.read_text().splitlines()) <= 400
