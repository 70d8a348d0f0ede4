"""`rulesgen init DIR`: scaffold a GitOps repository (config, lock, Makefile, CI workflow, example scenario)."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from . import lock
from .catalog import bundled_catalog_dir, load_catalog
from .load.config_template import config_template

WORKFLOW = ".github/workflows/gpu-rules.yaml"
# Target path in the new repository -> template under rulesgen/templates/init (package data).
FILES = {
    "Makefile": "Makefile",
    ".gitignore": "gitignore",
    "scenarios/example-ghost-loss-dbe.yaml": "scenarios/example-ghost-loss-dbe.yaml",
}

# What to do after `init`, in order: the exporter's counters first, or the critical modes are blind.
def next_steps(catalog) -> tuple[str, ...]:
    defaults = {m.name for m in catalog.metrics if m.default_enabled}
    blind = [fm.id for fm in catalog.failure_modes
             if fm.metrics and not any(catalog.metric(n).name in defaults for n in fm.metrics)]
    return (
        "deploy the exporter counters the rules read, from exporter/ (dcgm-exporter's default counters leave "
        f"{', '.join(blind) or 'no failure mode'} blind): Helm chart: exporter/dcgm-exporter-values.yaml (or the "
        "metrics ConfigMap); GPU Operator: exporter/gpu-operator-dcgm-metrics-configmap.yaml + "
        "exporter/gpu-operator-clusterpolicy-patch.yaml",
        "deploy the rules: deploy/prometheus-operator/ (PrometheusRule) or deploy/victoriametrics-operator/ (VMRule), "
        "enabled under outputs: in rulesgen.yaml, or the plain files in alerts/prometheus/",
        "merge alertmanager/rulesgen.yaml (route and inhibit_rules) into your Alertmanager config",
        "dashboards: deploy/grafana-dashboards/ or deploy/grafana-operator/ (outputs: in rulesgen.yaml), "
        "dashboards/*.json, or `rulesgen push`",
    )


def template_text(name: str) -> str:
    return resources.files("rulesgen").joinpath("templates/init", name).read_text(encoding="utf-8")


def git_root(directory: Path) -> Path | None:
    """The nearest directory at or above `directory` holding .git (a directory, or a worktree's file)."""
    here = directory.resolve()
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return None


@dataclass(frozen=True)
class WorkflowPlace:
    path: Path          # where the workflow file goes
    workdir: str        # its defaults.run.working-directory, relative to the repository root
    note: str = ""      # what the user must know about it


def workflow_place(directory: Path) -> WorkflowPlace:
    """GitHub runs only the workflows in .github/workflows at the repository root: a scaffold in a
    subdirectory of a git repository gets its workflow there, working in the subdirectory."""
    root = git_root(directory)
    if root is None or root == directory.resolve():
        note = "" if root else (
            f"not in a git repository: GitHub runs {WORKFLOW} once {directory} is the repository's root. For a "
            "subdirectory of a repository, run `rulesgen init` inside the repository (the workflow then goes to its "
            "root's .github/workflows/, working in the subdirectory).")
        return WorkflowPlace(directory / WORKFLOW, ".", note)
    rel = directory.resolve().relative_to(root).as_posix()
    slug = rel.replace("/", "-")
    path = root / ".github" / "workflows" / f"gpu-rules-{slug}.yaml"
    return WorkflowPlace(path, rel, f"{directory} is inside the git repository {root}: the workflow goes to "
                                    f"{os.path.relpath(path)} (GitHub runs only the root's .github/workflows), "
                                    f"working in {rel}/")


def workflow_text(workdir: str) -> str:
    text = template_text(WORKFLOW)
    prefix = "" if workdir == "." else workdir.rstrip("/") + "/"
    text = text.replace("__WORKDIR__", workdir).replace("__PREFIX__", prefix)
    if workdir != ".":
        text = text.replace("name: gpu-rules\n", f"name: gpu-rules ({workdir})\n", 1)
    return text


def backup_path(target: Path) -> Path:
    """Where `init --force` keeps the file it replaces: NAME.bak, else the first free NAME.bak.N (a backup is
    never overwritten)."""
    candidate, n = target.with_name(target.name + ".bak"), 0
    while candidate.exists():
        n += 1
        candidate = target.with_name(f"{target.name}.bak.{n}")
    return candidate


def scaffold(directory: Path, force: bool = False) -> tuple[list[str], list[str], list[str]]:
    """Returns (written, skipped, notes); existing files are kept unless force, which keeps a backup of each
    file it replaces (backup_path; a note says where). Paths are as shown to the user."""
    written, skipped, notes = [], [], []
    place = workflow_place(directory)
    contents: dict[Path, str] = {directory / rel: template_text(t) for rel, t in FILES.items()}
    contents[directory / "rulesgen.yaml"] = config_template(load_catalog(bundled_catalog_dir()))
    contents[directory / lock.LOCK] = lock.text(*lock.installed())
    contents[place.path] = workflow_text(place.workdir)
    for target, text in sorted(contents.items()):
        shown = os.path.relpath(target) if target.is_absolute() else str(target)
        if target.exists() and not force:
            skipped.append(shown)
            continue
        if target.is_file() and target.read_bytes() != text.encode("utf-8"):
            backup = backup_path(target)
            shutil.copy2(target, backup)
            notes.append(f"kept the replaced {shown} as {os.path.relpath(backup) if backup.is_absolute() else backup}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(shown)
    if place.note:
        notes.insert(0, place.note)
    return written, skipped, notes
