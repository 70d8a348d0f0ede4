"""Locate the external binaries (promtool, vmalert ...): PATH first, then ./.tools/bin from `make`."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

INSTALL_HINT = ("run `make tools` (downloads Debian's prometheus and victoria-metrics packages into .tools/), "
                "or install Prometheus 2.42+ so that promtool is on PATH")


class ToolMissing(Exception):
    pass


def find_tool(name: str) -> str:
    candidates = [Path.cwd() / ".tools" / "bin" / name, Path(__file__).resolve().parent.parent / ".tools" / "bin" / name]
    env = os.environ.get(f"RULESGEN_{name.upper().replace('-', '_')}")
    if env:
        return env
    for c in candidates:
        if c.exists() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which(name)
    if found:
        return found
    raise ToolMissing(f"{name} not found: {INSTALL_HINT}")
