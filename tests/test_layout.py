"""The package shows the data flow: each module sits in a layer, imports only from its own layer or below,
no two modules import each other (directly or around a circle), no module imports another's private
name, docs/contributing.md's "Code layout" names every module, and some file under tests/ imports every module."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "rulesgen"
# Lowest first. A module's layer is the first entry one of whose prefixes names it.
LAYERS = [
    ("base", ("rulesgen", "rulesgen.errors", "rulesgen.durations", "rulesgen.interrupts", "rulesgen.lock",
              "rulesgen.memo", "rulesgen.processes")),
    ("promql", ("rulesgen.promql",)),
    ("model", ("rulesgen.model",)),
    ("load", ("rulesgen.load", "rulesgen.catalog")),
    ("builders", ("rulesgen.builders",)),
    ("render", ("rulesgen.render",)),
    ("checks", ("rulesgen.checks",)),
    ("plan", ("rulesgen.artifacts", "rulesgen.init")),
    ("engines", ("rulesgen.engines",)),
    ("cli", ("rulesgen.cli",)),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or (p != "rulesgen" and module.startswith(p + ".")) for p in prefixes):
            return i
    raise AssertionError(f"{module} is in no layer of tests/test_layout.py")


def imports(path: Path, modules: set[str]) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names) for each import of a rulesgen module, names resolved to submodules."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if not target.startswith("rulesgen"):
                continue
            plain = [a.name for a in node.names if f"{target}.{a.name}" not in modules]
            out += [(node.lineno, f"{target}.{a.name}", []) for a in node.names if f"{target}.{a.name}" in modules]
            if plain:
                out.append((node.lineno, target, plain))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("rulesgen")]
    return out


def graph() -> dict[str, list[tuple[int, str, list[str]]]]:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in files}
    return {module_name(p): imports(p, modules) for p in files}


def upward(edges) -> list[str]:
    return [f"{m}:{line} imports {t} ({LAYERS[layer(t)][0]} above {LAYERS[layer(m)][0]})"
            for m, found in edges.items() for line, t, _ in found if layer(t) > layer(m)]


def cycles(edges) -> list[list[str]]:
    """Import cycles between modules (a package's __init__ importing its own modules excepted)."""
    deps = {m: {t for _, t, _ in found if t != m and not m.startswith(t + ".") and not t.startswith(m + ".")}
            for m, found in edges.items()}
    found, state = [], {}

    def visit(m, stack):
        state[m] = "open"
        for t in sorted(deps.get(m, ())):
            if state.get(t) == "open":
                found.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t, stack + [t])
        state[m] = "done"
    for m in sorted(deps):
        if m not in state:
            visit(m, [m])
    return found


def private(edges) -> list[str]:
    return [f"{m}:{line} imports {n} from {t}" for m, found in edges.items() for line, t, names in found
            for n in names if n.startswith("_") and n != "__version__"]


def test_imports_go_only_downward_without_cycles_or_private_names():
    edges = graph()
    assert upward(edges) == []
    assert cycles(edges) == []
    assert private(edges) == []


def test_the_layout_checks_fail_on_a_planted_violation(tmp_path):
    edges = {"rulesgen.promql.tree": [(3, "rulesgen.builders.rules", [])],
             "rulesgen.load.settings": [(4, "rulesgen.load.jobmetrics", ["_helper"])],
             "rulesgen.load.jobmetrics": [(5, "rulesgen.load.settings", [])]}
    assert upward(edges) == ["rulesgen.promql.tree:3 imports rulesgen.builders.rules (builders above promql)"]
    assert cycles(edges) == [["rulesgen.load.jobmetrics", "rulesgen.load.settings", "rulesgen.load.jobmetrics"]]
    assert private(edges) == ["rulesgen.load.settings:4 imports _helper from rulesgen.load.jobmetrics"]


def layout_section() -> str:
    text = (ROOT / "docs" / "contributing.md").read_text()
    return text.split("\n## Code layout\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def test_code_layout_names_every_module():
    """Each package has a row (`rulesgen/<package>/`) naming each of its modules; a top-level module is
    named with its path."""
    rows = {m.group(1): line for line in layout_section().splitlines()
            for m in [re.match(r"\| `(rulesgen/[a-z_/]*)`", line)] if m}
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if path.name == "__init__.py" and rel.parent != Path("rulesgen"):
            if f"{rel.parent.as_posix()}/" not in rows:
                missing.append(f"{rel.parent.as_posix()}/ (no row)")
            continue
        if rel.parent == Path("rulesgen"):
            if path.name != "__init__.py" and f"`{rel.as_posix()}`" not in layout_section() \
                    and f"`{path.name}`" not in layout_section():
                missing.append(rel.as_posix())
            continue
        row = rows.get(f"{rel.parent.as_posix()}/", "")
        if f"`{path.name}`" not in row:
            missing.append(rel.as_posix())
    assert missing == []


# --- every module has a test that imports it ------------------------------------------------------------
# Every module is imported by some file under tests/ (a check module counts when tests/test_checks.py's
# table test covers each Check it declares). UNTESTED would list known exceptions; it is empty, and a
# listed module that gains a test must leave it.
UNTESTED: set[str] = set()


def imported_by(test_files) -> set[str]:
    """Modules the files import by name: x for `import x`, x and x.y for `from x import y` (absolute only)."""
    found = set()
    for path in test_files:
        for node in ast.walk(ast.parse(Path(path).read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def untested(modules: set[str], imported: set[str], checks_covered: set[str]) -> set[str]:
    return modules - imported - checks_covered


def test_every_module_is_imported_by_a_test():
    from checks_table import covered_check_modules
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    missing = untested(modules, imported_by(sorted((ROOT / "tests").rglob("*.py"))),
                       {f"rulesgen.checks.{name}" for name in covered_check_modules()})
    new, done = sorted(missing - UNTESTED), sorted(UNTESTED - missing)
    assert not new, f"no test imports {', '.join(new)}: give each a unit test under tests/unit/"
    assert not done, f"{', '.join(done)}: tested now (or gone): remove from UNTESTED in tests/test_layout.py"


def test_the_test_import_scan_on_planted_files(tmp_path):
    planted = tmp_path / "test_x.py"
    planted.write_text("import rulesgen.a\nfrom rulesgen.b import c, d\nfrom . import e\n"
                       "def f():\n    from rulesgen.g import h\n")
    assert imported_by([planted]) == {"rulesgen.a", "rulesgen.b", "rulesgen.b.c", "rulesgen.b.d", "rulesgen.g",
                                      "rulesgen.g.h"}
    modules = {"rulesgen.a", "rulesgen.b.c", "rulesgen.g", "rulesgen.z", "rulesgen.checks.k", "rulesgen.checks.m"}
    assert untested(modules, imported_by([planted]), {"rulesgen.checks.k"}) == {"rulesgen.z", "rulesgen.checks.m"}
