"""`rulesgen init DIR`: scaffold a GitOps repository (config, Makefile, CI workflow, example scenario)."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

# Target path in the new repository -> template under rulesgen/templates/init (package data).
FILES = {
    "rulesgen.yaml": "rulesgen.yaml",
    "Makefile": "Makefile",
    ".github/workflows/gpu-rules.yaml": ".github/workflows/gpu-rules.yaml",
    ".gitignore": "gitignore",
    "scenarios/example-ghost-loss-dbe.yaml": "scenarios/example-ghost-loss-dbe.yaml",
}


def template_text(name: str) -> str:
    return resources.files("rulesgen").joinpath("templates/init", name).read_text(encoding="utf-8")


def scaffold(directory: Path, force: bool = False) -> tuple[list[str], list[str]]:
    """Returns (written, skipped); existing files are kept unless force."""
    written, skipped = [], []
    for rel, template in FILES.items():
        target = directory / rel
        if target.exists() and not force:
            skipped.append(rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(template_text(template), encoding="utf-8")
        written.append(rel)
    return written, skipped
