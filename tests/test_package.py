"""The wheel as a GitOps user gets it: built from a copy of the sources, installed into a fresh venv
outside the repository, its `rulesgen` scaffolds, renders, checks, lists and explains on the bundled
catalog, and the real promtool (and vmalert-tool, for tests/vmalert/) proves what it rendered."""
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT


pytestmark = [pytest.mark.engines, pytest.mark.package]  # make test-package (CI): a wheel built and installed

# What the build reads; copied so that no build/ or egg-info lands in the checkout (nor stale files in the wheel).
BUILD_INPUTS = ("pyproject.toml", "README.md", "MANIFEST.in", "LICENSE", "LICENSE.txt", "setup.cfg", "setup.py")
SOURCE_DIRS = ("rulesgen", "catalog")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def _run(cmd, cwd, env=None, timeout=300):
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _ok(result):
    assert result.returncode == 0, f"{' '.join(result.args)}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, src / name)
    for name in SOURCE_DIRS:
        shutil.copytree(ROOT / name, src / name, ignore=IGNORE)
    out = tmp_path_factory.mktemp("wheel")
    _ok(_run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", out, src], cwd=src))
    wheels = sorted(out.glob("dcgm_rulesgen-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory, promtool):
    """(environment, bin dir) of a fresh venv outside the repository with only the wheel and its dependencies."""
    env_dir = tmp_path_factory.mktemp("venv")
    assert ROOT not in env_dir.parents
    venv.create(env_dir, with_pip=True, clear=True)
    bin_dir = env_dir / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", RULESGEN_PROMTOOL=promtool, PYTHONDONTWRITEBYTECODE="1")
    _ok(_run([bin_dir / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q", wheel], cwd=env_dir, env=env))
    where = _ok(_run([bin_dir / "python", "-c", "import rulesgen.catalog as c; print(c.__file__); print(c.bundled_catalog_dir())"],
                     cwd=env_dir, env=env)).stdout.split()
    assert all(Path(p).is_relative_to(env_dir) for p in where), f"rulesgen not imported from the venv: {where}"
    return env, bin_dir


@pytest.fixture(scope="module")
def gitops(installed, tmp_path_factory):
    """`rulesgen init`, then the user's own selector and host label (the GPU Operator's job, a relabelled host
    label: the example scenario follows them), then `rulesgen render`, in a directory without catalog/."""
    env, bin_dir = installed
    repo = tmp_path_factory.mktemp("gitops")
    _ok(_run([bin_dir / "rulesgen", "init"], cwd=repo, env=env))
    config = repo / "rulesgen.yaml"
    config.write_text(config.read_text() + "selector: 'job=\"nvidia-dcgm-exporter\"'\nlabels: {host: node}\n")
    render = _ok(_run([bin_dir / "rulesgen", "render"], cwd=repo, env=env))
    assert "rendered" in render.stdout
    return repo


def test_wheel_is_distributed_as_dcgm_rulesgen_with_the_rulesgen_command(wheel):
    """PyPI's `rulesgen` is somebody else's project: ours is `dcgm-rulesgen`; the command and the import stay rulesgen."""
    from email.parser import Parser
    names = zipfile.ZipFile(wheel).namelist()
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert info.startswith("dcgm_rulesgen-"), info
    meta = Parser().parsestr(zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode())
    assert meta["Name"] == "dcgm-rulesgen"
    assert meta.get_all("Provides-Extra") and "plot" in meta.get_all("Provides-Extra")
    scripts = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "[console_scripts]\nrulesgen = rulesgen.cli:main" in scripts
    assert any(n.startswith("rulesgen/cli/") for n in names)
    # Every install hint names the distribution, never the other project.
    hints = [p for p in (ROOT / "rulesgen").rglob("*") if p.is_file() and p.suffix in (".py", ".j2", ".yaml", "") ]
    hints += [ROOT / "README.md"]
    for p in hints:
        text = p.read_text(errors="replace")
        assert "rulesgen[" not in text.replace("dcgm-rulesgen[", ""), p
        assert "pip install rulesgen" not in text, p


def test_wheel_ships_the_catalog_templates_and_every_module(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    catalog = sorted(p.name for p in (ROOT / "catalog").glob("*.yaml"))
    assert "failure_modes.yaml" in catalog
    missing = [f"rulesgen/_catalog/{n}" for n in catalog if f"rulesgen/_catalog/{n}" not in names]
    for p in sorted((ROOT / "rulesgen").rglob("*")):  # templates (dotfiles too) and every module
        rel = p.relative_to(ROOT).as_posix()
        if p.is_file() and "__pycache__" not in p.parts and (p.suffix == ".py" or "templates" in p.parts) and rel not in names:
            missing.append(rel)
    assert "rulesgen/templates/init/.github/workflows/gpu-rules.yaml" in names
    assert not missing, f"not in {wheel.name}: {missing}"
    assert not [n for n in names if n.startswith("catalog/")], "the catalog belongs inside the package"


def test_installed_cli_inits_renders_checks_lists_and_explains(wheel, installed, gitops):
    env, bin_dir = installed
    for rel in ("rulesgen.yaml", "rulesgen.lock", "Makefile", ".github/workflows/gpu-rules.yaml", ".gitignore",
                "scenarios/example-ghost-loss-dbe.yaml"):
        assert (gitops / rel).is_file(), rel
    pin = _ok(_run([bin_dir / "python", "-c", "from rulesgen.lock import installed; print('=='.join(installed()))"],
                   cwd=gitops, env=env)).stdout.strip()
    assert f"-{pin.split('==')[1]}-" in wheel.name, (pin, wheel.name)  # the wheel's own version, pinned by init
    assert f"\n{pin}\n" in (gitops / "rulesgen.lock").read_text()
    assert pin.startswith("dcgm-rulesgen=="), pin  # `pip install -r rulesgen.lock` must not fetch PyPI's other rulesgen
    assert not (gitops / "catalog").exists()
    rules = sorted((gitops / "alerts" / "prometheus").glob("*.yaml"))
    assert {"recording.yaml", "health.yaml", "efficiency.yaml"} <= {p.name for p in rules}
    assert (gitops / "tests" / "promtool" / "example-ghost-loss-dbe.yaml").is_file(), "scenarios/ not rendered by default"
    assert list((gitops / "dashboards").glob("*.json")) and list((gitops / "runbooks").glob("*.md"))
    check = _ok(_run([bin_dir / "rulesgen", "check"], cwd=gitops, env=env))
    assert "up to date" in check.stdout
    listing = _ok(_run([bin_dir / "rulesgen", "list"], cwd=gitops, env=env)).stdout
    assert "ecc_uncorrectable" in listing and "DCGM_FI_DEV_GPU_TEMP" in listing
    explain = _ok(_run([bin_dir / "rulesgen", "explain", "ecc_uncorrectable"], cwd=gitops, env=env)).stdout
    assert "THRESHOLDS" in explain and "RUNBOOK" in explain
    assert "site-packages" not in explain and "catalog/failure_modes.yaml:" in explain  # catalog paths, not the install's
    import tomllib
    release = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _ok(_run([bin_dir / "rulesgen", "--version"], cwd=gitops, env=env)).stdout == f"rulesgen {release}\n"


def test_make_check_lint_and_amtool_pass_as_the_generated_ci_runs_them(installed, gitops, amtool):
    """The generated workflow's `rulesgen` job and its amtool step, with the installed wheel: `make check` (a fresh
    render by the pinned version), `make lint`, `make check-alertmanager`."""
    env, bin_dir = installed
    made = _ok(_run(["make", "check", "lint", "check-alertmanager", f"RULESGEN={bin_dir / 'rulesgen'}", f"AMTOOL={amtool}"],
                    cwd=gitops, env=env))
    assert "up to date" in made.stdout and "SUCCESS" in made.stdout + made.stderr


def test_the_scaffolds_make_test_passes_promtool_on_the_installed_render(installed, gitops, promtool):
    """The scaffold's own `make test` (what its generated CI runs): promtool checks every rule file and replays
    every scenario test the installed rulesgen rendered."""
    env, bin_dir = installed
    assert sorted((gitops / "tests" / "promtool").glob("*.yaml"))
    made = _ok(_run(["make", "test", f"PROMTOOL={promtool}", f"RULESGEN={bin_dir / 'rulesgen'}"], cwd=gitops, env=env))
    assert "FAILED" not in made.stdout + made.stderr and "SUCCESS" in made.stdout
    assert f"{promtool} test rules tests/promtool/example-ghost-loss-dbe.yaml" in made.stdout


def test_the_scaffolds_make_test_vmalert_passes_vmalert_tool(installed, gitops, vmalert_tool):
    env, _ = installed
    assert list((gitops / "tests" / "vmalert").glob("*.yaml")), "rulesgen render wrote no tests/vmalert/*.yaml"
    # One --files value: vmalert-tool expands the pattern itself (further paths would be ignored).
    made = _ok(_run(["make", "test-vmalert", f"VMALERT_TOOL={vmalert_tool}"], cwd=gitops, env=env))
    assert "unittest --files 'tests/vmalert/*.yaml'" in made.stdout
