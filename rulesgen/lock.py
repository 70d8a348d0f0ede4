"""rulesgen.lock: the one place a GitOps repository records which rulesgen renders its outputs (generated
headers carry no version). `rulesgen init` writes it, `rulesgen render` updates it, `rulesgen check` fails
when the installed rulesgen is another version, and CI installs it with `pip install -r rulesgen.lock`."""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

LOCK = "rulesgen.lock"
DISTRIBUTION = "dcgm-rulesgen"  # PyPI's `rulesgen` is another project
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s#;]+)", re.M)


@cache
def installed() -> tuple[str, str]:
    """(distribution name, version) of the running rulesgen (read once: scanning every installed
    distribution is slow, and the running one does not change)."""
    from importlib import metadata
    names = metadata.packages_distributions().get("rulesgen") or [DISTRIBUTION]
    name = DISTRIBUTION if DISTRIBUTION in names else names[0]  # a venv may still hold the package's old name
    try:
        return name, metadata.version(name)
    except metadata.PackageNotFoundError:  # a source tree without installed metadata
        return DISTRIBUTION, "0+unknown"


def text(name: str, version: str) -> str:
    return ("# The rulesgen that renders this repository's outputs: written by `rulesgen init`, updated by\n"
            "# `rulesgen render`. `rulesgen check` fails under any other version, so teammates and CI render\n"
            "# alike. Install it with: python -m pip install -r rulesgen.lock\n"
            f"{name}=={version}\n")


def pinned(root: Path) -> tuple[str, str] | None:
    """(name, version) the lock pins, or None without a lock (e.g. rulesgen's own repository)."""
    path = root / LOCK
    if not path.is_file():
        return None
    m = _PIN.search(path.read_text(encoding="utf-8"))
    return (m.group(1), m.group(2)) if m else (DISTRIBUTION, "?")


def write(root: Path) -> None:
    (root / LOCK).write_text(text(*installed()), encoding="utf-8")
