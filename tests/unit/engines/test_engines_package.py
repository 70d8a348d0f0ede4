"""rulesgen/engines/__init__.py is its docstring only: importing the package (as every engines import does)
loads no tool module, and the docstring names what each of its modules is for."""
import subprocess
import sys

from conftest import ROOT
import rulesgen.engines as engines

PACKAGE = ROOT / "rulesgen" / "engines"


def test_importing_the_package_loads_nothing_else_of_it():
    """In a fresh interpreter (this one has imported half the package already): python, not an engine."""
    code = "import sys, rulesgen.engines; print(sorted(m for m in sys.modules if m.startswith('rulesgen')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['rulesgen', 'rulesgen.engines']"


# module -> what the package docstring calls it
NAMED = {"tools": "finding the binaries", "validate": "promtool (parse", "replay": "unit tests, replays",
         "plot": "and plots", "victoriametrics": "vmalert's replay mode", "backfill": "and backfill",
         "push": "Grafana's HTTP API (push)"}


def test_the_docstring_names_every_engine_module():
    doc = " ".join(engines.__doc__.split())
    assert doc.startswith("The programs outside rulesgen:")
    assert [what for what in NAMED.values() if what not in doc] == []
    assert sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__") == sorted(NAMED)
