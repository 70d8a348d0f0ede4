"""The suite's own rules, checked on its source: a test gets a binary only from conftest's fixtures (so it
carries the `engines` mark and the mark of what it runs, and `pytest -m "not engines"` passes on a machine
without any engine), and every fixture conftest marks exists."""
from __future__ import annotations

import ast
from pathlib import Path

import conftest
from conftest import BINARIES, REPLAY_FIXTURES

TESTS = Path(__file__).resolve().parent
ENGINE_NAMES = {name for name, _ in BINARIES.values()}


def binary_lookups(source: str) -> list[str]:
    """Lines of `source` that find a binary outside conftest's fixtures: rulesgen.tools.find_tool, conftest's
    tool(), or shutil.which() of an engine."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in ("rulesgen.tools", "conftest"):
            found += [f"{node.lineno}: imports {a.name}" for a in node.names if a.name in ("find_tool", "tool")]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if name in ("find_tool", "tool") or (name == "which" and set(args) & ENGINE_NAMES):
                found.append(f"{node.lineno}: calls {name}({', '.join(map(repr, args))})")
    return found


def test_no_test_finds_a_binary_but_through_a_fixture():
    offenders = {p.relative_to(TESTS).as_posix(): lines for p in sorted(TESTS.rglob("*.py")) if p.name != "conftest.py"
                 for lines in [binary_lookups(p.read_text())] if lines}
    assert offenders == {}


def test_the_lookup_check_finds_each_way_round_the_fixtures():
    planted = ("from rulesgen.tools import find_tool\nimport shutil, conftest\n"
               "a = find_tool('promtool')\nb = shutil.which('vmalert-tool')\nc = conftest.tool('amtool')\n"
               "d = shutil.which('git')\n")
    assert binary_lookups(planted) == ["1: imports find_tool", "3: calls find_tool('promtool')",
                                       "4: calls which('vmalert-tool')", "5: calls tool('amtool')"]


def test_every_fixture_conftest_marks_exists():
    defined = {node.name for p in TESTS.rglob("*.py") for node in ast.walk(ast.parse(p.read_text()))
               if isinstance(node, ast.FunctionDef)
               and any(getattr(d, "attr", getattr(d, "id", "")) == "replay_fixture" for d in node.decorator_list)}
    assert set(REPLAY_FIXTURES) == defined
    assert all(callable(getattr(conftest, fixture, None)) for fixture in BINARIES)
