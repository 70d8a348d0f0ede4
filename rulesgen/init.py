"""`rulesgen init DIR`: scaffold a GitOps repository (config, Makefile, CI workflow, example scenario)."""
from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates" / "init"


FILES = {
    "rulesgen.yaml": lambda: _config_text(),
    "Makefile": lambda: (TEMPLATES / "Makefile").read_text(),
    ".github/workflows/gpu-rules.yaml": lambda: (TEMPLATES / ".github/workflows/gpu-rules.yaml").read_text(),
    ".gitignore": lambda: (TEMPLATES / "gitignore").read_text(),
    "scenarios/example-ghost-loss-dbe.yaml": lambda: (TEMPLATES / "scenarios/example-ghost-loss-dbe.yaml").read_text(),
}


def _config_text() -> str:
    from importlib import resources
    return resources.files("rulesgen").joinpath("templates/init/rulesgen.yaml").read_text()


def scaffold(directory: Path, force: bool = False) -> tuple[list[str], list[str]]:
    """Returns (written, skipped); existing files are kept unless force."""
    written, skipped = [], []
    for rel, content in FILES.items():
        target = directory / rel
        if target.exists() and not force:
            skipped.append(rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content())
        written.append(rel)
    return written, skipped
